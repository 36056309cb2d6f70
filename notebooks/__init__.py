"""Not code: this file makes pytest import notebooks/conftest.py as `notebooks.conftest`, so it does not
replace tests/conftest.py as the `conftest` module the tests import their helpers from."""
