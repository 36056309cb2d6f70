"""What every command shares at the edge and its parser needs: refusing in one line (die), the
--runs-dir option and CPU sets as arguments. Light on purpose: `hostnet --help` imports it. The
live commands' share (prerequisites, --testbed, --steering, the live options) is live_edge.py's."""
from __future__ import annotations

import argparse
import sys


def die(msg: str) -> None:
    print(f"hostnet: {msg}", file=sys.stderr)
    raise SystemExit(2)


def runs_dir_option(p: argparse.ArgumentParser, what: str = "where campaigns are") -> None:
    """--runs-dir as every command reads it: as given (relative to the working directory, as a shell
    path is), else data/runs in the project root (main: --root, $HOSTNET_ROOT, or the checkout the
    working directory is in), so a command works from any directory of the checkout."""
    p.add_argument("--runs-dir", help=f"{what} (default: data/runs in the project root)")


def cpu_set(text: str) -> list[int]:
    """"1", "0,1", "0-3" -> CPU numbers."""
    out = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU set: {text!r} (e.g. 1, 0,1 or 0-3)") from None
    return sorted(set(out))
