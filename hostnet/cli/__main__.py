"""`python -m hostnet.cli`: the `hostnet` command."""
import sys

from . import main

sys.exit(main())
