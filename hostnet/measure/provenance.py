"""Where the code that makes a run comes from, for its manifest (the store runs no command)."""
from __future__ import annotations

from pathlib import Path

from ..hosts import HostError, LocalHost


def git_commit() -> str | None:
    """The commit hostnet runs from (None outside a git checkout), through the Host seam."""
    root = Path(__file__).resolve().parents[2]
    try:
        out = LocalHost("controller").run(["git", "-C", str(root), "rev-parse", "HEAD"], check=False, timeout=5)
    except HostError:
        return None
    return out.stdout.strip() or None
