"""Benchmark 4: wall time of a sweep / the time its points spend measuring."""
from __future__ import annotations

import cProfile
import io
import json
import pstats
import time
from pathlib import Path

from hostnet.store import load_manifest
from hostnet.sweep import SweepSpec, run_sweep

from .artifact import artifact_single_flow
from .stats import summarize, verdict

TARGET = ("<=", 1.15)


def phases(manifest: dict, traffic_s: float) -> dict:
    """Where a point's wall time went, from its manifest's timestamps."""
    start, end, clients = manifest["started"], manifest["ended"], manifest["window"]["clients_started"]
    return {"setup_s": clients - start, "traffic_s": traffic_s, "after_s": end - clients - traffic_s,
            "window_s": manifest["window"]["seconds"], "point_wall_s": end - start}


def measure(tb, runs_dir: Path, campaign: str, points: int, duration_s: int, warmup_s: int) -> dict:
    spec = SweepSpec(configs=["all-opts"], repetitions=points, duration=duration_s, warmup=warmup_s, seed=1)
    prof = cProfile.Profile()
    t0 = time.monotonic()
    prof.enable()
    done = run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign, progress=False)
    prof.disable()
    wall = time.monotonic() - t0
    cdir = Path(done["campaign_dir"])
    runs = [load_manifest(r) for r in sorted(cdir.iterdir()) if (r / "manifest.json").exists()]
    per_point = [phases(m, duration_s + warmup_s) for m in runs if m.get("status") == "ok"]
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
    return {"wall_s": wall, "points": per_point, "failed": done["failed"], "profile": buf.getvalue()}


def result(m: dict, duration_s: int, warmup_s: int) -> dict:
    pts = m["points"]
    traffic = sum(p["traffic_s"] for p in pts)
    windows = sum(p["window_s"] for p in pts)
    ratio = m["wall_s"] / traffic if traffic else float("nan")
    art = artifact_single_flow()
    op, target = TARGET
    per = {k: summarize(p[k] for p in pts).as_dict() for k in ("setup_s", "after_s", "point_wall_s")}
    between = m["wall_s"] - sum(p["point_wall_s"] for p in pts)
    return {"name": "sweep_overhead", "title": "Sweep overhead", "unit": "ratio",
            "metric": f"sweep wall time / sum of its points' iperf3 runs ({duration_s} s + {warmup_s} s warm-up each)",
            "summary": {"median": ratio, "min": ratio, "max": ratio, "n": len(pts)}, "value": ratio,
            "op": op, "target": target, "verdict": verdict(ratio, op, target),
            "wall_s": m["wall_s"], "traffic_s": traffic, "probe_windows_s": windows,
            "ratio_to_probe_windows": m["wall_s"] / windows if windows else float("nan"),
            "per_point": per, "sweep_level_s": between, "failed": m["failed"], "artifact": art,
            "rows": pts,
            "figure": f"sweep overhead = {ratio:.3f} (wall {m['wall_s']:.1f} s / {traffic:.0f} s of iperf3 runs, "
                      f"{len(pts)} points of {duration_s}+{warmup_s} s; {m['wall_s'] / windows:.3f} over probe "
                      f"windows); original artifact from its README: {art['ratio']:.2f}; target {op} {target}"}


def write_profile(m: dict, out: Path) -> None:
    (out / "sweep_overhead.profile.txt").write_text(m["profile"])
    (out / "sweep_overhead.points.json").write_text(json.dumps(m["points"], indent=1))
