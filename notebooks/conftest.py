"""pytest on the notebooks (nbval), wherever pytest runs from: by default only the cells marked
`# NBVAL_CHECK_OUTPUT` are compared with their stored outputs (--nbval-lax); `pytest --nbval`
compares every cell. Stored and fresh outputs are sanitized with nbval-sanitize.cfg beside this file
unless --nbval-sanitize-with names another."""
from pathlib import Path

collect_ignore = ["executed"]  # hostnet figures' executed copies


def pytest_configure(config):
    opt = config.option
    if not (opt.nbval or opt.nbval_lax):
        opt.nbval_lax = True
    if not opt.nbval_sanitize_with:
        opt.nbval_sanitize_with = str(Path(__file__).with_name("nbval-sanitize.cfg"))
