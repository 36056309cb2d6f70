"""Points x repetitions in shuffled order, so slow drift on a shared machine spreads
evenly over configs instead of biasing whichever ran last."""
from __future__ import annotations

import random
from pathlib import Path

from tqdm.auto import tqdm

from . import config as stackconfig
from .capabilities import point_requirements
from .runner import PreflightError, RunFailed, preflight, rpc_tool, run_point
from .testbed import Testbed
from .workloads import LongFlows, RpcFlows


def plan(configs, repetitions: int, seed: int = 0) -> list[tuple[str, int]]:
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    points = [(c, rep) for rep in range(repetitions) for c in configs]
    random.Random(seed).shuffle(points)
    return points


def run_configs(tb: Testbed, configs, *, duration_s: int, warmup_s: int, repetitions: int,
                runs_dir, campaign: str, experiment: str = "single-flow", seed: int = 0,
                perf_freq_hz: int = 999, progress: bool = True, pattern: str = "single",
                flows: int = 1, congestion_control: str = "cubic", rpc_size: int | None = None,
                rpc_tool_name: str = "auto") -> list[Path]:
    """Run every (config, repetition); a failed point is recorded and the sweep goes on."""
    # validate all before touching hosts
    cfgs = {c: stackconfig.get_config(c, congestion_control=congestion_control) for c in configs}
    if rpc_size:
        workload = RpcFlows(duration_s, warmup_s, pattern=pattern, n=flows, size_bytes=rpc_size,
                            tool=rpc_tool(tb, rpc_tool_name))
    else:
        workload = LongFlows(duration_s, warmup_s, pattern=pattern, n=flows, congestion_control=congestion_control)
    versions = preflight(tb, (workload.tool,))
    problems = [p for c in cfgs.values() for p in point_requirements(tb, c)]
    if problems:  # refused before any host setting changes
        raise PreflightError("; ".join(dict.fromkeys(problems)))
    done: list[Path] = []
    for name, rep in tqdm(plan(configs, repetitions, seed), disable=not progress, desc=campaign):
        try:
            done.append(run_point(tb, cfgs[name], workload, runs_dir=runs_dir, campaign=campaign,
                                  repetition=rep, experiment=experiment, perf_freq_hz=perf_freq_hz,
                                  versions=versions))
        except RunFailed as exc:
            tqdm.write(f"point {name} rep {rep} failed: {exc}")
    return done
