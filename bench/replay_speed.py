"""Benchmark 6: every figure and the report regenerated from data/ (no live runs)."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hostnet.batch import run_notebooks

from .stats import summarize, verdict

TARGET = ("<=", 60.0)


def measure(repetitions: int, log) -> list[dict]:
    rows = []
    for rep in range(repetitions):
        with tempfile.TemporaryDirectory(prefix="hostnet-bench-replay-") as tmp:
            t0 = time.monotonic()
            run_notebooks(mode="replay", output_dir=Path(tmp) / "executed", figures_dir=Path(tmp) / "figures")
            wall = time.monotonic() - t0
            figs = sorted(p.name for p in (Path(tmp) / "figures").rglob("*") if p.suffix in (".svg", ".png"))
        rows.append({"repetition": rep, "wall_s": wall, "figures": len(figs)})
        log(f"  replay {rep}: {wall:.1f} s, {len(figs)} figure files")
    return rows


def result(rows: list[dict]) -> dict:
    s = summarize(r["wall_s"] for r in rows)
    op, target = TARGET
    return {"name": "replay_speed", "title": "Replay speed", "unit": "s",
            "metric": f"seconds to regenerate every figure and the report from data/ ({os.cpu_count()} cores)",
            "summary": s.as_dict(), "value": s.median, "op": op, "target": target,
            "verdict": verdict(s.median, op, target), "rows": rows,
            "figure": f"replay = {s.text('{:.1f}')} s for {rows[-1]['figures'] if rows else 0} figure files; "
                      f"target {op} {target:.0f} s"}
