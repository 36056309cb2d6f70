"""Sweeps: parameters x values x repetitions, serially, shuffled (seeded, recorded), resumable.

A sweep spec (YAML, a dict from Python, or papermill parameters):

    experiment: single-flow          # or one-to-one, incast, outcast, all-to-all
    configs: [tsogro]
    grid:                            # any of: rx_buffer_kb, rx_ring (a NIC's rx descriptors), flows,
                                     # rpc_size, congestion_control, rate_mbps (long flows paced),
                                     # latency_sample_every, udp_rate_gbps, socket_buffer_kb, app_cpu,
                                     # loss_rate (receive-side random drop),
                                     # short_flows and long_flow (experiment: mixed),
                                     # send_mode, recv_mode, mss (zcflow: sendfile, MSG_ZEROCOPY,
                                     # TCP_ZEROCOPY_RECEIVE, TCP_MAXSEG), mtu, big_tcp_bytes (BIG TCP's
                                     # GSO/GRO packet limit), ip_version (4 or 6: the
                                     # endpoints' data address flows use); bench (experiment:
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

Each (point, repetition) is one run directory named <point id>-r<k> (<point id>-u<k> unprofiled),
where the point id hashes
the point's parameters, the testbed's fingerprint and hostnet's version. Re-running a sweep skips
runs that completed, re-runs failed, partial or incomplete ones (an empty or unreadable manifest;
the attempt is kept, renamed), and never duplicates a point: an interrupted sweep (Ctrl-C, kill)
resumes where it stopped. One sweep at a time per campaign: a second is refused (Campaign.lock).
A host that stops answering mid-point fails that point only; the sweep waits for it (settings
restored as soon as it answers) or stops, saying which host and where the journal is.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import random
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tqdm.auto import tqdm

from .. import __version__, inputfiles, native, schema
from . import benches, config as stackconfig, experiments, udp_loss
from .experiments import EXPERIMENT_PATTERNS
from ..testbed.capabilities import point_requirements, zerocopy_receive_problems
from ..hosts import RECONNECT_WAIT_S, HostUnreachable, SshHost
from .runner import (REQUIRED_TOOLS, PreflightError, Probing, RunFailed, RunRequest, all_local, preflight, rpc_tool,
                     start_point)
from ..store import INCOMPLETE, Campaign, run_status
from ..testbed import Testbed
from .workloads import (
    IP_VERSIONS, MAX_RATE_MBPS, RECV_MODES, SEND_MODES, UDP_PLACEMENTS, LongFlows, MixedFlows, RpcFlows,
    UdpRate, ZeroCopyFlows)

log = logging.getLogger(__name__)  # where no progress bar can draw (not a terminal): a line per run

BENCH_KEYS = ("bench", "micro_scale", "batch", "payload_bytes")  # experiment time-budget's, and only its
GRID_KEYS = ("rx_buffer_kb", "rx_ring", "flows", "rpc_size", "congestion_control", "rate_mbps", "latency_sample_every",
             "udp_rate_gbps", "socket_buffer_kb", "app_cpu", "loss_rate", "short_flows", "long_flow",
             "send_mode", "recv_mode", "mss", "mtu", "big_tcp_bytes", "ip_version", *BENCH_KEYS)
ZERO_COPY_KEYS = ("send_mode", "recv_mode", "mss")
IPV6_MIN_MTU = 1280  # RFC 8200
MIXED_KEYS = ("short_flows", "long_flow")


class SweepError(ValueError):
    pass


RECONNECT_POLL_S = 5.0


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
    "bench": {"enum": list(benches.EXPERIMENTS), "description": f"one of {', '.join(benches.EXPERIMENTS)}"},
    "micro_scale": {"type": "number", "exclusiveMinimum": 0, "maximum": 100,
                    "description": "an iteration scale above 0, at most 100"},
    "batch": {"type": "integer", "minimum": 1, "maximum": 1024, "description": "datagrams per call, 1 to 1024"},
    "payload_bytes": {"type": "integer", "minimum": 1, "maximum": 1472,
                      "description": "a UDP payload from 1 to 1472 bytes (one 1500-byte frame)"},
}
# The spec's shape (types, ranges, names), checked before anything is derived from it.
SCHEMA = {
    "type": "object", "description": "a mapping of sweep settings (experiment, configs, grid, ...)",
    "additionalProperties": False,
    "properties": {
        "experiment": {"enum": list(EXPERIMENT_PATTERNS),
                       "description": f"an experiment ({', '.join(EXPERIMENT_PATTERNS)})"},
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
    experiment: str = "single-flow"
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
    # experiment under a name of its own, e.g. numa-nic-local = incast with the receiver moved
    label: str = ""

    def __post_init__(self):
        check_spec({k: getattr(self, k) for k in self.__dataclass_fields__})
        if self.experiment != "mixed" and set(self.grid) & set(MIXED_KEYS):
            raise SweepError(f"{' and '.join(MIXED_KEYS)} belong to experiment mixed")
        if (self.experiment == "time-budget") != bool(set(self.grid) & set(BENCH_KEYS)) or (
                self.experiment == "time-budget" and ("bench" not in self.grid or set(self.grid) - set(BENCH_KEYS))):
            raise SweepError(f"experiment time-budget takes grid.bench ({', '.join(benches.EXPERIMENTS)}) and only "
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
        return self.label or self.experiment

    def stored_for(self, point: dict) -> str:
        """The experiment a point's runs are stored as: stored_as, or its bench's (time-budget)."""
        return benches.EXPERIMENTS[point["bench"]] if "bench" in point else self.stored_as

    @property
    def stored_names(self) -> set[str]:
        """Every experiment name this spec's runs are stored under."""
        return {self.stored_for(p) for p in self.points()}

    @classmethod
    def from_dict(cls, d: dict, where: str = "") -> "SweepSpec":
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
        if self.experiment == "time-budget":  # each bench keeps its own keys: one micro point, not one per batch
            points = [{k: v for k, v in p.items() if k in ("config", "bench", *benches.KEYS[p["bench"]])}
                      for p in points]
            points = [dict(t) for t in dict.fromkeys(tuple(p.items()) for p in points)]
        # mixed: long_flow x short_flows includes "no flow at all", which is no point
        return [p for p in points if int(p.get("long_flow", 1)) or int(p.get("short_flows", 0))]


def paced(rate_mbps: int) -> list[int] | None:
    """A grid's rate_mbps values for one pace (None: unpaced, left out of the grid so an unpaced
    point's id stays what it was)."""
    return [int(rate_mbps)] if rate_mbps else None


def declared(name: str, *, config: str | None = None, grid: dict | None = None, **fields) -> SweepSpec:
    """An experiment's declaration, hostnet/sweeps/<name>.yaml (package data; sweeps/ in a checkout
    links to it), with what is given over it: config (one config for configs), grid (the keys given
    replace the declaration's), any other SweepSpec field. None leaves the declaration's value: a
    section's default campaign is its YAML, and notebook parameters and CLI flags override it."""
    spec = SweepSpec.from_yaml(experiments.declaration(name))
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
    pattern = EXPERIMENT_PATTERNS[spec.experiment]
    n = int(point.get("flows", 1))
    ip = {"ip_version": int(point["ip_version"])} if "ip_version" in point else {}
    not_bulk = point.get("rpc_size") or "udp_rate_gbps" in point or spec.experiment == "mixed"
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
    if spec.experiment == "mixed":
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


def native_binaries(tb: Testbed, tool: str) -> tuple:
    """((endpoint role, path), ...): a native tool built on every endpoint's host (once per local machine)."""
    return tuple((role, native.ensure(tool, ep.host)) for role, ep in tb.endpoints.items())


def _tools(spec: SweepSpec, points: list[dict], tb: Testbed) -> tuple[str, tuple[str, ...]]:
    """(the RPC tool the points' workloads name, every tool preflight checks)."""
    if spec.experiment == "time-budget":  # every bench's, whichever points: a top-up of one keeps the fingerprint
        return "udpbatch", tuple(benches.TOOLS.values())
    mixed = spec.experiment == "mixed"
    tool = rpc_tool(tb, spec.rpc_tool) if mixed or any(p.get("rpc_size") for p in points) else "iperf3"
    if any("udp_rate_gbps" in p for p in points):
        tool = UdpRate.tool
    if any(set(p) & set(ZERO_COPY_KEYS) for p in points):
        return tool, ("zcflow",)
    return tool, ("iperf3", tool) if mixed else (tool,)


def fingerprint(tb: Testbed, versions: dict) -> dict:
    """What makes two testbeds comparable: not their names, which change from run to run."""
    return {"kind": tb.kind,
            "roles": {r: {"cpus": e.cpus, "host": e.host.describe()["kind"]} for r, e in tb.endpoints.items()},
            "kernels": sorted({v["kernel"] for v in versions.values()}),
            "rx_steering": tb.rx_steering,
            "tools": sorted({f"{tool}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                             for vs in versions.values() for tool, v in vs.items() if tool != "kernel"})}


# What a point's id hashes: the fingerprint as it was before rx_steering and tools joined it, so the
# runs of campaigns recorded earlier keep their ids (resumes and top-ups skip them). A different
# receive path or tool version is refused by incomparable() instead.
ID_KEYS = ("kind", "roles", "kernels")


def point_id(point: dict, fp: dict, experiment: str) -> str:
    blob = json.dumps({"point": point, "experiment": experiment, "hostnet": __version__,
                       "testbed": {k: v for k, v in fp.items() if k in ID_KEYS}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


class IncomparableTestbed(SweepError):
    """A campaign resumed or topped up on a testbed its runs cannot be compared with."""


def recorded_fingerprint(campaign: Campaign) -> dict | None:
    """The fingerprint a campaign's sweep.json recorded; what its runs' manifests say (receive
    path, kernels) where sweep.json predates a key or cannot be read (a sweep killed while writing
    it, before that write was atomic); None for a new campaign."""
    try:
        fp = dict(campaign.plan()["fingerprint"])
    except FileNotFoundError:
        if not campaign.path.is_dir():
            return None
        fp = {}
    except (ValueError, KeyError, TypeError):
        fp = {}  # torn or hand-edited (sweep.json is written atomically now): the runs' manifests say
    manifests = campaign.manifests() if not {"rx_steering", "kernels"} <= fp.keys() else []
    steering = {(m.get("testbed") or {}).get("rx_steering") for m in manifests} - {None}
    if "rx_steering" not in fp and len(steering) == 1:
        fp["rx_steering"] = steering.pop()
    kernels = {v.get("kernel") for m in manifests for v in (m.get("versions") or {}).values()} - {None}
    if "kernels" not in fp and kernels:
        fp["kernels"] = sorted(kernels)
    return fp or None


def incomparable(recorded: dict | None, current: dict) -> list[str]:
    """What differs between a campaign's recorded testbed and this one (the keys both name)."""
    if recorded is None:
        return []
    return [f"{k} {recorded[k]} there, {current[k]} here" for k in current
            if k in recorded and recorded[k] != current[k]]


def _status(run: Path) -> str | None:
    return run_status(run)




def unreachable(tb: Testbed) -> dict[str, str]:
    """The testbed's hosts that do not answer at all, with why ({} when every host answers)."""
    hosts = {id(h): h for h in [*tb.machines.values(), *(e.host for e in tb.endpoints.values())]}
    out = {}
    for host in hosts.values():
        try:
            host.run(["true"], check=False, timeout=30)
        except HostUnreachable as exc:
            out[host.name] = str(exc)
    return out


def _stop_leftovers(tb: Testbed) -> None:
    """The failed point's processes on a host that answers again (perf, iperf3 and the probes run
    in sessions of their own, so a lost SSH link does not end them): stopped by their mark before
    the next point measures beside them."""
    hosts = {id(h): h for h in [*tb.machines.values(), *(e.host for e in tb.endpoints.values())]}
    for host in hosts.values():
        tag = getattr(host, "tag", None)
        if isinstance(host, SshHost) and tag is not None:
            stopped = tag.kill_on(host)
            if stopped:
                tqdm.write(f"{host.name}: stopped {len(stopped)} process{'es' * (len(stopped) != 1)} the lost "
                           f"point left running")


def wait_and_restore(tb: Testbed, wait_s: float) -> list[str]:
    """After a point lost a host: wait up to wait_s for every host to answer, then put back at once
    every setting the campaign journaled (the failed point may have left some half-applied; the
    next point applies its config whole). Returns the restore's problems; raises HostUnreachable
    when a host still does not answer: the settings stay journaled for `hostnet restore`."""
    deadline = time.monotonic() + wait_s
    while lost := unreachable(tb):
        if time.monotonic() >= deadline:
            raise HostUnreachable(
                f"{'; '.join(lost.values())}: no answer for {wait_s:g} s, sweep stopped. The settings it "
                f"changed stay journaled in {tb.journal.path}; `hostnet restore` puts them back once "
                f"{' and '.join(lost)} answer{'s' if len(lost) == 1 else ''} again, and running the sweep "
                f"again resumes it")
        time.sleep(RECONNECT_POLL_S)
    _stop_leftovers(tb)
    # the same Journal journals the next point's changes: it reads its file anew for every record(),
    # and it keeps the lock, so no second controller takes the testbed between two points
    return tb.journal.restore(keep_lock=True)


def run_sweep(tb: Testbed, spec: SweepSpec, *, runs_dir, campaign: str, progress: bool = True,
              reconnect_wait_s: float = RECONNECT_WAIT_S, top_up: bool = False) -> dict:
    """Run (or resume) a sweep. Returns {"ran", "skipped", "failed", "campaign_dir", "restore_problems"}.

    A sweep records its plan in the campaign's sweep.json; a top-up round (top_up=True: one point of
    the campaign, topup.run_more) leaves the campaign's plan there untouched and is recorded by its
    caller under "top_ups".

    One sweep at a time per campaign (Campaign.lock). A point that loses a host ends failed with
    the reason and the sweep goes on once every host answers again (waiting up to
    reconnect_wait_s, settings restored then); a host that stays silent stops it (HostUnreachable).
    On a rehearsal testbed (emulated NICs) no unprofiled run is added: perf's cost there measures
    nothing, and each run costs minutes under TCG."""
    if tb.rehearsal and spec.unprofiled_repetitions:
        log.info("%s: no unprofiled runs on a rehearsal testbed (%s)", campaign, tb.rehearsal)
        spec = replace(spec, unprofiled_repetitions=0)
    points = spec.points()  # expanded once: every step below reads this list
    cfgs = {p["config"]: point_config(p) for p in points}
    tool, tools = _tools(spec, points, tb)
    # a bench records a missing perf unsupported (benches.py); flows need it
    needed = () if spec.experiment == "time-budget" else tuple(REQUIRED_TOOLS["machines"])
    versions = preflight(tb, tools, machine_tools=needed)
    problems = [p for c in cfgs.values() for p in point_requirements(tb, c)]
    problems += [p for pt in points
                 for p in point_requirements(tb, point_config(pt), pt.get("ip_version"))]
    if any("udp_rate_gbps" in p for p in points):
        problems += udp_loss.requirements(tb)
    if any(p.get("recv_mode") == "mmap" for p in points):
        problems += zerocopy_receive_problems(tb)
    if problems:  # refused before any host setting changes
        raise PreflightError("; ".join(dict.fromkeys(problems)))
    fp = fingerprint(tb, versions)
    where = Campaign(runs_dir, campaign)
    if differs := incomparable(recorded_fingerprint(where), fp):
        # runs of another kernel or receive path would be judged together with these, silently
        raise IncomparableTestbed(f"campaign {campaign} was recorded on another testbed ({'; '.join(differs)}): "
                                  f"its runs cannot be compared with this one's; record a new campaign")
    where.path.mkdir(parents=True, exist_ok=True)
    binaries = {t: native_binaries(tb, t) for t in tools if t in native.TOOLS}
    plan = _Campaign(spec, points, cfgs, tool, versions, fp, where, binaries)
    with where.lock():
        return _run_plan(tb, plan, progress=progress, reconnect_wait_s=reconnect_wait_s, record_plan=not top_up)


# What earlier top-ups wrote into sweep.json (topup.py): a resume keeps it.
KEPT_RECORDS = ("top_ups", "decisive_top_ups")


def _records_kept(campaign: Campaign) -> dict:
    try:
        previous = campaign.plan()
    except (OSError, ValueError):
        return {}
    return {k: previous[k] for k in KEPT_RECORDS if isinstance(previous, dict) and k in previous}


@dataclass(frozen=True)
class _Campaign:
    """What a sweep has settled before its first run: the points (expanded once), their configs,
    the RPC tool, the tools' versions, the testbed's fingerprint, where the runs go."""
    spec: SweepSpec
    points: list[dict]
    configs: dict
    tool: str
    versions: dict
    fingerprint: dict
    where: Campaign
    binaries: dict = field(default_factory=dict)

    def rebuilt(self, tb: Testbed) -> "_Campaign":
        """The campaign with its native tools built again on every endpoint: a remote build lives in
        the host's /tmp (native.ensure), which a reboot empties."""
        return replace(self, binaries={t: native_binaries(tb, t) for t in self.binaries}) if self.binaries else self

    def request(self, point: dict, pid: str, run: Path, repetition: int, profiled: bool) -> RunRequest:
        """The runner's request for one run of one point."""
        spec = self.spec
        cfg = self.configs[point["config"]] if set(point) == {"config"} else point_config(point)
        probing = Probing(profile=profiled, perf_freq_hz=spec.perf_freq_hz,
                          latency_sample_every=int(point.get("latency_sample_every", spec.latency_sample_every)))
        return RunRequest(cfg, point_workload(spec, point, self.tool, self.binaries), self.where.runs_dir,
                          self.where.name, experiment=spec.stored_for(point), repetition=repetition,
                          point={"id": pid, **point}, run_id=run.name, probing=probing, versions=self.versions)


def _run_plan(tb: Testbed, c: _Campaign, *, progress: bool, reconnect_wait_s: float, record_plan: bool) -> dict:
    spec, fp, cdir, campaign = c.spec, c.fingerprint, c.where.path, c.where.name
    order = [(p, f"r{rep}") for rep in range(spec.repetitions) for p in c.points]
    order += [(p, f"u{k}") for k in range(spec.unprofiled_repetitions) for p in c.points]
    random.Random(spec.seed).shuffle(order)  # without unprofiled runs: the order it always had
    plan = [(point_id(p, fp, spec.stored_as), p, rep) for p, rep in order]
    if record_plan:  # a kill mid-write leaves the old plan, never a torn one
        c.where.write_plan({"spec": asdict(spec), "fingerprint": fp, "hostnet": __version__, "rpc_tool": c.tool,
                            "order": [f"{pid}-{rep}" for pid, _, rep in plan], **_records_kept(c.where)})
    done = {"ran": 0, "skipped": 0, "failed": 0, "campaign_dir": str(cdir), "restore_problems": []}
    bar = tqdm(total=len(plan), desc=campaign, disable=not (progress and sys.stderr.isatty()))
    started = time.monotonic()
    with _Finisher(overlapping(tb), done) as finisher:
        for i, (pid, point, tag) in enumerate(plan):
            run, rep, profiled = cdir / f"{pid}-{tag}", int(tag[1:]), tag.startswith("r")
            shutil.rmtree(run.with_name(run.name + ".partial"), ignore_errors=True)  # died mid-way: redo
            status = _status(run)
            if status == "ok":
                done["skipped"] += 1
                bar.update(1)
                continue
            if status is not None:  # keep the failed (or incomplete) attempt for the record, out of the way
                kept = "incomplete" if status == INCOMPLETE else "failed"
                run.rename(run.with_name(f"{run.name}.{kept}-{int(time.time())}"))
            try:
                pending = start_point(tb, c.request(point, pid, run, rep, profiled), before_window=finisher.settle)
                finisher.add(pending, point, rep)
            except RunFailed as exc:
                finisher.settle()
                done["failed"] += 1
                tqdm.write(f"point {point} rep {rep} failed: {exc}")
                if isinstance(exc.__cause__, HostUnreachable) or unreachable(tb):
                    tqdm.write(f"a host stopped answering: waiting up to {reconnect_wait_s:g} s for it, "
                               "then restoring the settings")
                    try:
                        restore_problems = wait_and_restore(tb, reconnect_wait_s)
                    except HostUnreachable as lost:
                        bar.close()
                        raise HostUnreachable(f"sweep {campaign} stopped at run {i + 1} of {len(plan)} "
                                              f"({done['ran']} ran, {done['skipped']} already done, "
                                              f"{done['failed']} failed): {lost}") from exc
                    c = c.rebuilt(tb)  # a host that rebooted lost its native builds with its /tmp
                    done["restore_problems"] += restore_problems
                    for problem in restore_problems:
                        tqdm.write(f"could not restore: {problem}")
            bar.update(1)
            if bar.disable and progress:  # not a terminal: plain progress lines with an ETA
                per = (time.monotonic() - started) / max(1, i + 1 - done["skipped"])
                eta = per * (len(plan) - i - 1)
                log.info("[%d/%d] %s rep %s: ETA %.0f s", i + 1, len(plan), point, rep, eta)
    bar.close()
    return done


def overlapping(tb: Testbed) -> bool:
    """Whether a point's finish (perf's report, the tidy rows, the run directory) may overlap the
    next point's setup and warm-up: on local hosts (the embedded testbed). Over SSH each point
    finishes before the next starts: commands from two threads on one SSH connection are not
    something hostnet has tested."""
    return all_local(tb)


class _Finisher:
    """At most one point finishing in the background while the next one sets up; settle() waits
    for it (the next point calls it before its flows start, so the finishing work never falls in a
    window nor slows the flows' start) and counts it ran or failed. Without overlap, add() finishes
    at once."""

    def __init__(self, overlap: bool, done: dict):
        self.overlap, self.done = overlap, done
        self._pool = None
        self._pending = None

    def __enter__(self):
        if self.overlap:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hostnet-finish")
        return self

    def add(self, run, point: dict, rep: int) -> None:
        self.settle()
        if self._pool is None:
            self._record(run.finish, point, rep)
        else:
            self._pending = (self._pool.submit(run.finish), point, rep)

    def settle(self) -> None:
        if self._pending is not None:
            future, point, rep = self._pending
            self._pending = None
            self._record(future.result, point, rep)

    def _record(self, result, point: dict, rep: int) -> None:
        try:
            result()
            self.done["ran"] += 1
        except RunFailed as exc:
            self.done["failed"] += 1
            tqdm.write(f"point {point} rep {rep} failed: {exc}")

    def __exit__(self, *exc):
        try:
            self.settle()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)


def run_configs(tb: Testbed, spec: SweepSpec, *, runs_dir, campaign: str, progress: bool = True,
                reconnect_wait_s: float = RECONNECT_WAIT_S) -> list[Path]:
    """A sweep's successful runs (`hostnet run`, and the sections that need only the runs)."""
    out = run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign, progress=progress,
                    reconnect_wait_s=reconnect_wait_s)
    cdir = Path(out["campaign_dir"])
    return sorted(r for r in cdir.iterdir() if r.is_dir() and _status(r) == "ok")
