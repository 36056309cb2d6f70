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
class _Pattern:
    """Flows laid out in one of the study's patterns, each end pinned to a core."""

    duration_s: int
    warmup_s: int = 2
    pattern: str = "single"
    n: int = 1
    base_port: int = IPERF3_PORT

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


@dataclass(frozen=True)
class LongFlows(_Pattern):
    """Bulk TCP flows with iperf3."""

    congestion_control: str = "cubic"
    tool = "iperf3"
    client_comm = "iperf3"  # the process that copies received data (the server side of iperf3 too)
    server_exits = True  # iperf3 -s -1 serves one test and exits
    client_suffix = "json"

    def describe(self) -> dict:
        return {"kind": "long_flows", "tool": self.tool, **asdict(self)}

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", bind_ip, "-p", str(flow.port), "-A", str(flow.receiver_cpu)]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        # iperf3 runs warm-up (-O, omitted from its results) and then -t seconds.
        return ["iperf3", "-c", server_ip, "-p", str(flow.port), "-t", str(int(self.duration_s)),
                "-O", str(int(self.warmup_s)), "-A", str(flow.sender_cpu), "-C", self.congestion_control, "-J"]

    def parse_client(self, text: str, source: str) -> dict[str, float]:
        from .parsers.iperf3 import parse_iperf3
        r = parse_iperf3(text, source)
        out = {"throughput_gbps": r.received_bps / 1e9, "retransmits_count": float(r.retransmits or 0)}
        if len(r.interval_bps) >= 2:  # steadiness over the flow's per-second rates
            mean = sum(r.interval_bps) / len(r.interval_bps)
            var = sum((x - mean) ** 2 for x in r.interval_bps) / (len(r.interval_bps) - 1)
            out["throughput_cv_pct"] = 100 * var ** 0.5 / mean if mean else 0.0
        return out


RPC_TOOLS = ("netperf", "sockperf")
SOCKPERF_MAX_BYTES = 65506  # sockperf's largest message; the paper's "64 KB" RPC becomes this


@dataclass(frozen=True)
class RpcFlows(_Pattern):
    """Ping-pong RPCs (short flows): netperf TCP_RR, or sockperf ping-pong where netperf is missing.

    Throughput counts request and response bytes. Neither tool omits a warm-up from its own
    numbers: they run warm-up + duration and report over the whole run (the CPU window does not).
    """

    size_bytes: int = 4096
    tool: str = "netperf"

    @property
    def client_comm(self) -> str:
        return "netserver" if self.tool == "netperf" else "sockperf"
    server_exits = False
    client_suffix = "txt"

    def __post_init__(self):
        super().__post_init__()
        if self.tool not in RPC_TOOLS:
            raise ValueError(f"RPC tool must be one of {RPC_TOOLS}, not {self.tool!r}")
        limit = SOCKPERF_MAX_BYTES if self.tool == "sockperf" else 1 << 20
        if not 1 <= self.size_bytes <= limit:
            raise ValueError(f"{self.tool} RPC size must be 1..{limit} bytes, got {self.size_bytes}")

    def describe(self) -> dict:
        return {"kind": "rpc", **asdict(self), "tool": self.tool}

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        if self.tool == "netperf":
            # -D: stay in the foreground so the PID we hold is the server's
            return ["taskset", "-c", str(flow.receiver_cpu), "netserver", "-D", "-L", bind_ip, "-p", str(flow.port)]
        return ["taskset", "-c", str(flow.receiver_cpu), "sockperf", "server", "--tcp", "-i", bind_ip,
                "-p", str(flow.port)]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        from .parsers.rpc import NETPERF_FIELDS
        secs = str(int(self.total_s()))
        if self.tool == "netperf":
            return ["netperf", "-H", server_ip, "-p", str(flow.port), "-t", "TCP_RR", "-l", secs,
                    "-T", f"{flow.sender_cpu},{flow.receiver_cpu}", "-P", "0", "--",
                    "-r", f"{self.size_bytes},{self.size_bytes}", "-o", ",".join(NETPERF_FIELDS)]
        return ["taskset", "-c", str(flow.sender_cpu), "sockperf", "ping-pong", "--tcp", "-i", server_ip,
                "-p", str(flow.port), "-m", str(self.size_bytes), "-t", secs, "--full-rtt"]

    def parse_client(self, text: str, source: str) -> dict[str, float]:
        from .parsers.rpc import parse_netperf, parse_sockperf
        r = parse_netperf(text, source) if self.tool == "netperf" else parse_sockperf(text, self.size_bytes, source)
        out = {"transactions_per_s": r.transactions_per_s,
               "throughput_gbps": r.transactions_per_s * (r.request_bytes + r.response_bytes) * 8 / 1e9,
               "latency_mean_usec": r.mean_usec}
        for q, v in (("p50", r.p50_usec), ("p90", r.p90_usec), ("p99", r.p99_usec)):
            if v is not None:
                out[f"latency_{q}_usec"] = v
        return out


def LongFlow(duration_s: int, warmup_s: int = 2, congestion_control: str = "cubic") -> LongFlows:
    """One flow, the single-flow experiment's workload."""
    return LongFlows(duration_s, warmup_s, congestion_control=congestion_control)


def cores_note(flows: list[Flow]) -> str:
    """Say when flows share cores (a 2-core testbed cannot give each flow its own)."""
    snd = {(f.sender, f.sender_cpu) for f in flows}
    rcv = {(f.receiver, f.receiver_cpu) for f in flows}
    return f"{len(flows)} flows on {len(snd)} sender and {len(rcv)} receiver (host, core) slots"
