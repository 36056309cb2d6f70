"""The journal: prior values are on disk before the first write, and restore() undoes all.

One JSON-lines file per testbed session. Each line is written and fsynced before the
knob changes, so `hostnet restore` can undo a session that crashed or was killed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..hosts import Host, HostError, host_from_description, netns_exists
from .base import Knob, KnobError
from . import guard as mgmt_guard


def read_entries(path: Path) -> list[dict]:
    """Journal lines; a torn last line (the process died while writing it, before the knob
    was changed, since each line is fsynced first) is ignored."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text().split("\n") if line.strip()]
    entries = []
    for i, line in enumerate(lines):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            if i != len(lines) - 1:
                raise
    return entries


class Journal:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._seen: dict[tuple, str] = {}
        self._mgmt: dict[str, mgmt_guard.Management] = {}
        for entry in self.entries():
            self._seen[(json.dumps(entry["host"], sort_keys=True), entry["knob"], entry["key"])] = entry["prior"]

    def entries(self) -> list[dict]:
        return read_entries(self.path)

    def prior(self, host: Host, knob: Knob, key: str) -> str | None:
        return self._seen.get((json.dumps(host.describe(), sort_keys=True), knob.name, key))

    def guard(self, host: Host, knob: Knob, key: str) -> None:
        """Refuse changes that touch the management path (knobs/guard.py), before anything runs."""
        mgmt_guard.check(host, knob, key, self._mgmt, json.dumps(host.describe(), sort_keys=True))

    def record(self, host: Host, knob: Knob, key: str) -> str:
        """Persist the current value once, before hostnet first changes it."""
        self.guard(host, knob, key)
        ident = (json.dumps(host.describe(), sort_keys=True), knob.name, key)
        if ident not in self._seen:
            prior = knob.read(host, key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as fh:
                fh.write(json.dumps({"host": host.describe(), "knob": knob.name, "key": key,
                                     "prior": prior, "scope": getattr(knob, "scope", "")}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            self._seen[ident] = prior
        return self._seen[ident]

    def set(self, host: Host, knob: Knob, key: str, value: str) -> None:
        knob.validate(key, value)
        self.record(host, knob, key)
        knob.write(host, key, str(value))

    def restore(self) -> list[str]:
        return restore_journal(self.path)


def restore_journal(path: str | os.PathLike) -> list[str]:
    """Write every prior value back, newest change first. Returns problems (empty = clean).

    Settings that lived in a namespace that no longer exists went away with it and
    need no restoring. The journal file is removed only when everything was restored.
    """
    from . import KNOBS  # the registry imports this module

    path = Path(path)
    if not path.exists():
        return []
    problems = []
    entries = read_entries(path)
    for entry in reversed(entries):
        desc = entry["host"]
        if desc.get("kind") == "NetnsHost" and not netns_exists(desc["netns"]):
            continue
        knob = KNOBS.get(entry["knob"])
        if knob is None:
            problems.append(f"unknown knob {entry['knob']} in {path}")
            continue
        try:
            knob.write(host_from_description(desc), entry["key"], entry["prior"])
        except (KnobError, HostError) as exc:
            problems.append(f"could not put {entry['knob']}[{entry['key']}] on {desc.get('name')} back to "
                            f"{entry['prior']!r}: {exc}")
    if not problems:
        path.unlink()
    return problems
