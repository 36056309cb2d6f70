"""Threaded NAPI and where its kernel threads run: the embedded testbed's stand-in for a NIC's
interrupt and its IRQ affinity (receive steering "napi-thread", testbed/steering.py).

A veth device has NAPI only in NAPI mode (GRO on, or a native XDP program attached); writing
`threaded` then gives each of its NAPI instances a kernel thread named napi/<dev>-<id>, which
these knobs pin like an IRQ. Without NAPI the kernel refuses the write with an I/O error (and
keeps the flag: NapiThreaded clears it with GRO on for the moment of the write).
"""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from .base import Knob, KnobError, SettingGone
from .ethtool import FEATURES, parse_features
from .irq_xps import parse_cpu_list

_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
COMM_LEN = 15  # TASK_COMM_LEN - 1: longer kthread names are cut to this
NONE = "none"  # no NAPI thread exists: nothing to pin


def _iface(key: str) -> str:
    if not _IFACE.fullmatch(key):
        raise KnobError(f"not an interface name: {key!r}")
    return key


def is_napi_thread_of(comm: str, iface: str) -> bool:
    """Is `comm` the NAPI thread of iface? Names are napi/<dev>-<napi id>, cut to 15 characters,
    so a cut name matches every interface it is a prefix of (keep interface names short)."""
    full = f"napi/{iface}-"
    if comm.startswith(full):
        return comm[len(full):].isdigit() or len(comm) == COMM_LEN
    return len(comm) == COMM_LEN and full.startswith(comm)


def parse_ps(text: str) -> list[tuple[int, str]]:
    """`ps -eo pid=,comm=` -> [(pid, comm)]."""
    out = []
    for line in text.splitlines():
        pid, _, comm = line.strip().partition(" ")
        if pid.isdigit():
            out.append((int(pid), comm.strip()))
    return out


def napi_threads(host: Host, iface: str) -> list[int]:
    """PIDs of iface's NAPI threads on host."""
    return sorted(pid for pid, comm in parse_ps(host.run(["ps", "-eo", "pid=,comm="]).stdout)
                  if is_napi_thread_of(comm, iface))


def parse_allowed(status_text: str) -> str:
    """/proc/PID/status -> its Cpus_allowed_list ('0-1')."""
    for line in status_text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise KnobError("no Cpus_allowed_list in /proc/PID/status")


class NapiThreaded(Knob):
    """/sys/class/net/IFACE/threaded: "1" runs the device's NAPI in kernel threads."""

    name = "napi_threaded"
    scope = "device"

    def path(self, key: str) -> str:
        return f"/sys/class/net/{_iface(key)}/threaded"

    def read(self, host: Host, key: str) -> str:
        return host.read_text(self.path(key)).strip()

    def validate(self, key: str, value: str) -> None:
        _iface(key)
        if str(value) not in ("0", "1"):
            raise KnobError(f"napi_threaded: value must be 0 or 1, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        try:
            host.write_text(self.path(key), f"{value}\n")
        except HostError as exc:
            if str(value) == "0" and self._clear_without_napi(host, key):
                return
            raise KnobError(f"{host.name}: {key} refused threaded NAPI ({exc}); a veth device has NAPI only "
                            f"with GRO on or an XDP program attached") from exc

    def _clear_without_napi(self, host: Host, key: str) -> bool:
        """Put `threaded` back to 0 on a device that lost its NAPI (GRO restored to off before it, e.g.
        after a kill between two points): the kernel refuses the write then, yet keeps the flag and
        threads the NAPI again once GRO is back on. GRO is turned on for the write and off again.
        Returns False (and changes nothing) when GRO was on: the refusal has another cause."""
        gro = parse_features(host.run(["ethtool", "-k", key]).stdout).get(FEATURES["gro"])
        if gro is None or gro[0] or gro[1]:
            return False
        host.run(["ethtool", "-K", key, "gro", "on"])
        try:
            host.write_text(self.path(key), "0\n")
        finally:
            host.run(["ethtool", "-K", key, "gro", "off"])
        return True


class NapiAffinity(Knob):
    """CPUs the device's NAPI threads may run on (a CPU list), or "none" when it has none.

    Writing "none" changes nothing: the threads go away when `threaded` is put back to 0, which
    the journal restores after this (newest change first)."""

    name = "napi_affinity"
    scope = "device"

    def read(self, host: Host, key: str) -> str:
        pids = napi_threads(host, _iface(key))
        if not pids:
            return NONE
        lists = {",".join(map(str, parse_cpu_list(parse_allowed(host.read_text(f"/proc/{pid}/status")))))
                 for pid in pids}
        if len(lists) > 1:
            raise KnobError(f"{host.name}: the NAPI threads of {key} have different affinities: {sorted(lists)}")
        return lists.pop()

    def normalize(self, value: str) -> str:
        value = str(value).strip()
        return value if value == NONE else ",".join(map(str, parse_cpu_list(value)))

    def validate(self, key: str, value: str) -> None:
        _iface(key)
        self.normalize(value)

    def write(self, host: Host, key: str, value: str) -> None:
        if str(value).strip() == NONE:
            return
        super().write(host, key, value)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        pids = napi_threads(host, key)
        if not pids:
            raise SettingGone(f"{host.name}: {key} has no NAPI thread to pin (is threaded NAPI on?)")
        for pid in pids:
            host.run(["taskset", "-pc", self.normalize(value), str(pid)])
