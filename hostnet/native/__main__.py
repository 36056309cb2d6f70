"""`python -m hostnet.native`: build the C tools (what `make install` runs)."""
import sys

from . import NativeBuildError
from .build import build_all

try:
    for path in build_all():
        print(f"built {path}")
except NativeBuildError as exc:
    sys.exit(f"hostnet.native: {exc}")
