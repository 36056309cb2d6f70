"""The journal: prior values are on disk before the first write, and restore() undoes all.

One JSON-lines file per testbed session (journal_file.py), held by one controller at a time
(journal_lock.py). Each line is written and fsynced before the knob changes, so `hostnet restore`
can undo a session that crashed or was killed; on real servers each host keeps a copy of its own
lines too, so either copy is enough. Restoring twice is harmless: every knob writes idempotently.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..hosts import Host, HostError, LocalHost, gone_namespace, host_from_description
from .base import Knob, KnobError, SettingGone, unreachable
from . import guard as mgmt_guard
from .machine import BOOT_ID, Ledger, is_global, scope
from .journal_file import (HOST_DIR, append_line, append_on_host, delete_on_host, host_copy, read_journal,
                           read_on_host)
from .journal_lock import JournalBusy, acquire, generation, release

log = logging.getLogger(__name__)


def read_entries(path: Path) -> list[dict]:
    """The readable entries of a journal (problems aside: restore_journal reports those)."""
    return read_journal(Path(path))[0]


def _ident(desc: dict) -> str:
    return json.dumps(desc, sort_keys=True)


def boot_id(host: Host) -> str | None:
    """The host's boot id (None where it cannot be read): the ledger believes no entry of another boot."""
    try:
        return host.read_text(BOOT_ID).strip() or None
    except HostError:
        return None


class Journal:
    """on_hosts: also keep each host's entries on that host (real servers: journal_file.HOST_DIR)."""

    def __init__(self, path: str | os.PathLike, *, on_hosts: bool = False):
        self.path = Path(path)
        self.on_hosts = on_hosts
        self._mgmt: dict[str, mgmt_guard.Management] = {}
        self._hosts: dict[str, Host] = {}  # hosts this object journaled on: restore reuses them

    def entries(self) -> list[dict]:
        return read_entries(self.path)

    def lock(self) -> None:
        """Become the journal's one controller (JournalBusy names the live holder otherwise)."""
        acquire(self.path)

    def prior(self, host: Host, knob: Knob, key: str) -> str | None:
        # Read from the file each time: no cache to go stale after a restore or another Journal object.
        ident = _ident(host.describe())
        for entry in self.entries():
            if _ident(entry["host"]) == ident and entry["knob"] == knob.name and entry["key"] == key:
                return entry["prior"]
        return None

    def guard(self, host: Host, knob: Knob, key: str) -> None:
        """Refuse changes that touch the management path (knobs/guard.py), before anything runs."""
        mgmt_guard.check(host, knob, key, self._mgmt, _ident(host.describe()))

    def record(self, host: Host, knob: Knob, key: str) -> str:
        """Persist the current value once, before hostnet first changes it."""
        self.guard(host, knob, key)
        self.lock()
        self._hosts.setdefault(_ident(host.describe()), host)
        known = self.prior(host, knob, key)
        if known is not None:
            return known
        if is_global(knob, key):  # the machine's value before any testbed changed it (machine.py)
            prior = Ledger(fallback=self.path.parent).baseline(
                host.describe(), knob.name, key, lambda: knob.read(host, key), boot=lambda: boot_id(host))
        else:
            prior = knob.read(host, key)
        entry = {"host": host.describe(), "knob": knob.name, "key": key, "prior": prior,
                 "scope": scope(knob, key), "on_host": self.on_hosts}
        try:
            append_line(self.path, entry)
        except OSError as exc:  # e.g. a full disk: the setting is not changed
            raise KnobError(f"cannot journal {knob.name}[{key}] in {self.path} ({exc}); not changing it") from exc
        if self.on_hosts:
            try:
                append_on_host(host, self.path, entry)
            except HostError as exc:
                raise KnobError(f"{host.name}: cannot keep its journal copy {host_copy(self.path)} ({exc}); "
                                f"not changing {knob.name}[{key}]") from exc
        return prior

    def set(self, host: Host, knob: Knob, key: str, value: str) -> None:
        """Journal, then write. A host-wide setting is also claimed in the machine ledger: refused
        (machine.SettingHeld) while another live testbed holds it at another value."""
        knob.validate(key, value)
        prior = self.record(host, knob, key)
        if not is_global(knob, key):
            knob.write(host, key, str(value))
            return
        Ledger(fallback=self.path.parent).claim(host.describe(), knob.name, key, str(value), self.path, prior,
                                       write=lambda: knob.write(host, key, str(value)),
                                       same=lambda a, b: knob.normalize(a) == knob.normalize(b))

    def restore(self, *, keep_lock: bool = False) -> list[str]:
        """keep_lock: a restore in the middle of a session (a sweep after a host came back) stays the
        journal's controller, so no second controller can take the testbed before the next point."""
        return restore_copies(self.path, self._hosts.values(), keep_lock=keep_lock)[0]


def restore_journal(path: str | os.PathLike, hosts: Iterable[Host] = ()) -> list[str]:
    """Write every prior value back, newest change first. Returns problems (empty = clean)."""
    return restore_copies(path, hosts)[0]


def restore_copies(path: str | os.PathLike, hosts: Iterable[Host] = (), *, host_copies: bool = False,
                   keep_lock: bool = False) -> tuple[list[str], list[str]]:
    """Restore from the controller's journal and, with host_copies, each host's own copy (the union:
    either is enough). Returns (problems, the copies found). Hosts are the given ones, else rebuilt
    from their description. Settings that lived in a namespace that no longer exists went away
    with it. The journal (and the hosts' copies) go only when everything was restored; so does the
    lock, unless keep_lock (this process goes on controlling the testbed).
    Raises JournalBusy when a live controller holds the journal."""
    from . import KNOBS  # lazy: the registry (knobs/__init__.py) imports this module: a circle at the top

    path = Path(path)
    held_before = generation(path) is not None
    acquire(path)
    entries, problems = read_journal(path)
    sources = [f"the controller's journal {path}"] if path.exists() else []
    known = {_ident(h.describe()): h for h in hosts}
    if host_copies:
        for host in known.values():
            try:
                got = read_on_host(host, path)
            except HostError as exc:
                problems.append(f"{host.name}: its own journal copy cannot be read: {exc}")
                continue
            if got is not None:
                sources.append(f"{host.name}'s own copy {host_copy(path)}")
                entries += got[0]
                problems += got[1]
    seen, merged = set(), []
    for entry in entries:  # the union; a key's first line holds its oldest prior
        ident = (_ident(entry["host"]), entry["knob"], entry["key"])
        if ident not in seen:
            seen.add(ident)
            merged.append(entry)
    state = _Restoring(known, path)
    for entry in reversed(merged):
        problems += _restore_entry(entry, KNOBS, state)
    problems += state.unreachable_problems()
    if not problems:
        problems += _delete_host_copies(path, merged, state.resolved)
    if not problems:
        if state.gone and path.exists():
            _archive(path, state)
        path.unlink(missing_ok=True)
        if not keep_lock:
            release(path, remove=True)
    elif not held_before and not keep_lock:
        release(path)
    return problems, sources


@dataclass
class _Restoring:
    """One restore's view of its hosts: the ones rebuilt, the ones that did not answer (tried once,
    then left: every later entry of theirs stays journaled), the namespaces found gone."""
    known: dict
    journal: Path
    resolved: dict = field(default_factory=dict)
    unreachable: dict = field(default_factory=dict)  # host ident -> [name, why, entries left]
    gone: dict = field(default_factory=dict)  # namespace -> entries that went with it

    def host(self, desc: dict) -> Host | None:
        ident = _ident(desc)
        if ident not in self.resolved:
            self.resolved[ident] = self.known.get(ident) or host_from_description(desc)
        return self.resolved[ident]

    def unreachable_problems(self) -> list[str]:
        return [f"{why}: {left} setting{'s' * (left != 1)} of {name} stay{'s' * (left == 1)} journaled in "
                f"{self.journal}; `hostnet restore` puts {'them' if left != 1 else 'it'} back once {name} answers"
                for name, why, left in self.unreachable.values()]


def _restore_entry(entry: dict, knobs: dict, state: _Restoring) -> list[str]:
    desc = entry["host"]
    if (ident := _ident(desc)) in state.unreachable:
        state.unreachable[ident][2] += 1
        return []
    knob = knobs.get(entry["knob"])
    if knob is None:
        return [f"unknown knob {entry['knob']!r} in the journal"]
    gone = gone_namespace(desc)
    if gone is not None:
        state.gone[gone] = state.gone.get(gone, 0) + 1
        if not is_global(knob, entry["key"]):
            return []  # it went away with its namespace
    prior = entry["prior"]
    try:
        if is_global(knob, entry["key"]):  # left as it is while another live testbed holds it
            prior = Ledger(fallback=state.journal.parent).release(desc, knob.name, entry["key"], state.journal, prior)
            if prior is None:
                return []
        # a host-wide setting made from a namespace that is gone is this machine's: put back from here
        host = LocalHost("root-ns") if gone is not None else state.host(desc)
        if _already(knob, host, entry["key"], prior):
            return []  # nothing to put back (a write that failed, or one undone by hand)
        knob.write(host, entry["key"], prior)
    except SettingGone:  # e.g. NAPI threads gone with threaded NAPI (restored by an earlier pass)
        return []
    except (KnobError, HostError) as exc:
        if unreachable(exc):  # tried once in this restore: the host's other entries are not
            state.unreachable[ident] = [desc.get("name"), str(exc.__cause__ or exc), 1]
            return []
        return [f"could not put {entry['knob']}[{entry['key']}] on {desc.get('name')} back to "
                f"{prior!r}: {exc}"]
    return []


def _archive(path: Path, state: _Restoring) -> None:
    """A journal whose namespaces went away is kept for the record, beside the state, under a name
    no restore looks for, with a line saying why nothing more is to be put back."""
    archived = path.with_name(f"{path.name}.gone-{time.strftime('%Y%m%dT%H%M%S')}")
    count = sum(state.gone.values())
    note = (f"{count} journaled setting{'s' * (count != 1)} lived in namespace{'s' * (len(state.gone) != 1)} "
            f"that no longer exist{'s' * (len(state.gone) == 1)} ({', '.join(sorted(state.gone))}) and went with "
            f"them (host-wide ones were put back from this machine)")
    path.rename(archived)
    archived.with_name(archived.name + ".note").write_text(note + "\n")
    log.warning("%s: %s; journal archived as %s", path, note, archived)


def _already(knob, host, key: str, prior: str) -> bool:
    """Whether the setting already holds its prior value. A setting that cannot be read is written
    (and its write reports what is wrong). Read-only settings stay restorable when a write to them
    failed: e.g. a global sysctl seen from a network namespace rehearsing a server."""
    try:
        return knob.normalize(knob.read(host, key)) == knob.normalize(prior)
    except (KnobError, HostError) as exc:
        if unreachable(exc):
            raise
        return False



def _delete_host_copies(path: Path, entries: list[dict], resolved: dict) -> list[str]:
    problems = []
    for ident in {_ident(e["host"]) for e in entries if e.get("on_host")}:
        host = resolved.get(ident)
        if host is None:  # a namespace that went away: nothing of it was restored
            continue
        try:
            delete_on_host(host, path)
        except HostError as exc:
            problems.append(f"{host.name}: could not delete its journal copy in {HOST_DIR}: {exc}")
    return problems


__all__ = ["Journal", "JournalBusy", "read_entries", "restore_copies", "restore_journal"]
