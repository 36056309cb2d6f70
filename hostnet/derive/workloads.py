"""Workloads -> tool invocations (argv lists), and how their outputs read. Pure: nothing here runs
a command, so a stored run's rows can be derived again offline (derive/tidy.py). Each kind lays
its flows out in one of the paper's patterns (patterns.py).
"""
from __future__ import annotations

import signal
from dataclasses import asdict, dataclass, fields

from .. import native
from ..analysis.metrics import steadiness_cv
from ..parsers.iperf2 import parse_iperf2_udp
from ..parsers.iperf3 import parse_iperf3
from ..parsers.native import parse_zcflow
from ..parsers.rpc import NETPERF_FIELDS, parse_netperf, parse_sockperf
from . import udp_loss
from .patterns import IPERF3_PORT, Flow, Pattern, PointHooks, slots


MAX_RATE_MBPS = 400_000  # 400 Gbit/s, the time budget's fastest link


@dataclass(frozen=True)
class LongFlows(Pattern):
    """Bulk TCP flows with iperf3."""

    congestion_control: str = "cubic"
    # each flow paced at this many Mbit/s (iperf3 -b), 0 = as fast as it goes. A paced flow leaves a
    # testbed's CPUs to its harness: the NIC rehearsal's TCG guests answer a command in ~0.7 s under
    # 20 Mbit/s and in ~2.7 s under a saturating flow, where perf did not start in 90 s
    rate_mbps: int = 0
    tool = "iperf3"
    steadiness = True  # its client reports per-second rates (parse_client's window)
    client_comm = "iperf3"  # the process that copies received data (the server side of iperf3 too)
    server_exits = True  # iperf3 -s -1 serves one test and exits
    client_suffix = "json"

    def __post_init__(self):
        super().__post_init__()
        if not float(self.rate_mbps).is_integer() or not 0 <= self.rate_mbps <= MAX_RATE_MBPS:
            raise ValueError(f"a flow's rate must be a whole number of Mbit/s from 0 (unpaced) to {MAX_RATE_MBPS}, "
                             f"got {self.rate_mbps}")

    def describe(self) -> dict:
        d = {"kind": "long_flows", "tool": self.tool, **asdict(self)}
        if not self.rate_mbps:  # unpaced, as every run before pacing existed describes itself
            del d["rate_mbps"]
        return d

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", bind_ip, "-p", str(flow.port), "-A", str(flow.receiver_cpu)]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        # iperf3 runs warm-up (-O, omitted from its results) and then -t seconds.
        return ["iperf3", "-c", server_ip, "-p", str(flow.port), "-t", str(int(self.duration_s)),
                "-O", str(int(self.warmup_s)), "-A", str(flow.sender_cpu), "-C", self.congestion_control, "-J",
                *(["-b", f"{int(self.rate_mbps)}M"] if self.rate_mbps else [])]

    def parse_client(self, text: str, source: str, window: tuple[float, float] | None = None) -> dict[str, float]:
        """window: the measurement window in seconds from the end of this flow's warm-up (iperf3's
        interval clock), for the steadiness (metrics.steadiness_cv); None: every whole second."""
        r = parse_iperf3(text, source)
        out = {"throughput_gbps": r.received_bps / 1e9, "retransmits_count": float(r.retransmits or 0)}
        cv = steadiness_cv(r.intervals, window)
        if cv is not None:
            out["throughput_cv_pct"] = cv
        return out


SEND_MODES = ("copy", "sendfile", "zerocopy")  # send(), sendfile() from a memfd, send(MSG_ZEROCOPY)
RECV_MODES = ("copy", "mmap")                  # recv(), TCP_ZEROCOPY_RECEIVE
ZCFLOW_PORT = 5301


@dataclass(frozen=True)
class ZeroCopyFlows(Pattern):
    """Bulk TCP flows with hostnet's zcflow (native/zcflow.c), the send and the receive mechanism
    chosen; copy/copy is the baseline, moved by the same loop. Each end counts bytes and its own
    thread's CPU inside its window; the receiver also what it mapped, the sender how many
    MSG_ZEROCOPY sends the kernel completed as copied."""

    send_mode: str = "copy"
    recv_mode: str = "copy"
    # TCP_MAXSEG on both sockets, 0 = the kernel's: 4108 (4096 + 12 for timestamps) gives whole-page
    # segments at any MTU from 4148, where 61492 (the embedded testbed's) is more than a NIC takes
    mss: int = 0
    base_port: int = ZCFLOW_PORT
    # ((endpoint role, path), ...): the zcflow built on each endpoint's host (native.ensure)
    binaries: tuple = ()
    tool = "zcflow"
    server_exits = True  # it serves one connection and exits at its end
    client_suffix = "txt"

    def __post_init__(self):
        super().__post_init__()
        if self.send_mode not in SEND_MODES:
            raise ValueError(f"send mode must be one of {', '.join(SEND_MODES)}, not {self.send_mode!r}")
        if self.recv_mode not in RECV_MODES:
            raise ValueError(f"receive mode must be one of {', '.join(RECV_MODES)}, not {self.recv_mode!r}")
        object.__setattr__(self, "binaries", tuple(tuple(b) for b in self.binaries))  # from a manifest's lists

    @property
    def client_comm(self) -> str:
        """Both ends' process name: the binary's (hashed) name as the kernel keeps it, 15 characters."""
        names = {path.rsplit("/", 1)[-1] for _, path in self.binaries} or {native.binary_name(self.tool)}
        return sorted(names)[0][:15]

    def describe(self) -> dict:
        return {"kind": "zero_copy", "tool": self.tool, **asdict(self)}

    def binary(self, role: str) -> str:
        paths = dict(self.binaries)
        if role not in paths:
            raise ValueError(f"no zcflow built for endpoint {role!r} (the runner builds it on every endpoint)")
        return paths[role]

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        return [self.binary(flow.receiver), "-s", "-B", bind_ip, "-p", str(flow.port), "-m", self.recv_mode,
                "-t", str(int(self.duration_s)), "-O", str(int(self.warmup_s)), "-C", str(flow.receiver_cpu),
                *self._mss()]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        return [self.binary(flow.sender), "-c", server_ip, "-p", str(flow.port), "-m", self.send_mode,
                "-t", str(int(self.duration_s)), "-O", str(int(self.warmup_s)), "-C", str(flow.sender_cpu),
                *self._mss()]

    def _mss(self) -> list[str]:
        return ["-M", str(self.mss)] if self.mss else []

    def parse_client(self, text: str, source: str) -> dict[str, float]:
        """The sender's window: throughput, its thread's CPU and (MSG_ZEROCOPY) its completions.
        Counts, not shares, so a point's flows sum (tidy.flow_rows)."""
        r = parse_zcflow(text, source)
        out = {"throughput_gbps": r.gbps, "sender_app_bytes_count": float(r.bytes),
               "sender_app_cpu_s": (r.user_ns + r.sys_ns) / 1e9}
        if r.zc_completed is not None:
            out.update(zerocopy_sends_count=float(r.zc_sends), zerocopy_completed_count=float(r.zc_completed),
                       zerocopy_copied_count=float(r.zc_copied))
        return out

    def parse_server(self, text: str, source: str) -> dict[str, float]:
        """The receiver's window: bytes, its thread's CPU and (mmap) the bytes mapped, not copied."""
        r = parse_zcflow(text, source)
        out = {"receiver_app_bytes_count": float(r.bytes), "receiver_app_cpu_s": (r.user_ns + r.sys_ns) / 1e9}
        if r.mapped is not None:
            out["receiver_mapped_bytes_count"] = float(r.mapped)
        return out


RPC_TOOLS = ("netperf", "sockperf")
SOCKPERF_MAX_BYTES = 65506  # sockperf's largest message; the paper's "64 KB" RPC becomes this


@dataclass(frozen=True)
class RpcFlows(Pattern):
    """Ping-pong RPCs (short flows): netperf TCP_RR, or sockperf ping-pong where netperf is missing.

    Throughput counts request and response bytes. Neither tool omits a warm-up from its own
    numbers: they run warm-up + duration and report over the whole run (the CPU window does not).
    """

    size_bytes: int = 4096
    tool: str = "netperf"
    ip_versions = (4,)

    @property
    def client_comm(self) -> str:
        return "netserver" if self.tool == "netperf" else "sockperf"
    @property
    def client_comms(self) -> list[str]:
        """Both ends' processes: netperf's client is its own command, sockperf's is the same."""
        return [self.client_comm, "netperf"] if self.tool == "netperf" else [self.client_comm]

    server_exits = False
    server_stop_signal = signal.SIGTERM  # netserver ignores SIGINT (each stop would wait out its grace)
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
        secs = str(int(self.total_s()))
        if self.tool == "netperf":
            return ["netperf", "-H", server_ip, "-p", str(flow.port), "-t", "TCP_RR", "-l", secs,
                    "-T", f"{flow.sender_cpu},{flow.receiver_cpu}", "-P", "0", "--",
                    "-r", f"{self.size_bytes},{self.size_bytes}", "-o", ",".join(NETPERF_FIELDS)]
        return ["taskset", "-c", str(flow.sender_cpu), "sockperf", "ping-pong", "--tcp", "-i", server_ip,
                "-p", str(flow.port), "-m", str(self.size_bytes), "-t", secs, "--full-rtt"]

    def parse_client(self, text: str, source: str) -> dict[str, float]:
        r = parse_netperf(text, source) if self.tool == "netperf" else parse_sockperf(text, self.size_bytes, source)
        out = {"transactions_per_s": r.transactions_per_s,
               "throughput_gbps": r.transactions_per_s * (r.request_bytes + r.response_bytes) * 8 / 1e9,
               "latency_mean_usec": r.mean_usec}
        for q, v in (("p50", r.p50_usec), ("p90", r.p90_usec), ("p99", r.p99_usec)):
            if v is not None:
                out[f"latency_{q}_usec"] = v
        return out


UDP_PLACEMENTS = ("same", "different")
IPERF2_PORT = 15002
UDP_PAYLOAD_BYTES = 1470  # iperf2's default for IPv4: one datagram per 1500-byte frame


@dataclass(frozen=True)
class UdpRate(Pattern):
    """One UDP flow at a set offered rate (iperf2 -u -b), the receiving application pinned
    to the receive-processing CPU ("same") or to another CPU ("different"); Marian et al. 2010.

    The receive-processing CPU is the receiver endpoint's first CPU (RPS steers there). The
    "different" CPU is the receiver endpoint's second CPU; an endpoint with one CPU lends it
    from the sender's CPU set, which on one machine with 2 cores is the sender's own core.
    """

    rate_gbps: float = 1.0
    socket_buffer_kb: int = 1024
    app_cpu: str = "same"
    payload_bytes: int = UDP_PAYLOAD_BYTES
    base_port: int = IPERF2_PORT
    tool = "iperf"
    ip_versions = (4,)
    client_comm = "iperf"
    server_exits = True   # the server's -t ends it shortly after the client's run
    client_suffix = "txt"
    listen_proto = "udp"
    SERVER_SLACK_S = 2

    def __post_init__(self):
        super().__post_init__()
        if self.pattern != "single":
            raise ValueError("the UDP rate workload is one flow (pattern single)")
        if not 0 < self.rate_gbps <= 400:
            raise ValueError(f"offered rate must be 0..400 Gbit/s, got {self.rate_gbps}")
        if not 1 <= self.socket_buffer_kb <= 1 << 20:
            raise ValueError(f"socket buffer must be 1 KB..1 GB, got {self.socket_buffer_kb} KB")
        if self.app_cpu not in UDP_PLACEMENTS:
            raise ValueError(f"app_cpu must be one of {UDP_PLACEMENTS}, not {self.app_cpu!r}")
        if not 1 <= self.payload_bytes <= 65507:
            raise ValueError(f"UDP payload must be 1..65507 bytes, got {self.payload_bytes}")

    def describe(self) -> dict:
        return {"kind": "udp_rate", "tool": self.tool, **asdict(self)}

    def placement(self, senders: list[tuple[str, list[int]]], receivers: list[tuple[str, list[int]]]) -> dict:
        """Which CPU processes received packets and which runs the receiving application."""
        rx_cpu = receivers[0][1][0]
        if self.app_cpu == "same":
            app, source = rx_cpu, "receiver"
        elif len(receivers[0][1]) > 1:
            app, source = receivers[0][1][1], "receiver"
        else:
            app, source = senders[0][1][0], "sender"
            if app == rx_cpu:
                raise ValueError(f"no CPU other than {rx_cpu} for the receiving application: give the "
                                 "receiver endpoint two CPUs (testbed.yaml cpus) for app_cpu 'different'")
        return {"rx_cpu": rx_cpu, "app_cpu": app, "app_cpu_from": source, "sender_cpu": senders[0][1][0]}

    def window_rows(self, manifest: dict, raw: dict, ep_raw: dict) -> list[dict]:
        """Offered and delivered rates, and loss by location, from the window's counters."""
        return udp_loss.window_rows(manifest, raw, ep_raw)

    def flows(self, senders, receivers) -> list[Flow]:
        p = self.placement(senders, receivers)
        return [Flow(0, senders[0][0], p["sender_cpu"], receivers[0][0], p["app_cpu"], self.base_port)]

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        # -w sets SO_RCVBUF (capped by net.core.rmem_max; Linux grants twice the request);
        # -t ends the server after the run, so its report is complete when we collect it
        return ["taskset", "-c", str(flow.receiver_cpu), "iperf", "-s", "-u", "-B", bind_ip, "-p", str(flow.port),
                "-w", f"{self.socket_buffer_kb}K", "-t", str(int(self.total_s()) + self.SERVER_SLACK_S)]

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        # lowercase m: 10^6 bit/s; iperf2 has no warm-up option, so it sends for warm-up + duration
        return ["taskset", "-c", str(flow.sender_cpu), "iperf", "-c", server_ip, "-u", "-p", str(flow.port),
                "-b", f"{round(self.rate_gbps * 1000)}m", "-l", str(self.payload_bytes),
                "-t", str(int(self.total_s()))]

    def parse_client(self, text: str, source: str) -> dict[str, float]:
        """iperf's own whole-run numbers (warm-up included); the window's come from counters."""
        r = parse_iperf2_udp(text, source)
        out = {"iperf_sent_gbps": r.local.bps / 1e9 if r.local else float("nan")}
        if r.datagrams_sent is not None:
            out["iperf_sent_datagrams_count"] = float(r.datagrams_sent)
        # without the server's report (it can be lost at overload) there is no received rate
        out["throughput_gbps"] = r.server.bps / 1e9 if r.server else float("nan")
        if r.server and r.server.loss_pct is not None:
            out["iperf_loss_pct"] = r.server.loss_pct
        return out


def LongFlow(duration_s: int, warmup_s: int = 2, congestion_control: str = "cubic") -> LongFlows:
    """One flow, the single-flow experiment's workload."""
    return LongFlows(duration_s, warmup_s, congestion_control=congestion_control)


@dataclass(frozen=True)
class MixedFlows(PointHooks):
    """One long flow (iperf3) plus k ping-pong RPC flows (§3.7), every flow on the same sender and
    receiver cores, so short flows compete with the long one for one core per side.

    Flow 0 is the long flow when there is one; the RPC flows follow. long_flow=False with k
    short flows is the short flows' own baseline on that core.
    """

    duration_s: int
    warmup_s: int = 2
    short_flows: int = 0
    long_flow: bool = True
    size_bytes: int = 4096
    rpc_tool: str = "netperf"
    congestion_control: str = "cubic"
    base_port: int = IPERF3_PORT

    def __post_init__(self):
        if not 0 <= self.short_flows <= 63:
            raise ValueError(f"short flows must be 0..63, got {self.short_flows}")
        if not self.long_flow and not self.short_flows:
            raise ValueError("a mixed point needs the long flow or at least one short flow")
        self._long()  # the parts validate durations, tool and RPC size
        self._short()

    def _long(self) -> LongFlows:
        return LongFlows(self.duration_s, self.warmup_s, base_port=self.base_port,
                         congestion_control=self.congestion_control)

    def _short(self) -> RpcFlows:
        return RpcFlows(self.duration_s, self.warmup_s, base_port=self.base_port, size_bytes=self.size_bytes,
                        tool=self.rpc_tool)

    @property
    def n(self) -> int:
        return int(self.long_flow) + self.short_flows

    @property
    def tool(self) -> str:
        return "+".join(self.tools)

    @property
    def tools(self) -> tuple[str, ...]:
        return (("iperf3",) if self.long_flow else ()) + ((self.rpc_tool,) if self.short_flows else ())

    @property
    def client_comm(self) -> str:
        """The receive-side process the latency probe follows: the long flow's where there is one."""
        return (self._long() if self.long_flow else self._short()).client_comm

    @property
    def client_comms(self) -> list[str]:
        return [self._long().client_comm, *self._short().client_comms]

    def flow_class(self, flow: Flow) -> str:
        return "long" if self.long_flow and flow.index == 0 else "short"

    def part(self, flow: Flow) -> LongFlows | RpcFlows:
        """The workload that runs this flow (its tool, argv, output parser)."""
        return self._long() if self.flow_class(flow) == "long" else self._short()

    def describe(self) -> dict:
        return {"kind": "mixed", **asdict(self), "tool": self.tool}

    def flows(self, senders: list[tuple[str, list[int]]], receivers: list[tuple[str, list[int]]]) -> list[Flow]:
        (snd, snd_cpu), (rcv, rcv_cpu) = slots(senders, 1)[0], slots(receivers, 1)[0]
        return [Flow(i, snd, snd_cpu, rcv, rcv_cpu, self.base_port + i) for i in range(self.n)]

    def server_argv(self, flow: Flow, bind_ip: str) -> list[str]:
        return self.part(flow).server_argv(flow, bind_ip)

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        return self.part(flow).client_argv(flow, server_ip)

    def total_s(self) -> float:
        return self.duration_s + self.warmup_s


def flow_part(workload, flow: Flow):
    """The single-tool workload that runs one flow: the workload itself, or a mixed one's part."""
    return workload.part(flow) if isinstance(workload, MixedFlows) else workload


def flow_class(workload, flow: Flow) -> str:
    """'long' or 'short' for a mixed workload's flows (tags per-flow rows); '' otherwise."""
    return workload.flow_class(flow) if isinstance(workload, MixedFlows) else ""


def from_description(d: dict):
    """The workload a manifest's `workload` entry describes (its describe() output)."""
    kinds = {"long_flows": LongFlows, "rpc": RpcFlows, "udp_rate": UdpRate, "mixed": MixedFlows,
             "zero_copy": ZeroCopyFlows}
    if d.get("kind") not in kinds:
        raise ValueError(f"unknown workload kind {d.get('kind')!r} in a manifest")
    cls = kinds[d["kind"]]
    return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d and f.init})


def workload_comms(workload) -> list[str]:
    """The processes whose CPU samples are the experiment's own."""
    return list(getattr(workload, "client_comms", [workload.client_comm]))
