"""A sweep's declaration: the spec (YAML, a dict from Python, or papermill parameters), checked
against its schema, and what each of its points runs (point_config, point_workload).

    workload: single-flow            # or one-to-one, incast, outcast, all-to-all, mixed, udp-loss,
                                     # time-budget: what the points' flows run, in which pattern
    configs: [tsogro]
    grid:                            # any of: rx_buffer_kb, rx_ring (a NIC's rx descriptors), flows,
                                     # rpc_size, congestion_control, rate_mbps (long flows paced),
                                     # latency_sample_every, udp_rate_gbps, socket_buffer_kb, app_cpu,
                                     # loss_rate (receive-side random drop),
                                     # short_flows and long_flow (workload: mixed),
                                     # send_mode, recv_mode, mss (zcflow: sendfile, MSG_ZEROCOPY,
                                     # TCP_ZEROCOPY_RECEIVE, TCP_MAXSEG), mtu, big_tcp_bytes (BIG TCP's
                                     # GSO/GRO packet limit), ip_version (4 or 6: the
                                     # endpoints' data address flows use), ddio (own-mask,
                                     # lowest-way or host: the receivers' DDIO ways, §3.8),
                                     # placement (nic-local, nic-remote: the one receiver's
                                     # application on a core of the NIC's NUMA node or
                                     # another's, §3.6); bench (workload:
                                     # time-budget: micro, udp-batch) with micro_scale, batch
                                     # and payload_bytes (benches.py)
      rx_buffer_kb: [100, 200, 400]
    repetitions: 3
    duration: 5
    warmup: 2
    seed: 1
    latency_sample_every: 1          # 0: no latency probe
    unprofiled_repetitions: 0        # N: per point, N more runs without perf, shuffled in with the
                                     # others: throughput and CPU from those, breakdowns from the rest
"""
from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field, replace

from .. import inputfiles, schema
from . import benches, config as stackconfig, declarations
from .declarations import WORKLOAD_PATTERNS
from ..derive.patterns import IP_VERSIONS
from ..knobs.platform import RELATIVE_MASKS
from ..testbed.record import NUMA_PLACEMENTS
from ..derive.workloads import (
    MAX_RATE_MBPS, RECV_MODES, SEND_MODES, UDP_PLACEMENTS, LongFlows, MixedFlows, RpcFlows,
    UdpRate, ZeroCopyFlows)


BENCH_KEYS = ("bench", "micro_scale", "batch", "payload_bytes")  # workload time-budget's, and only its
GRID_KEYS = ("rx_buffer_kb", "rx_ring", "flows", "rpc_size", "congestion_control", "rate_mbps", "latency_sample_every",
             "udp_rate_gbps", "socket_buffer_kb", "app_cpu", "loss_rate", "short_flows", "long_flow",
             "send_mode", "recv_mode", "mss", "mtu", "big_tcp_bytes", "ip_version", "ddio", "placement",
             *BENCH_KEYS)
ZERO_COPY_KEYS = ("send_mode", "recv_mode", "mss")
IPV6_MIN_MTU = 1280  # RFC 8200
# grid.ddio's point where DDIO is not set: the host's own state, untouched (a host whose DDIO cannot
# be set, so the IOMMU's two-boot comparison still has its Default point)
DDIO_HOST = "host"
MIXED_KEYS = ("short_flows", "long_flow")


class SweepError(ValueError):
    pass




_LABEL = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}\Z")
# Upper bounds: far above any campaign worth running, low enough that a slip of the keyboard is
# refused before a testbed is built (`--duration 1000000000000` once applied settings and started
# flows before an OverflowError).
MAX_COUNT = 1_000_000
MAX_SECONDS = 86_400  # a point's window or warm-up: a day
MAX_REPETITIONS = 1000
MAX_POINTS = 10_000  # configs x grid, before repetitions
_COUNT = {"type": "integer", "minimum": 1, "maximum": MAX_COUNT,
          "description": f"a whole number from 1 to {MAX_COUNT:,}"}
_NATURAL = {"type": "integer", "minimum": 0, "maximum": MAX_COUNT,
            "description": f"a whole number from 0 to {MAX_COUNT:,}"}
_GRID_VALUES = {
    "rx_buffer_kb": _COUNT, "rx_ring": _COUNT, "flows": _COUNT, "rpc_size": _COUNT, "socket_buffer_kb": _COUNT,
    "latency_sample_every": _NATURAL, "short_flows": _NATURAL,
    "congestion_control": {"type": "string", "pattern": "^[a-z0-9_]{1,16}\\Z",
                           "description": "a congestion control name"},
    "udp_rate_gbps": {"type": "number", "exclusiveMinimum": 0, "description": "a rate in Gbit/s above 0"},
    "rate_mbps": {"type": "integer", "minimum": 1, "maximum": MAX_RATE_MBPS,
                  "description": f"a long flow's pace, a whole number of Mbit/s from 1 to {MAX_RATE_MBPS:,}"},
    "app_cpu": {"enum": list(UDP_PLACEMENTS), "description": f"one of {', '.join(UDP_PLACEMENTS)}"},
    "loss_rate": {"type": "number", "minimum": 0, "maximum": 1, "description": "a fraction from 0 to 1"},
    "long_flow": {"enum": [0, 1], "description": "0 or 1"},
    "send_mode": {"enum": list(SEND_MODES), "description": f"one of {', '.join(SEND_MODES)}"},
    "recv_mode": {"enum": list(RECV_MODES), "description": f"one of {', '.join(RECV_MODES)}"},
    "mtu": {"type": "integer", "minimum": 68, "maximum": 65535, "description": "an MTU from 68 to 65535"},
    "mss": {"type": "integer", "minimum": 536, "maximum": 65535,
            "description": "a TCP maximum segment size from 536 to 65535 (zcflow -M)"},
    "big_tcp_bytes": {"type": "integer", "minimum": stackconfig.GSO_LEGACY_MAX, "maximum": stackconfig.BIG_TCP_MAX,
                      "description": f"a packet size limit from {stackconfig.GSO_LEGACY_MAX} to "
                                     f"{stackconfig.BIG_TCP_MAX}"},
    "ip_version": {"enum": list(IP_VERSIONS), "description": "4 or 6"},
    "placement": {"enum": list(NUMA_PLACEMENTS), "description": f"one of {', '.join(NUMA_PLACEMENTS)}"},
    "ddio": {"enum": [*RELATIVE_MASKS, DDIO_HOST],
             "description": f"one of {', '.join(RELATIVE_MASKS)} or {DDIO_HOST} (left as the host has it)"},
    "bench": {"enum": list(benches.EXPERIMENTS), "description": f"one of {', '.join(benches.EXPERIMENTS)}"},
    "micro_scale": {"type": "number", "exclusiveMinimum": 0, "maximum": 100,
                    "description": "an iteration scale above 0, at most 100"},
    "batch": {"type": "integer", "minimum": 1, "maximum": 1024, "description": "datagrams per call, 1 to 1024"},
    "payload_bytes": {"type": "integer", "minimum": 1, "maximum": 1472,
                      "description": "a UDP payload from 1 to 1472 bytes (one 1500-byte frame)"},
}
# The spec's shape (types, ranges, names), checked before anything is derived from it.
SCHEMA = {
    "type": "object", "description": "a mapping of sweep settings (workload, configs, grid, ...)",
    "additionalProperties": False,
    "properties": {
        "workload": {"enum": list(WORKLOAD_PATTERNS),
                     "description": f"a workload ({', '.join(WORKLOAD_PATTERNS)})"},
        "configs": {"type": "array", "minItems": 1, "description": "a non-empty list of config names",
                    "items": {"type": "string", "description": "a config name"}},
        "grid": {"type": "object", "description": "a mapping of grid parameter to a list of values",
                 "additionalProperties": False,
                 "properties": {k: {"type": "array", "minItems": 1, "items": v,
                                    "description": "a non-empty list of values"} for k, v in _GRID_VALUES.items()}},
        "repetitions": {**_COUNT, "maximum": MAX_REPETITIONS,
                        "description": f"a whole number from 1 to {MAX_REPETITIONS}"},
        "duration": {**_COUNT, "maximum": MAX_SECONDS,
                     "description": f"a whole number of seconds from 1 to {MAX_SECONDS:,}"},
        "warmup": {**_NATURAL, "maximum": MAX_SECONDS,
                   "description": f"a whole number of seconds from 0 to {MAX_SECONDS:,}"},
        "seed": {"type": "integer", "description": "an integer"},
        "latency_sample_every": _NATURAL,
        "unprofiled_repetitions": {**_NATURAL, "maximum": MAX_REPETITIONS,
                                   "description": f"a whole number from 0 to {MAX_REPETITIONS}"},
        "perf_freq_hz": {"type": "integer", "minimum": 1, "maximum": 100000,
                         "description": "a sampling rate in Hz (1-100000)"},
        "rpc_tool": {"enum": ["auto", "netperf", "sockperf"], "description": "auto, netperf or sockperf"},
        "label": {"type": "string", "pattern": f"^\\Z|{_LABEL.pattern}",
                  "description": "a label (lower-case letters, digits, '.', '+' and '-'; empty: none)"},
    },
}
assert set(_GRID_VALUES) == set(GRID_KEYS)


def check_spec(doc, where: str = "") -> None:
    """SweepError naming every key of doc that breaks SCHEMA (where: the file it came from)."""
    found = schema.problems(doc, SCHEMA)
    if found:
        prefix = f"{where}: " if where else ""
        raise SweepError(prefix + f"\n{prefix}".join(found))


@dataclass
class SweepSpec:
    # what the points' flows run and in which pattern; it is also the name the runs are stored
    # under (their manifests' "experiment") unless a label or a bench gives another (stored_for)
    workload: str = "single-flow"
    configs: list[str] = field(default_factory=lambda: ["all-opts"])
    grid: dict[str, list] = field(default_factory=dict)
    repetitions: int = 3
    duration: int = 5
    warmup: int = 2
    seed: int = 0
    latency_sample_every: int = 0
    perf_freq_hz: int = 999
    # per point, runs without the profiler (no perf record or perf stat), interleaved with the
    # profiled ones: where a 5 % effect matters, throughput and CPU come from these and the
    # breakdowns from the profiled runs of the same campaign (sections.common.load)
    unprofiled_repetitions: int = 0
    rpc_tool: str = "auto"
    # what the runs are stored as (their manifests' experiment) when a section runs a known
    # workload under a name of its own, e.g. numa = incast with the receiver placed per point
    label: str = ""

    def __post_init__(self):
        check_spec({k: getattr(self, k) for k in self.__dataclass_fields__})
        if self.workload != "mixed" and set(self.grid) & set(MIXED_KEYS):
            raise SweepError(f"{' and '.join(MIXED_KEYS)} belong to workload mixed")
        if (self.workload == "time-budget") != bool(set(self.grid) & set(BENCH_KEYS)) or (
                self.workload == "time-budget" and ("bench" not in self.grid or set(self.grid) - set(BENCH_KEYS))):
            raise SweepError(f"workload time-budget takes grid.bench ({', '.join(benches.EXPERIMENTS)}) and only "
                             f"{', '.join(BENCH_KEYS)}; those keys belong to it alone")
        for key, values in (("configs", self.configs), *((f"grid.{k}", v) for k, v in self.grid.items())):
            # 8 and 8.0 are one point (as topup.same_value reads them)
            seen = [f"{float(v):g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else json.dumps(v)
                    for v in values]
            if twice := sorted({v for v in seen if seen.count(v) > 1}):
                raise SweepError(f"{key} lists {', '.join(twice)} more than once: each point is run once per "
                                 f"repetition (raise repetitions for more runs)")
        if 6 in self.grid.get("ip_version", []) and any(int(m) < IPV6_MIN_MTU for m in self.grid.get("mtu", [])):
            # the kernel removes a link's IPv6 addresses below 1280, and putting the MTU back
            # does not bring them back: every later IPv6 point of the testbed would fail
            raise SweepError(f"IPv6 points need an MTU of at least {IPV6_MIN_MTU}; grid.mtu goes below it")
        size = len(self.configs) * math.prod(len(v) for v in self.grid.values())
        if size > MAX_POINTS:  # counted before a single point is built
            raise SweepError(f"{size:,} points (configs x grid); a sweep takes at most {MAX_POINTS:,}: split it")
        for point in self.points():  # every point is valid before anything runs
            point_config(point)
            point_workload(self, point, "sockperf")

    @classmethod
    def of_configs(cls, configs, *, flows: int = 1, rpc_size: int | None = None, congestion_control: str = "cubic",
                   rate_mbps: int = 0, **fields) -> "SweepSpec":
        """The configs at one flow count, RPC size and congestion control (`hostnet run`'s shape):
        only what differs from a single cubic long flow goes into the grid."""
        grid: dict[str, list] = {}
        if flows != 1:
            grid["flows"] = [flows]
        if rpc_size:
            grid["rpc_size"] = [rpc_size]
        if congestion_control != "cubic":
            grid["congestion_control"] = [congestion_control]
        if rate_mbps:
            grid["rate_mbps"] = paced(rate_mbps)
        return cls(configs=list(configs), grid=grid, **fields)

    @property
    def stored_as(self) -> str:
        return self.label or self.workload

    def stored_for(self, point: dict) -> str:
        """The experiment a point's runs are stored as: stored_as, or its bench's (time-budget)."""
        return benches.EXPERIMENTS[point["bench"]] if "bench" in point else self.stored_as

    @property
    def stored_names(self) -> set[str]:
        """Every experiment name this spec's runs are stored under."""
        return {self.stored_for(p) for p in self.points()}

    @classmethod
    def from_dict(cls, d: dict, where: str = "") -> "SweepSpec":
        d = _renamed(d, where)
        check_spec(d, where)
        try:
            return cls(**d)
        except SweepError as exc:
            raise SweepError(f"{where}: {exc}" if where else str(exc)) from exc

    @classmethod
    def from_yaml(cls, path) -> "SweepSpec":
        try:
            doc = inputfiles.load(path)
        except inputfiles.InputFileError as exc:
            raise SweepError(str(exc)) from None
        if doc is None:
            raise SweepError(f"{path}: empty; a sweep spec names at least its configs (sweeps/rx-buffer.yaml)")
        return cls.from_dict(doc, where=str(path))

    def points(self) -> list[dict]:
        keys = list(self.grid)
        points = [{"config": c, **dict(zip(keys, values, strict=True))}
                  for c in self.configs for values in itertools.product(*(self.grid[k] for k in keys))]
        if self.workload == "time-budget":  # each bench keeps its own keys: one micro point, not one per batch
            points = [{k: v for k, v in p.items() if k in ("config", "bench", *benches.KEYS[p["bench"]])}
                      for p in points]
            points = [dict(t) for t in dict.fromkeys(tuple(p.items()) for p in points)]
        # mixed: long_flow x short_flows includes "no flow at all", which is no point
        return [p for p in points if int(p.get("long_flow", 1)) or int(p.get("short_flows", 0))]


# sweep.json and sweep files written before the field was renamed (2026-12): experiment -> workload
RENAMED = {"experiment": "workload"}


def _renamed(d, where: str):
    """d with its old field names read as the new ones (a dict; anything else is left to check_spec)."""
    if not isinstance(d, dict) or not set(d) & set(RENAMED):
        return d
    both = [f"{old} and {new}" for old, new in RENAMED.items() if old in d and new in d]
    if both:
        raise SweepError(f"{where + ': ' if where else ''}{', '.join(both)} name one field (the old name and the "
                         f"new): give {', '.join(RENAMED.values())} only")
    return {RENAMED.get(k, k): v for k, v in d.items()}


def paced(rate_mbps: int) -> list[int] | None:
    """A grid's rate_mbps values for one pace (None: unpaced, left out of the grid so an unpaced
    point's id stays what it was)."""
    return [int(rate_mbps)] if rate_mbps else None


def declared(name: str, *, config: str | None = None, grid: dict | None = None, **fields) -> SweepSpec:
    """An experiment's declaration, hostnet/sweeps/<name>.yaml (package data; sweeps/ in a checkout
    links to it), with what is given over it: config (one config for configs), grid (the keys given
    replace the declaration's), any other SweepSpec field. None leaves the declaration's value: a
    section's default campaign is its YAML, and notebook parameters and CLI flags override it."""
    spec = SweepSpec.from_yaml(declarations.declaration(name))
    changes = {k: v for k, v in fields.items() if v is not None}
    if config is not None:
        changes["configs"] = [config]
    given = {k: list(v) for k, v in (grid or {}).items() if v is not None}
    if given:
        changes["grid"] = {**spec.grid, **given}
    return replace(spec, **changes) if changes else spec


def point_config(point: dict) -> stackconfig.StackConfig:
    overrides = {}
    if "rx_buffer_kb" in point:
        max_bytes = int(point["rx_buffer_kb"]) * 1024
        # the receive buffer's ceiling (autotuning stops there); the default is not above it
        overrides["tcp_rmem"] = f"4096 {min(131072, max_bytes)} {max_bytes}"
    if "rx_ring" in point:
        overrides["rx_ring"] = int(point["rx_ring"])
    if "congestion_control" in point:
        overrides["congestion_control"] = point["congestion_control"]
    if "loss_rate" in point:
        overrides["loss_rate"] = float(point["loss_rate"])
    if "mtu" in point:
        overrides["mtu"] = int(point["mtu"])
    if "big_tcp_bytes" in point:
        overrides["big_tcp_bytes"] = int(point["big_tcp_bytes"])
    if point.get("ddio", DDIO_HOST) != DDIO_HOST:
        overrides["ddio"] = point["ddio"]
    return stackconfig.get_config(point["config"], **overrides)


def point_workload(spec: SweepSpec, point: dict, tool: str, binaries: dict | None = None):
    """The point's workload; binaries: {native tool: ((endpoint role, path), ...)} of the native
    tools it runs (zcflow, microbench, udpbatch: native_binaries)."""
    binaries = binaries or {}
    if "bench" in point:
        return benches.workload(point, duration_s=spec.duration, warmup_s=spec.warmup, binaries=binaries)
    try:
        return _flow_workload(spec, point, tool, binaries)
    except ValueError as exc:  # a workload's own check (e.g. an IP version its tool is not driven with)
        raise SweepError(str(exc)) from None


def _flow_workload(spec: SweepSpec, point: dict, tool: str, binaries: dict):
    pattern = WORKLOAD_PATTERNS[spec.workload]
    n = int(point.get("flows", 1))
    ip = {"ip_version": int(point["ip_version"])} if "ip_version" in point else {}
    not_bulk = point.get("rpc_size") or "udp_rate_gbps" in point or spec.workload == "mixed"
    if "rate_mbps" in point and (not_bulk or set(point) & set(ZERO_COPY_KEYS)):
        raise SweepError("rate_mbps paces iperf3's long flows: not RPCs, UDP, mixed or zcflow's flows")
    if set(point) & set(ZERO_COPY_KEYS):
        if not_bulk:
            raise SweepError("send_mode, recv_mode and mss choose how a bulk flow moves data (zcflow): not with "
                             "RPCs, UDP or mixed flows")
        return ZeroCopyFlows(spec.duration, spec.warmup, pattern=pattern, n=n,
                             send_mode=point.get("send_mode", "copy"), recv_mode=point.get("recv_mode", "copy"),
                             mss=int(point.get("mss", 0)), binaries=binaries.get(ZeroCopyFlows.tool, ()), **ip)
    if "udp_rate_gbps" in point:
        return UdpRate(spec.duration, spec.warmup, pattern=pattern, n=n, rate_gbps=float(point["udp_rate_gbps"]),
                       socket_buffer_kb=int(point.get("socket_buffer_kb", 1024)),
                       app_cpu=point.get("app_cpu", "same"), **ip)
    if spec.workload == "mixed":
        if ip.get("ip_version", 4) != 4:
            raise SweepError("mixed flows run over IPv4 only (their RPC tools' IPv6 flags are not wired)")
        return MixedFlows(spec.duration, spec.warmup, short_flows=int(point.get("short_flows", 0)),
                          long_flow=bool(int(point.get("long_flow", 1))),
                          size_bytes=int(point.get("rpc_size", 4096)), rpc_tool=tool,
                          congestion_control=point.get("congestion_control", "cubic"))
    if point.get("rpc_size"):
        return RpcFlows(spec.duration, spec.warmup, pattern=pattern, n=n, size_bytes=int(point["rpc_size"]),
                        tool=tool, **ip)
    return LongFlows(spec.duration, spec.warmup, pattern=pattern, n=n,
                     congestion_control=point.get("congestion_control", "cubic"),
                     rate_mbps=int(point.get("rate_mbps", 0)), **ip)
