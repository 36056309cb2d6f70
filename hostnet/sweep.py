"""Sweeps: parameters x values x repetitions, serially, shuffled (seeded, recorded), resumable.

A sweep spec (YAML, a dict from Python, or papermill parameters):

    experiment: single-flow          # or one-to-one, incast, outcast, all-to-all
    configs: [tsogro]
    grid:                            # any of: rx_buffer_kb, flows, rpc_size, congestion_control,
                                     # latency_sample_every, udp_rate_gbps, socket_buffer_kb, app_cpu,
                                     # loss_rate (receive-side random drop),
                                     # short_flows and long_flow (experiment: mixed)
      rx_buffer_kb: [100, 200, 400]
    repetitions: 3
    duration: 5
    warmup: 2
    seed: 1
    latency_sample_every: 1          # 0: no latency probe

Each (point, repetition) is one run directory named <point id>-r<k>, where the point id hashes
the point's parameters, the testbed's fingerprint and hostnet's version. Re-running a sweep skips
runs that completed, re-runs failed or partial ones (a failed run is kept, renamed), and never
duplicates a point: an interrupted sweep (Ctrl-C, kill) resumes where it stopped.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from tqdm.auto import tqdm

from . import __version__, config as stackconfig
from .testbed.capabilities import point_requirements
from .runner import PreflightError, RunFailed, preflight, rpc_tool, run_point
from .store import load_manifest
from .testbed import Testbed
from .workloads import PATTERNS, LongFlows, MixedFlows, RpcFlows, UdpRate

# mixed: one long flow + k RPC flows on one sender and one receiver core (workloads.MixedFlows)
EXPERIMENT_PATTERNS = {"single-flow": "single", **{p: p for p in PATTERNS if p != "single"},
                       "udp-loss": "single", "mixed": "single"}
GRID_KEYS = ("rx_buffer_kb", "flows", "rpc_size", "congestion_control", "latency_sample_every",
             "udp_rate_gbps", "socket_buffer_kb", "app_cpu", "loss_rate", "short_flows", "long_flow")
MIXED_KEYS = ("short_flows", "long_flow")


class SweepError(ValueError):
    pass


_LABEL = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")


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
    rpc_tool: str = "auto"
    # what the runs are stored as (their manifests' experiment) when a section runs a known
    # experiment under a name of its own, e.g. numa-nic-local = incast with the receiver moved
    label: str = ""

    def __post_init__(self):
        if self.experiment not in EXPERIMENT_PATTERNS:
            raise SweepError(f"experiment {self.experiment!r}: one of {', '.join(EXPERIMENT_PATTERNS)}")
        if self.label and not _LABEL.match(self.label):
            raise SweepError(f"label {self.label!r}: lower-case letters, digits, '.', '+' and '-'")
        unknown = set(self.grid) - set(GRID_KEYS)
        if unknown:
            raise SweepError(f"unknown grid parameter(s) {', '.join(sorted(unknown))}; known: {', '.join(GRID_KEYS)}")
        if self.experiment != "mixed" and set(self.grid) & set(MIXED_KEYS):
            raise SweepError(f"{' and '.join(MIXED_KEYS)} belong to experiment mixed")
        if self.repetitions < 1 or self.duration < 1 or self.warmup < 0:
            raise SweepError("repetitions >= 1, duration >= 1 s and warmup >= 0 s")
        for point in self.points():  # every point is valid before anything runs
            point_config(point)
            point_workload(self, point, "sockperf")

    @property
    def stored_as(self) -> str:
        return self.label or self.experiment

    @classmethod
    def from_dict(cls, d: dict) -> "SweepSpec":
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise SweepError(f"unknown sweep key(s): {', '.join(sorted(unknown))}")
        return cls(**d)

    @classmethod
    def from_yaml(cls, path) -> "SweepSpec":
        try:
            with open(path) as f:  # a stream, so a syntax error names the file, not "<unicode string>"
                doc = yaml.safe_load(f) or {}
            return cls.from_dict(doc)
        except (OSError, yaml.YAMLError) as exc:
            raise SweepError(f"{path}: {exc}") from exc

    def points(self) -> list[dict]:
        keys = list(self.grid)
        points = [{"config": c, **dict(zip(keys, values, strict=True))}
                  for c in self.configs for values in itertools.product(*(self.grid[k] for k in keys))]
        # mixed: long_flow x short_flows includes "no flow at all", which is no point
        return [p for p in points if int(p.get("long_flow", 1)) or int(p.get("short_flows", 0))]


def point_config(point: dict) -> stackconfig.StackConfig:
    overrides = {}
    if "rx_buffer_kb" in point:
        max_bytes = int(point["rx_buffer_kb"]) * 1024
        # the receive buffer's ceiling (autotuning stops there); the default is not above it
        overrides["tcp_rmem"] = f"4096 {min(131072, max_bytes)} {max_bytes}"
    if "congestion_control" in point:
        overrides["congestion_control"] = point["congestion_control"]
    if "loss_rate" in point:
        overrides["loss_rate"] = float(point["loss_rate"])
    return stackconfig.get_config(point["config"], **overrides)


def point_workload(spec: SweepSpec, point: dict, tool: str):
    pattern = EXPERIMENT_PATTERNS[spec.experiment]
    n = int(point.get("flows", 1))
    if "udp_rate_gbps" in point:
        return UdpRate(spec.duration, spec.warmup, pattern=pattern, n=n, rate_gbps=float(point["udp_rate_gbps"]),
                       socket_buffer_kb=int(point.get("socket_buffer_kb", 1024)),
                       app_cpu=point.get("app_cpu", "same"))
    if spec.experiment == "mixed":
        return MixedFlows(spec.duration, spec.warmup, short_flows=int(point.get("short_flows", 0)),
                          long_flow=bool(int(point.get("long_flow", 1))),
                          size_bytes=int(point.get("rpc_size", 4096)), rpc_tool=tool,
                          congestion_control=point.get("congestion_control", "cubic"))
    if point.get("rpc_size"):
        return RpcFlows(spec.duration, spec.warmup, pattern=pattern, n=n, size_bytes=int(point["rpc_size"]),
                        tool=tool)
    return LongFlows(spec.duration, spec.warmup, pattern=pattern, n=n,
                     congestion_control=point.get("congestion_control", "cubic"))


def fingerprint(tb: Testbed, versions: dict) -> dict:
    """What makes two testbeds comparable: not their names, which change from run to run."""
    return {"kind": tb.kind,
            "roles": {r: {"cpus": e.cpus, "host": e.host.describe()["kind"]} for r, e in tb.endpoints.items()},
            "kernels": sorted({v["kernel"] for v in versions.values()})}


def point_id(point: dict, fp: dict, experiment: str) -> str:
    blob = json.dumps({"point": point, "experiment": experiment, "testbed": fp, "hostnet": __version__},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _status(run: Path) -> str | None:
    if not (run / "manifest.json").exists():
        return None
    return load_manifest(run).get("status")


def run_sweep(tb: Testbed, spec: SweepSpec, *, runs_dir, campaign: str, progress: bool = True) -> dict:
    """Run (or resume) a sweep. Returns {"ran", "skipped", "failed", "campaign_dir"}."""
    cfgs = {p["config"]: point_config(p) for p in spec.points()}
    mixed = spec.experiment == "mixed"
    tool = rpc_tool(tb, spec.rpc_tool) if mixed or any(p.get("rpc_size") for p in spec.points()) else "iperf3"
    if any("udp_rate_gbps" in p for p in spec.points()):
        tool = UdpRate.tool
    versions = preflight(tb, ("iperf3", tool) if mixed else (tool,))
    problems = [p for c in cfgs.values() for p in point_requirements(tb, c)]
    problems += [p for pt in spec.points() for p in point_requirements(tb, point_config(pt))]
    if problems:  # refused before any host setting changes
        raise PreflightError("; ".join(dict.fromkeys(problems)))
    fp = fingerprint(tb, versions)
    cdir = Path(runs_dir) / campaign
    cdir.mkdir(parents=True, exist_ok=True)
    order = [(p, rep) for rep in range(spec.repetitions) for p in spec.points()]
    random.Random(spec.seed).shuffle(order)
    plan = [(point_id(p, fp, spec.stored_as), p, rep) for p, rep in order]
    (cdir / "sweep.json").write_text(json.dumps(
        {"spec": asdict(spec), "fingerprint": fp, "hostnet": __version__, "rpc_tool": tool,
         "order": [f"{pid}-r{rep}" for pid, _, rep in plan]}, indent=2))
    done = {"ran": 0, "skipped": 0, "failed": 0, "campaign_dir": str(cdir)}
    bar = tqdm(total=len(plan), desc=campaign, disable=not (progress and sys.stderr.isatty()))
    started = time.monotonic()
    for i, (pid, point, rep) in enumerate(plan):
        run = cdir / f"{pid}-r{rep}"
        shutil.rmtree(run.with_name(run.name + ".partial"), ignore_errors=True)  # died mid-way: redo
        status = _status(run)
        if status == "ok":
            done["skipped"] += 1
            bar.update(1)
            continue
        if status is not None:  # keep the failed attempt for the record, out of the way
            run.rename(run.with_name(f"{run.name}.failed-{int(time.time())}"))
        try:
            run_point(tb, cfgs[point["config"]] if set(point) == {"config"} else point_config(point),
                      point_workload(spec, point, tool), runs_dir=runs_dir, campaign=campaign, repetition=rep,
                      experiment=spec.stored_as, perf_freq_hz=spec.perf_freq_hz, versions=versions,
                      latency_sample_every=int(point.get("latency_sample_every", spec.latency_sample_every)),
                      run_id=run.name,
                      point={"id": pid, **point})
            done["ran"] += 1
        except RunFailed as exc:
            done["failed"] += 1
            tqdm.write(f"point {point} rep {rep} failed: {exc}")
        bar.update(1)
        if bar.disable and progress:  # not a terminal: plain progress lines with an ETA
            per = (time.monotonic() - started) / max(1, done["ran"] + done["failed"])
            eta = per * (len(plan) - i - 1)
            print(f"[{i + 1}/{len(plan)}] {point} rep {rep}: ETA {eta:.0f} s", file=sys.stderr, flush=True)
    bar.close()
    return done


def run_configs(tb: Testbed, configs, *, duration_s: int, warmup_s: int, repetitions: int, runs_dir,
                campaign: str, experiment: str = "single-flow", seed: int = 0, perf_freq_hz: int = 999,
                progress: bool = True, pattern: str = "single", flows: int = 1,
                congestion_control: str = "cubic", rpc_size: int | None = None,
                rpc_tool_name: str = "auto", label: str = "") -> list[Path]:
    """The configs as one sweep (the CLI's `hostnet run`); returns the successful runs."""
    grid: dict[str, list] = {}
    if flows != 1:
        grid["flows"] = [flows]
    if rpc_size:
        grid["rpc_size"] = [rpc_size]
    if congestion_control != "cubic":
        grid["congestion_control"] = [congestion_control]
    spec = SweepSpec(experiment=experiment, configs=list(configs), grid=grid, repetitions=repetitions,
                     duration=duration_s, warmup=warmup_s, seed=seed, perf_freq_hz=perf_freq_hz,
                     rpc_tool=rpc_tool_name, label=label)
    out = run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign, progress=progress)
    cdir = Path(out["campaign_dir"])
    return sorted(r for r in cdir.iterdir() if r.is_dir() and _status(r) == "ok")
