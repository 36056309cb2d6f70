"""Testbeds: named roles (sender, sender1.., receiver, receiver1..) mapped to a host, an interface, a
data IP and CPUs, and the machines probes run on. Built by namespaces.py (the embedded testbed)
or servers.py (a testbed.yaml of real servers)."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from ..hosts import Host
from ..hosts.base import state_dir  # noqa: F401 (testbed.state_dir, as before)
from ..knobs import Journal
from ..knobs.setting import MACHINE, SWITCH, Place




class TestbedError(RuntimeError):
    __test__ = False  # not a pytest test class despite the name


class RestoreError(TestbedError):
    """Settings that could not be put back: raised even over the exception that ended the session,
    which stays attached as its context, so no caller can drop the list."""

    def __init__(self, name: str, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"{name}: could not restore: " + "; ".join(problems))



def rehearsal_label(why: str) -> str:
    """What a label adds for a rehearsal's runs ("" for none): every table, figure and capability
    record says it the same way."""
    return f" [REHEARSAL: {why}]" if why else ""


@dataclass
class Endpoint:
    role: str
    host: Host
    iface: str
    ip: str
    cpus: list[int]
    machine: str  # which physical machine runs this role (probes run once per machine)
    # where the NIC's interrupts go when no aRFS steers them (a testbed.yaml's cpus.irq_cpus, e.g.
    # the NIC-remote node's cores, as the paper's no-aRFS setups); empty: left as the host has them
    irq_cpus: list[int] = field(default_factory=list)
    # the data interface's IPv6 address beside an IPv4 `ip` (flows with ip_version 6); None: none
    ip6: str | None = None

    def __post_init__(self):
        # as `ss` and `ip` print them: a listener on "2001:2:0:0::2" is found as "2001:2::2"
        self.ip = str(ipaddress.ip_address(self.ip))
        self.ip6 = str(ipaddress.ip_address(self.ip6)) if self.ip6 else None

    def address(self, ip_version: int | None = None) -> str:
        """The data address flows of this IP version use: `ip` when it is of that version (or no
        version is asked), else ip6 for version 6; a testbed without one is refused, naming the
        setting that gives it."""
        if ip_version is None or ipaddress.ip_address(self.ip).version == ip_version:
            return self.ip
        if ip_version == 6 and self.ip6:
            return self.ip6
        raise TestbedError(f"{self.role} ({self.host.name}) has no IPv{ip_version} data address"
                           + (" (testbed.yaml: data_ip6)" if ip_version == 6 else " (testbed.yaml: data_ip)"))

    def describe(self) -> dict:
        return {"role": self.role, "host": self.host.describe(), "iface": self.iface, "ip": self.ip,
                **({"ip6": self.ip6} if self.ip6 else {}),
                "cpus": self.cpus, "machine": self.machine, "irq_cpus": self.irq_cpus}


@dataclass
class Testbed:
    __test__ = False
    name: str
    kind: str
    endpoints: dict[str, Endpoint]
    machines: dict[str, Host]
    journal: Journal
    notes: list[str] = field(default_factory=list)
    switch: Host | None = None          # the bridge's namespace on a bridged embedded testbed
    switch_ports: list[str] = field(default_factory=list)
    rx_steering: str = "nic"  # where receive processing runs (steering.py); embedded: napi-thread, rps, none
    # why its numbers are not measurements ("" for a testbed whose are): the NIC rehearsal's guests
    rehearsal: str = ""
    # how long the last point's window took to close (its closing snapshots), which sets how early
    # the next window closes on remote hosts (runner.edge_s)
    closing_s: float | None = None

    @property
    def senders(self) -> list[Endpoint]:
        return [e for r, e in self.endpoints.items() if role_kind(r) == "sender"]

    @property
    def receivers(self) -> list[Endpoint]:
        return [e for r, e in self.endpoints.items() if role_kind(r) == "receiver"]

    @property
    def sender(self) -> Endpoint:
        return self.endpoints["sender"]

    @property
    def receiver(self) -> Endpoint:
        return self.endpoints["receiver"]

    def host_at(self, place: Place) -> Host:
        """The host a setting's place names: an endpoint's (by role), a machine's, or the switch's."""
        if place.kind == SWITCH:
            if self.switch is None:
                raise TestbedError(f"testbed {self.name} has no switch")
            return self.switch
        return self.machines[place.name] if place.kind == MACHINE else self.endpoints[place.name].host

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind,
                "endpoints": {r: e.describe() for r, e in self.endpoints.items()},
                "machines": {m: h.describe() for m, h in self.machines.items()}, "notes": self.notes,
                "rx_steering": self.rx_steering, **({"rehearsal": self.rehearsal} if self.rehearsal else {})}


def role_name(kind: str, index: int) -> str:
    """"sender", "sender1", "sender2", ... (index 0 keeps the plain name)."""
    return kind if index == 0 else f"{kind}{index}"


def role_kind(role: str) -> str:
    return role.rstrip("0123456789")


