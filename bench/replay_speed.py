"""Benchmark 6: every figure and the report regenerated from data/ (no live runs) the way `make figures`
does it: the `hostnet figures --mode replay` command, timed as a whole process (its imports, the
notebooks side by side, one more than the cores, and the report), writing into a temporary figures
directory. A first replay with an empty chart cache (its own directory, so the user's cache is neither
used nor touched) is timed and reported, not judged: the judged replays reuse the charts it drew, as
every `make figures` after the first does. Each replay's figure files are compared byte for byte with
the committed figures/ (a faster replay must draw the same figures). The executed notebooks go where
`make figures` writes them (notebooks/executed/, ignored by git)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hostnet import project
from hostnet.charts import chart_cache
from hostnet.notebook.batch import replay_jobs, section_notebooks

from .stats import summarize, verdict

TARGET = ("<=", 20.0)
FIGURE_SUFFIXES = (".svg", ".png")


def differing(made: Path, committed: Path) -> list[str]:
    """Figure files (relative names) of `made` that are missing from `committed` or differ from it byte
    for byte, and committed ones the replay did not make."""
    def files(d: Path) -> dict[str, Path]:
        return {str(p.relative_to(d)): p for p in d.rglob("*") if p.suffix in FIGURE_SUFFIXES}
    a, b = files(made), files(committed)
    return sorted(n for n in a.keys() | b.keys() if n not in a or n not in b or a[n].read_bytes() != b[n].read_bytes())


def measure(repetitions: int, log, root: Path | None = None) -> list[dict]:
    root = Path(root or project.root())
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostnet-bench-charts-") as cache:
        env = {**os.environ, chart_cache.ENV: cache}  # inherited by the notebooks' kernels
        for rep in range(-1, repetitions):  # -1: the cold replay that fills the cache
            with tempfile.TemporaryDirectory(prefix="hostnet-bench-replay-") as tmp:
                figures = Path(tmp) / "figures"
                t0 = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "hostnet.cli", "figures", "--mode", "replay",
                                       "--figures-dir", str(figures)], cwd=root, env=env, capture_output=True,
                                      text=True)
                wall = time.monotonic() - t0
                if done.returncode:
                    raise RuntimeError(f"hostnet figures --mode replay failed ({done.returncode}): "
                                       f"{done.stderr.strip()[-2000:]}")
                made = sorted(p.name for p in figures.rglob("*") if p.suffix in FIGURE_SUFFIXES)
                changed = differing(figures, root / "figures")
            rows.append({"repetition": rep, "wall_s": wall, "figures": len(made), "differing": len(changed),
                         "cache": "cold" if rep < 0 else "warm"})
            log(f"  replay {'cold' if rep < 0 else rep}: {wall:.1f} s, {len(made)} figure files, "
                f"{len(changed)} not byte-identical to figures/" + (f" ({', '.join(changed[:5])})" if changed else ""))
    return rows


def result(rows: list[dict]) -> dict:
    s = summarize(r["wall_s"] for r in rows if r.get("cache", "warm") == "warm")
    cold = [r["wall_s"] for r in rows if r.get("cache") == "cold"]
    op, target = TARGET
    return {"name": "replay_speed", "title": "Replay speed", "unit": "s",
            "metric": f"seconds to regenerate every figure and the report from data/ ({os.cpu_count()} cores)",
            "summary": s.as_dict(), "value": s.median, "op": op, "target": target,
            # a replay that drew other figures than the committed ones is no faster replay of them
            "verdict": "below target" if any(r.get("differing") for r in rows) else verdict(s.median, op, target),
            "rows": rows,
            "figure": f"replay = {s.text('{:.1f}')} s for {rows[-1]['figures'] if rows else 0} figure files "
                      f"({replay_jobs(len(section_notebooks()))} notebooks side by side, warm chart cache"
                      + (f"; {cold[0]:.1f} s with an empty one" if cold else "")
                      + (f"; {max(r.get('differing', 0) for r in rows)} not byte-identical to figures/"
                         if any("differing" in r for r in rows) else "") + f"); target {op} {target:.0f} s"}
