"""The original artifact's sweep overhead, from the runtimes its README states (seed 003).

Facts used: the single-flow script (Fig. 3(a)-(d)) takes about 6 minutes; its printed summary
has 7 configurations (no-opts .. all-opts), one point each; every point is a 20 s iperf run
(data/reference/single_flow_readme_sample.csv). Nothing else about its scripts is assumed.
"""
from __future__ import annotations

SINGLE_FLOW = {"experiment": "single-flow (Fig. 3(a)-(d))", "runtime_min": 6, "points": 7, "run_s": 20}


def overhead_ratio(runtime_min: float, points: int, run_s: float) -> float:
    """Wall time / time spent inside measurement runs."""
    if points <= 0 or run_s <= 0:
        raise ValueError("points and run length must be positive")
    return runtime_min * 60.0 / (points * run_s)


def artifact_single_flow() -> dict:
    s = SINGLE_FLOW
    ratio = overhead_ratio(s["runtime_min"], s["points"], s["run_s"])
    return {**s, "measurement_s": s["points"] * s["run_s"], "ratio": ratio,
            "per_point_overhead_s": s["runtime_min"] * 60.0 / s["points"] - s["run_s"]}
