"""Benchmark 6: every figure and the report regenerated from data/ (no live runs), the notebooks side
by side (one more than the cores). A first replay with an empty chart cache (its own directory, so the
user's cache is neither used nor touched) is timed and reported, not judged: the judged replays
reuse the charts it drew, as every `make figures` after the first does."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hostnet.charts import chart_cache
from hostnet.notebook.batch import Places, replay_jobs, run_notebooks, section_notebooks

from .stats import summarize, verdict

TARGET = ("<=", 20.0)


def measure(repetitions: int, log) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostnet-bench-charts-") as cache:
        saved = os.environ.get(chart_cache.ENV)
        os.environ[chart_cache.ENV] = cache  # inherited by the notebooks' kernels
        try:
            for rep in range(-1, repetitions):  # -1: the cold replay that fills the cache
                with tempfile.TemporaryDirectory(prefix="hostnet-bench-replay-") as tmp:
                    t0 = time.monotonic()
                    run_notebooks(mode="replay", places=Places(output_dir=Path(tmp) / "executed",
                                                               figures_dir=Path(tmp) / "figures"))
                    wall = time.monotonic() - t0
                    figs = sorted(p.name for p in (Path(tmp) / "figures").rglob("*") if p.suffix in (".svg", ".png"))
                rows.append({"repetition": rep, "wall_s": wall, "figures": len(figs),
                             "cache": "cold" if rep < 0 else "warm"})
                log(f"  replay {'cold' if rep < 0 else rep}: {wall:.1f} s, {len(figs)} figure files")
        finally:
            if saved is None:
                os.environ.pop(chart_cache.ENV, None)
            else:
                os.environ[chart_cache.ENV] = saved
    return rows


def result(rows: list[dict]) -> dict:
    s = summarize(r["wall_s"] for r in rows if r.get("cache", "warm") == "warm")
    cold = [r["wall_s"] for r in rows if r.get("cache") == "cold"]
    op, target = TARGET
    return {"name": "replay_speed", "title": "Replay speed", "unit": "s",
            "metric": f"seconds to regenerate every figure and the report from data/ ({os.cpu_count()} cores)",
            "summary": s.as_dict(), "value": s.median, "op": op, "target": target,
            "verdict": verdict(s.median, op, target), "rows": rows,
            "figure": f"replay = {s.text('{:.1f}')} s for {rows[-1]['figures'] if rows else 0} figure files "
                      f"({replay_jobs(len(section_notebooks()))} notebooks side by side, warm chart cache"
                      + (f"; {cold[0]:.1f} s with an empty one" if cold else "") + f"); target {op} {target:.0f} s"}
