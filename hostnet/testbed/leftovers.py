"""What dead sessions left in the state directory, of either kind, and putting it back.

An embedded testbed has a state file (namespaces.stale/restore decide), and so do the NIC
rehearsal's guests (guests.py: removed when a dead `testbed up` left them half booted); a journal
without one belongs to a testbed.yaml of real servers (or of the guests), whose name may be anything the file allows
('lab-100g'). A journal is left behind only when no live process holds it (knobs/journal_lock.py):
a running session's journal is never restored or deleted under it.
"""
from __future__ import annotations

from ..knobs import JournalBusy, restore_journal
from ..knobs.journal_lock import in_use
from . import guests, namespaces
from .base import TestbedError, state_dir


def stale() -> list[str]:
    """Names of testbeds whose session died and left processes, namespaces or settings."""
    names = set(namespaces.stale()) | set(guests.stale())
    if state_dir().exists():
        names |= {p.stem for p in state_dir().glob("*.journal") if not namespaces.has_state(p.stem)
                  and not in_use(p)}
    return sorted(names)


def restore(name: str) -> list[str]:
    """Put back what `name` left; returns problems (a journal a live session holds is one)."""
    journal = state_dir() / f"{name}.journal"
    try:
        if guests.has_state(name):
            return guests.restore(name)
        if namespaces.has_state(name) or not journal.exists() and namespaces.NAME_RE.match(name):
            return namespaces.restore(name)
        if not journal.exists():
            return [f"no testbed and no journal named {name!r} in {state_dir()}"]
        return restore_journal(journal)
    except (JournalBusy, TestbedError) as exc:
        return [str(exc)]


def is_servers(name: str) -> bool:
    """A journal of real servers (no embedded state): its processes need `restore --file`."""
    return not namespaces.has_state(name) and (state_dir() / f"{name}.journal").exists()
