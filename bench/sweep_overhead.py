"""Benchmark 4: the harness's time per point: what a point adds to a sweep's wall time beyond the
warm-up the experiment asks for and its measurement window (target: 0.5 s).

Judged per point: from one point's start to the next point's start, minus the warm-up and the
window (the setup, the window's edges, the flows' end; the previous point's finish overlaps this
one's setup and warm-up, and counts only where it outlasts them). What a sweep pays once (the
preflight, the last point's finish) is reported beside it, per sweep, and in the older measure
(wall minus the warm-ups and windows, over the points), which charges it to 3 points.

The sweep runs with hostnet's default profiling (a SweepSpec's: perf record at the default
frequency and perf stat; the eBPF latency probe is the Rx-buffer study's own option, not a
default), is repeated `sweeps` times (each a campaign of its own, so nothing is resumed), and the
time is taken per sweep: median and range over the sweeps. cProfile runs over one extra sweep that
is not counted (its overhead would inflate the wall time it is meant to explain). Reported next to
it: wall / the measurement windows (the earlier judged ratio, target 1.15), wall / the points'
iperf3 run time (warm-up + duration), the basis of the original artifact's figure.
"""
from __future__ import annotations

import cProfile
import itertools
import io
import json
import pstats
import time
from pathlib import Path

from hostnet.probes.perf import DEFAULT_FREQ_HZ
from hostnet.store import load_manifest
from hostnet.measure.sweep import SweepSpec, run_sweep

from .artifact import artifact_single_flow
from .stats import summarize, verdict

TARGET = ("<=", 0.5)  # seconds of harness per point


def phases(manifest: dict, traffic_s: float) -> dict:
    """Where a point's wall time went, from its manifest's timestamps."""
    start, end, clients = manifest["started"], manifest["ended"], manifest["window"]["clients_started"]
    return {"setup_s": clients - start, "traffic_s": traffic_s, "after_s": end - clients - traffic_s,
            "window_s": manifest["window"]["seconds"], "point_wall_s": end - start, "started": start}


def point_steps(points: list[dict], warmup_s: float) -> list[float]:
    """Each point but the last: seconds from its start to the next point's start beyond its warm-up
    and window (points of older results, without "started", give none)."""
    if any("started" not in p for p in points):
        return []
    order = sorted(points, key=lambda p: p["started"])
    return [b["started"] - a["started"] - warmup_s - a["window_s"] for a, b in itertools.pairwise(order)]


def spec(points: int, duration_s: int, warmup_s: int) -> SweepSpec:
    return SweepSpec(configs=["all-opts"], repetitions=points, duration=duration_s, warmup=warmup_s, seed=1,
                     perf_freq_hz=DEFAULT_FREQ_HZ)


def one_sweep(tb, runs_dir: Path, campaign: str, points: int, duration_s: int, warmup_s: int,
              prof: cProfile.Profile | None = None) -> dict:
    """One sweep, timed; a sweep that raises is recorded (error) rather than ending the benchmark."""
    t0 = time.monotonic()
    try:
        if prof:
            prof.enable()
        try:
            done = run_sweep(tb, spec(points, duration_s, warmup_s), runs_dir=runs_dir, campaign=campaign,
                             progress=False)
        finally:
            if prof:
                prof.disable()
    except Exception as exc:  # noqa: BLE001 - recorded; the other sweeps still run
        return {"wall_s": time.monotonic() - t0, "points": [], "failed": points,
                "error": f"{type(exc).__name__}: {exc}"[:500]}
    wall = time.monotonic() - t0
    cdir = Path(done["campaign_dir"])
    runs = [load_manifest(r) for r in sorted(cdir.iterdir()) if (r / "manifest.json").exists()]
    return {"wall_s": wall, "failed": done["failed"],
            "points": [phases(m, duration_s + warmup_s) for m in runs if m.get("status") == "ok"]}


def measure(tb, runs_dir: Path, campaign: str, points: int, duration_s: int, warmup_s: int,
            sweeps: int = 1, profile: bool = True, log=lambda msg: None) -> dict:
    out = {"sweeps": [], "profile": ""}
    for k in range(sweeps):
        s = one_sweep(tb, runs_dir, f"{campaign}-s{k}", points, duration_s, warmup_s)
        log(f"  sweep {k}: wall {s['wall_s']:.1f} s, {len(s['points'])} points ok"
            + (f", FAILED: {s['error']}" if s.get("error") else ""))
        out["sweeps"].append(s)
    if profile:
        prof = cProfile.Profile()
        s = one_sweep(tb, runs_dir, f"{campaign}-profiled", points, duration_s, warmup_s, prof)
        buf = io.StringIO()
        if not s.get("error"):
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
        out["profile"] = f"# one extra sweep under cProfile, not counted: wall {s['wall_s']:.1f} s\n" + (
            buf.getvalue() or f"failed: {s.get('error')}\n")
        out["profiled_sweep"] = s
    return out


def sweep_ratios(s: dict, warmup_s: float) -> dict:
    """One sweep's harness seconds per point (judged: wall - warm-ups - windows, over its points; a
    sweep with a failed point is not judged), wall / its points' measurement windows, wall / their
    iperf3 run time (warm-up + duration), and the floor iperf3 time / windows (what that ratio would
    be if the harness took no time at all)."""
    pts = s["points"]
    windows = sum(p["window_s"] for p in pts)
    traffic = sum(p["traffic_s"] for p in pts)
    nan = float("nan")
    whole = not s.get("failed") and not s.get("error")
    steps = point_steps(pts, warmup_s) if whole else []
    return {"wall_s": s["wall_s"], "window_s": windows, "traffic_s": traffic, "points_ok": len(pts),
            "failed": s.get("failed", 0), "error": s.get("error"),
            "harness_s_per_point": (s["wall_s"] - len(pts) * warmup_s - windows) / len(pts)
            if pts and whole else nan,
            "per_point_s": sum(steps) / len(steps) if steps else nan,
            # the preflight, the first setup's extra, the last point's harness and finish
            "once_s": s["wall_s"] - sum(steps) - len(pts) * warmup_s - windows if steps else nan,
            "ratio_windows": s["wall_s"] / windows if windows else nan,
            "ratio_iperf3": s["wall_s"] / traffic if traffic else nan,
            "floor_windows": traffic / windows if windows else nan}


def result(m: dict, duration_s: int, warmup_s: int, note: str = "", profiling: str = "default profiling") -> dict:
    per = [sweep_ratios(s, warmup_s) for s in m["sweeps"]]
    older = summarize(p["harness_s_per_point"] for p in per)
    stepped = summarize(p["per_point_s"] for p in per)
    once = summarize(p["once_s"] for p in per)
    judged = stepped if stepped.n else older  # results stored before the points kept their start times
    ratio = summarize(p["ratio_windows"] for p in per)
    iperf = summarize(p["ratio_iperf3"] for p in per)
    floor = summarize(p["floor_windows"] for p in per)
    pts = [{"sweep": k, **p} for k, s in enumerate(m["sweeps"]) for p in s["points"]]
    art = artifact_single_flow()
    op, target = TARGET
    per_point = {k: summarize(p[k] for p in pts).as_dict() for k in ("setup_s", "after_s", "point_wall_s", "window_s")}
    between = [s["wall_s"] - sum(p["point_wall_s"] for p in s["points"]) for s in m["sweeps"] if s["points"]]
    bad = [f"sweep {k}: {p['error'] or str(p['failed']) + ' point(s) failed'}"
           for k, p in enumerate(per) if p["error"] or p["failed"]]
    points = max((p["points_ok"] + p["failed"] for p in per if not p["error"]), default=0)
    return {"name": "sweep_overhead", "title": "Harness time per point", "unit": "s",
            "metric": (f"seconds a point adds to a sweep beyond its warm-up and measurement window (start to next "
                       f"start; {points} points of {duration_s} s + {warmup_s} s warm-up, {profiling}; per sweep)"
                       if stepped.n else
                       f"seconds per point of a sweep's wall time beyond its warm-ups and measurement windows "
                       f"({points} points of {duration_s} s + {warmup_s} s warm-up, {profiling}; per sweep)"),
            "summary": judged.as_dict(), "whole_sweep_s_per_point": older.as_dict(),
            "once_per_sweep_s": once.as_dict(), "value": judged.median, "op": op, "target": target,
            "verdict": verdict(judged.median, op, target), "ratio_windows": ratio.as_dict(),
            "ratio_iperf3": iperf.as_dict(), "floor_windows": floor.as_dict(), "sweeps": m["sweeps"],
            "per_sweep": per, "per_point": per_point, "sweep_level_s": summarize(between).as_dict(),
            "profiling": profiling if profiling != "default profiling" else {"perf_freq_hz": DEFAULT_FREQ_HZ},
            "artifact": art, "note": note, "rows": pts,
            "figure": f"harness time per point = {judged.text('{:.2f}')} s over sweeps of {points} points of "
                      f"{duration_s}+{warmup_s} s ({profiling})"
                      + (f"; once per sweep (preflight, the last point's own and its finish) {once.text('{:.2f}')} s; "
                         f"all of it over the points (the earlier measure) {older.text('{:.2f}')} s"
                         if stepped.n else "") + "; setup before the clients "
                      f"{per_point['setup_s']['median']:.2f} s, after the flows {per_point['after_s']['median']:.2f} s "
                      f"per point; wall / measurement windows = {ratio.text()} (floor set by the warm-up "
                      f"{floor.median:.3f}); wall / iperf3 run time = {iperf.text()}; original artifact, same "
                      f"basis as the latter: {art['ratio']:.2f} if its runs were {art['run_s']} s "
                      f"(an assumption: its README gives ~{art['runtime_min']} min and {art['points']} "
                      f"configurations, not the run length; {art['ratio_if_run_s']['10']:.2f} for 10 s runs, "
                      f"{art['ratio_if_run_s']['30']:.2f} for 30 s); target {op} {target} s"
                      + (f"; {'; '.join(bad)}" if bad else "") + (f" ({note})" if note else "")}


def stored_sweeps(res: dict) -> dict:
    """{"sweeps": [...]} from a stored sweep_overhead.json, also of the earlier format (one sweep,
    its points as "rows", run under cProfile, perf only)."""
    if "sweeps" in res:
        return {"sweeps": res["sweeps"]}
    return {"sweeps": [{"wall_s": res["wall_s"], "points": res["rows"], "failed": res.get("failed", 0)}]}


def write_profile(m: dict, out: Path) -> None:
    if m.get("profile"):
        (out / "sweep_overhead.profile.txt").write_text(m["profile"])
    (out / "sweep_overhead.points.json").write_text(json.dumps(
        [{"sweep": k, **p} for k, s in enumerate(m["sweeps"]) for p in s["points"]], indent=1))
