"""Workloads -> tool invocations (argv lists). Pure: nothing here runs a command.

Traffic patterns (the paper's Fig. 2) are lists of flows between *slots*: a slot is a
(host role, CPU) pair, taken round-robin over a side's hosts and CPUs. On two servers with many
cores the slots are cores; on a testbed with several sender namespaces they are hosts too.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

IPERF3_PORT = 5201
PATTERNS = ("single", "one-to-one", "incast", "outcast", "all-to-all")


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


@dataclass(frozen=True)
class LongFlows:
    """Bulk TCP flows with iperf3 in one of the study's patterns, each end pinned to a core."""

    duration_s: int
    warmup_s: int = 2
    congestion_control: str = "cubic"
    pattern: str = "single"
    n: int = 1
    base_port: int = IPERF3_PORT

    def __post_init__(self):
        # iperf3 takes whole seconds for -t and -O.
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

    def describe(self) -> dict:
        return {"kind": "long_flows", "tool": "iperf3", **asdict(self)}

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

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        # -1: serve one test and exit, so nothing is left listening.
        return ["iperf3", "-s", "-1", "-B", bind_ip, "-p", str(flow.port), "-A", str(flow.receiver_cpu)]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        # iperf3 runs warm-up (-O, omitted from its results) and then -t seconds.
        return ["iperf3", "-c", server_ip, "-p", str(flow.port), "-t", str(int(self.duration_s)),
                "-O", str(int(self.warmup_s)), "-A", str(flow.sender_cpu), "-C", self.congestion_control, "-J"]

    def total_s(self) -> float:
        return self.duration_s + self.warmup_s


def LongFlow(duration_s: int, warmup_s: int = 2, congestion_control: str = "cubic") -> LongFlows:
    """One flow, the single-flow experiment's workload."""
    return LongFlows(duration_s, warmup_s, congestion_control)


def cores_note(flows: list[Flow]) -> str:
    """Say when flows share cores (a 2-core testbed cannot give each flow its own)."""
    snd = {(f.sender, f.sender_cpu) for f in flows}
    rcv = {(f.receiver, f.receiver_cpu) for f in flows}
    return f"{len(flows)} flows on {len(snd)} sender and {len(rcv)} receiver (host, core) slots"
