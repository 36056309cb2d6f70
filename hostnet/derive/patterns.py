"""Flows laid out in the paper's traffic patterns (Fig. 2) over *slots*: a slot is a (host role,
CPU) pair, taken round-robin over a side's hosts and CPUs. On two servers with many cores the slots
are cores; on a testbed with several sender namespaces they are hosts too. Every workload kind
(workloads.py) lays its flows out so, and adds its point hooks to PointHooks' defaults."""
from __future__ import annotations

from dataclasses import dataclass

from ..dictionary import PATTERNS


IPERF3_PORT = 5201


@dataclass(frozen=True)
class Flow:
    index: int
    sender: str        # endpoint role, e.g. "sender" or "sender1"
    sender_cpu: int    # the client application's core
    receiver: str
    receiver_cpu: int  # the server application's core (receive processing is steered there)
    port: int


def slots(roles_cpus: list[tuple[str, list[int]]], n: int) -> list[tuple[str, int]]:
    """n (role, cpu) slots, round-robin over hosts and over each host's CPUs."""
    out = []
    for i in range(n):
        role, cpus = roles_cpus[i % len(roles_cpus)]
        out.append((role, cpus[(i // len(roles_cpus)) % len(cpus)]))
    return out


IP_VERSIONS = (4, 6)


class PointHooks:
    """What a workload adds to a measurement point beyond starting its flows (the runner calls
    these for every workload; by default they add nothing). Pure, like the rest of this module: a
    UDP point's settings, which read the testbed, are measure/udp_loss.point_setup's."""

    ip_version: int | None = None  # which data address the flows use (Endpoint.address); None: data_ip

    def point_setup(self, tb) -> tuple[dict | None, list]:
        """(a CPU-placement note for the manifest or None, extra knob settings for this point)."""
        return None, []

    def window_rows(self, manifest: dict, raw: dict, ep_raw: dict) -> list[dict]:
        """Tidy rows of the workload's own, from the window's raw files."""
        return []


@dataclass(frozen=True)
class Pattern(PointHooks):
    """Flows laid out in one of the study's patterns, each end pinned to a core."""

    duration_s: int
    warmup_s: int = 2
    pattern: str = "single"
    n: int = 1
    base_port: int = IPERF3_PORT
    ip_version: int | None = None  # None: each endpoint's data_ip, whichever version it is
    # the IP versions its tool is driven with here: iperf3 and zcflow take either address as given;
    # netperf, sockperf and iperf2 want flags of their own for IPv6, not wired (refused, not guessed)
    ip_versions = IP_VERSIONS

    def __post_init__(self):
        # the tools take whole seconds
        if not float(self.duration_s).is_integer() or self.duration_s <= 0:
            raise ValueError(f"duration must be a whole number of seconds > 0, got {self.duration_s}")
        if not float(self.warmup_s).is_integer() or self.warmup_s < 0:
            raise ValueError(f"warm-up must be a whole number of seconds >= 0, got {self.warmup_s}")
        if self.pattern not in PATTERNS:
            raise ValueError(f"unknown pattern {self.pattern!r}; one of {', '.join(PATTERNS)}")
        if self.pattern == "single" and self.n != 1:
            raise ValueError("the single pattern has exactly one flow")
        if not 1 <= self.n <= 64:
            raise ValueError(f"flow count n must be 1..64, got {self.n}")
        if self.ip_version is not None and self.ip_version not in self.ip_versions:
            raise ValueError(f"{type(self).__name__} runs over IPv{' or IPv'.join(map(str, self.ip_versions))}, "
                             f"not IPv{self.ip_version}")

    def flows(self, senders: list[tuple[str, list[int]]], receivers: list[tuple[str, list[int]]]) -> list[Flow]:
        """senders/receivers: [(role, cpus)] of the testbed's endpoints."""
        n = self.n
        if self.pattern == "all-to-all":
            pairs = [(s, r) for s in slots(senders, n) for r in slots(receivers, n)]
        else:
            snd = slots(senders, 1 if self.pattern == "outcast" else n)
            rcv = slots(receivers, 1 if self.pattern == "incast" else n)
            pairs = [(snd[min(i, len(snd) - 1)], rcv[min(i, len(rcv) - 1)]) for i in range(n)]
        return [Flow(i, s[0], s[1], r[0], r[1], self.base_port + i) for i, (s, r) in enumerate(pairs)]

    def total_s(self) -> float:
        return self.duration_s + self.warmup_s


def cores_note(flows: list[Flow]) -> str:
    """Say when flows share cores (a 2-core testbed cannot give each flow its own)."""
    snd = {(f.sender, f.sender_cpu) for f in flows}
    rcv = {(f.receiver, f.receiver_cpu) for f in flows}
    return f"{len(flows)} flows on {len(snd)} sender and {len(rcv)} receiver (host, core) slots"
