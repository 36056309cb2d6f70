"""Knob: one host setting that hostnet may change, with read-back verification."""
from __future__ import annotations

import re

from ..hosts import Host, HostError, HostUnreachable


def is_count(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts '²' and other characters int() refuses."""
    return re.fullmatch(r"[0-9]+", text) is not None


class KnobError(RuntimeError):
    """A knob cannot be read, written or verified on a host."""


def unreachable(exc: BaseException) -> bool:
    """A host that did not answer, also when a knob wrapped that in its own error."""
    return isinstance(exc, HostUnreachable) or isinstance(exc.__cause__, HostUnreachable)


class SettingGone(KnobError):
    """What the setting applied to no longer exists (e.g. NAPI threads after threaded NAPI went
    off): an error for a change, nothing left to put back for a restore."""


class Knob:
    """A host setting addressed by a key (an interface, a queue, a sysctl name).

    scope: "netns" (lives and dies with a network namespace), "device" (per interface)
    or "global" (kernel-wide even on the embedded testbed; changed on the root namespace).
    """

    name = "knob"
    scope = "netns"

    def available(self, host: Host, key: str) -> tuple[bool, str]:
        try:
            self.read(host, key)
        except (KnobError, HostError) as exc:
            return False, str(exc)
        return True, ""

    def read(self, host: Host, key: str) -> str:
        raise NotImplementedError

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        """Change the setting, nothing more: write() validates first and reads back after."""
        raise NotImplementedError

    def normalize(self, value: str) -> str:
        """Canonical text of a value, so a read-back compares equal to what was written."""
        return " ".join(str(value).split())

    def validate(self, key: str, value: str) -> None:
        """Raise KnobError before anything is written when value is not acceptable."""

    def resolve(self, host: Host, key: str, value: str, prior: str | None = None) -> str:
        """The value to write for what a point asks (the same, unless the knob reads the host to
        know it: AllowedCongestionControl's "+NAME", or derives it from the value the journal
        recorded before hostnet touched it, `prior`: DdioWays' "lowest-way"), so the journal, the
        ledger and the manifest hold the value the setting will read back as."""
        return value

    def write(self, host: Host, key: str, value: str) -> None:
        """Set key to value and verify it by reading back. A setting that already reads as value is
        left alone: one read instead of a write and a read (a sweep writes the same config point
        after point), and no tool re-applies what is in place (tc would replace a qdisc)."""
        self.validate(key, value)
        try:
            if self.normalize(self.read(host, key)) == self.normalize(value):
                return
        except (KnobError, HostError) as exc:
            if unreachable(exc):
                raise
            # not readable yet (e.g. no NAPI thread until threaded NAPI is on): the write decides
        try:
            self.write_unverified(host, key, value)
        except HostError as exc:
            raise KnobError(f"{host.name}: cannot set {self.name}[{key}] to {value!r}: {exc}") from exc
        got = self.read(host, key)
        if self.normalize(got) != self.normalize(value):
            raise KnobError(f"{host.name}: {self.name}[{key}] reads back {got!r} after writing {value!r}")
