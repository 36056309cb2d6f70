"""Host-wide settings owned once per machine: a ledger of who holds each, next to the journals.

A testbed's journal is its own (one controller per journal), but a global-scope setting (a
kernel-wide sysctl, the tracefs mount, IRQ affinity) is shared by every testbed on the machine:
two embedded testbeds at once would each journal the other's value as their prior and restore
it under the other's window. The ledger (/run/hostnet/machine.ledger, one per controller machine
whatever state directory a session journals in; rewritten whole under an flock) keeps, per
machine, host setting: the machine's value before any testbed changed it (the
baseline every journal records as its prior), and its holders (each a journal path and the value
it set). A second testbed that needs the value in place joins the holders; one that needs
another value is refused, naming the holder; a restore writes the baseline back only when no
other live holder remains. A holder is live while its journal's lock is held (journal_lock); a
killed session's hold lapses, and its baseline stays until the last holder puts it back.

Scope of the guarantee: testbeds driven from this controller machine by root, from any state
directory (HOSTNET_STATE_DIR set in one shell and not in another: both see each other's holds). A
session of another user (which cannot change host-wide settings here) keeps its ledger in its
state directory. Two controllers on
different machines driving one server do not see each other's ledgers. An entry recorded under
an earlier boot of its host is not believed over the machine's value (its "boot"); /run is
emptied by a reboot anyway.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from ..hosts.base import write_private
from .base import Knob, KnobError
from .journal_lock import FILE_MODE, in_use, private_dir

LEDGER = "machine.ledger"
MACHINE_DIR = "/run/hostnet"  # tmpfs: a reboot empties it, as it resets the settings the ledger guards
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def ledger_dir(fallback: str | os.PathLike | None = None) -> Path:
    """Where this machine's ledger lives: $HOSTNET_LEDGER_DIR (the unit tests' own), else MACHINE_DIR
    for root, whose sessions are the ones that can change host-wide settings. A session of another
    user keeps its ledger in `fallback` (its state directory): /run/hostnet is root's."""
    if env := os.environ.get("HOSTNET_LEDGER_DIR"):
        return Path(env)
    return Path(MACHINE_DIR if os.geteuid() == 0 or fallback is None else fallback)


class SettingHeld(KnobError):
    """Another live testbed holds a host-wide setting at another value."""


def scope(knob: Knob, key: str) -> str:
    """A knob's scope for one key (sysctls are global or per namespace by name)."""
    of = getattr(knob, "scope_of", None)
    return of(key) if of is not None else getattr(knob, "scope", "netns")


def is_global(knob: Knob, key: str) -> bool:
    return scope(knob, key) == "global"


def machine_of(desc: dict) -> str:
    """Which machine a host description lives on: the processes and namespaces of this one share
    its kernel; an SSH host is its address, user and port (the same server reached two ways is
    two machines to the ledger)."""
    if desc.get("kind") == "SshHost":
        return f"ssh:{desc.get('user')}@{desc.get('address')}:{desc.get('port')}"
    return "local"


def _ident(machine: str, knob: str, key: str) -> str:
    return f"{machine} {knob} {key}"


class Ledger:
    """The machine's ledger (in ledger_dir(fallback), or `directory`)."""

    def __init__(self, directory: str | os.PathLike | None = None, *, fallback: str | os.PathLike | None = None):
        self.path = Path(directory if directory is not None else ledger_dir(fallback)) / LEDGER

    @contextmanager
    def _locked(self):
        """(settings, save) under the ledger's exclusive lock: held only for a read-modify-write."""
        private_dir(self.path.parent)
        lock = os.open(self.path.with_name(LEDGER + ".lock"),
                       os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            settings = self._read()
            yield settings
            self._write(settings)
        finally:
            os.close(lock)

    def _read(self) -> dict:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        with os.fdopen(fd) as fh:
            text = fh.read()
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise KnobError(f"{self.path}: not a machine ledger ({exc}); host-wide settings cannot be "
                            f"shared safely until it is repaired or removed") from exc
        return data.get("settings", {}) if isinstance(data, dict) else {}

    def _write(self, settings: dict) -> None:
        if not settings:  # nothing held: no file left behind
            self.path.unlink(missing_ok=True)
            return
        try:
            write_private(self.path, json.dumps({"settings": settings}, sort_keys=True, indent=1).encode())
        except OSError as exc:  # e.g. a full disk: the setting is not changed
            raise KnobError(f"cannot write the machine ledger {self.path} ({exc.strerror}); not changing "
                            f"host-wide settings") from exc

    def baseline(self, desc: dict, knob: str, key: str, read, boot=lambda: None) -> str:
        """The machine's value before any testbed changed it: the ledger's while a setting is held
        (or its holder's session died unrestored: its crumb is not a baseline), else read() now.
        boot(): the host's boot id (None: unknown); an entry of another boot is not believed."""
        ident = _ident(machine_of(desc), knob, key)
        now = boot()
        with self._locked() as settings:
            entry = settings.get(ident)
            earlier_boot = entry is not None and None not in (now, entry.get("boot")) and entry["boot"] != now
            if entry is None or earlier_boot or not _live(entry) and not _unrestored(entry):
                entry = settings[ident] = {"host": desc, "knob": knob, "key": key, "prior": read(), "holders": {},
                                           **({"boot": now} if now else {})}
            return entry["prior"]

    def claim(self, desc: dict, knob: str, key: str, value: str, journal: Path, prior: str, *, write, same) -> None:
        """Hold the setting at value for journal and write it, under the lock (no second testbed
        slips in between the check and the write). prior: the journal's (the baseline, when the
        ledger lost the setting since). same(a, b): whether two values are equal. SettingHeld
        names the live holder when it holds another value."""
        ident = _ident(machine_of(desc), knob, key)
        me = str(Path(journal).absolute())
        with self._locked() as settings:
            entry = settings.setdefault(ident, {"host": desc, "knob": knob, "key": key, "prior": prior, "holders": {}})
            for other, held in _live(entry).items():
                if other != me and not same(held, value):
                    raise SettingHeld(f"{knob}[{key}] on {desc.get('name')} is held at {held!r} by the testbed "
                                      f"of {other} (a host-wide setting, shared by every testbed on the machine); "
                                      f"this point needs {value!r}: run it when that testbed is done")
            entry["holders"][me] = value
            write()

    def release(self, desc: dict, knob: str, key: str, journal: Path, prior: str) -> str | None:
        """A journal's restore of a host-wide setting: the value to write back, or None when
        another live testbed still holds it (it is left as it is). The last holder gets the
        baseline and the setting leaves the ledger; one the ledger does not know (an older
        journal, a ledger removed by hand, a setting the last live holder put back) gets the
        journal's own prior, which is the baseline too."""
        ident = _ident(machine_of(desc), knob, key)
        me = str(Path(journal).absolute())
        with self._locked() as settings:
            entry = settings.get(ident)
            if entry is None:
                return prior
            entry["holders"].pop(me, None)
            if _live(entry):
                return None
            del settings[ident]
            return entry["prior"]

    def held(self) -> list[dict]:
        """Every setting in the ledger, each with its live holders only. A setting nobody holds
        any more (a session killed between its baseline and its claim) leaves the ledger: its
        value was never changed, or the journal that changed it is gone with its restore."""
        if not self.path.exists():
            return []
        with self._locked() as settings:
            for ident in [i for i, e in settings.items() if not _live(e) and not _unrestored(e)]:
                del settings[ident]
            return [{**e, "holders": _live(e)} for e in settings.values()]


def _live(entry: dict) -> dict:
    """The holders whose session goes on: a live process holds their journal's lock."""
    return {j: v for j, v in entry.get("holders", {}).items() if in_use(Path(j))}


def _unrestored(entry: dict) -> bool:
    """A holder's session died and its journal waits for `hostnet restore`."""
    return any(Path(j).exists() for j in entry.get("holders", {}))
