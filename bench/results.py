"""Results on disk: one JSON + CSV per benchmark per run under bench/results/<date>-<commit>/, a
summary, and the table in docs/performance.md (between its bench markers)."""
from __future__ import annotations

import json
import os
import platform
import threading
import time
from pathlib import Path

import pandas as pd

from hostnet.hosts import LocalHost

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "performance.md"
BEGIN, END = "<!-- bench:begin (written by `make bench`) -->", "<!-- bench:end -->"


def commit() -> tuple[str, bool]:
    git = LocalHost("bench")
    head = git.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=False).stdout.strip()
    dirty = bool(git.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "hostnet", "bench"],
                         check=False).stdout.strip())
    return head or "nogit", dirty


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    mem = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
               if line.startswith("MemTotal"))
    return {"host": platform.node(), "kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(),
            "mem_gb": round(mem / 2**20, 1), "python": platform.python_version()}


def out_dir(quick: bool) -> Path:
    head, dirty = commit()
    name = f"{time.strftime('%Y%m%d', time.gmtime())}-{head}{'-dirty' if dirty else ''}"
    d = RESULTS / (f"quick-{name}" if quick else name)
    d.mkdir(parents=True, exist_ok=True)
    return d


class LoadSampler:
    """The machine's load average and busy share every few seconds while the benchmarks run."""

    def __init__(self, every_s: float = 5.0):
        self.every_s, self.rows = every_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _busy(self) -> tuple[int, int]:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(f) - f[3] - f[4], sum(f)

    def _loop(self):
        prev = self._busy()
        while not self._stop.wait(self.every_s):
            now = self._busy()
            busy = 100.0 * (now[0] - prev[0]) / max(1, now[1] - prev[1])
            self.rows.append({"t": time.time(), "loadavg_1m": float(Path("/proc/loadavg").read_text().split()[0]),
                              "busy_pct_all_cpus": busy})
            prev = now

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def write_result(out: Path, res: dict) -> None:
    rows = res.get("rows", [])
    (out / f"{res['name']}.json").write_text(json.dumps(res, indent=1, default=str))
    if rows:
        pd.DataFrame(rows).to_csv(out / f"{res['name']}.csv", index=False)


def fmt(v: float, unit: str) -> str:
    if v != v:
        return "—"
    return f"{v:.1f} s" if unit == "s" else f"{v:.2f} pp" if unit == "percentage points" else f"{v:.3f}"


def table(results: list[dict]) -> str:
    lines = ["| # | benchmark | measured | median (range, n) | target | verdict |", "|---|---|---|---|---|---|"]
    for i, r in enumerate(results, 1):
        s = r["summary"]
        rng = f"{fmt(s['median'], r['unit'])} ({fmt(s['min'], r['unit'])}–{fmt(s['max'], r['unit'])}, n={s['n']})"
        lines.append(f"| {i} | {r['title']} | {r['metric']} | {rng} → **{fmt(r['value'], r['unit'])}** | "
                     f"{r['op']} {r['target']} | {r['verdict']} |")
    return "\n".join(lines)


def write_summary(out: Path, results: list[dict], meta: dict) -> str:
    (out / "summary.json").write_text(json.dumps({"meta": meta, "results": [
        {k: v for k, v in r.items() if k not in ("rows", "profile")} for r in results]}, indent=1, default=str))
    m = meta["machine"]
    load = meta.get("load", {})
    rej = meta.get("rejudged")
    text = (f"Run {meta['date']} on `{m['host']}` ({m['cpu']}, {m['cores']} cores, {m['mem_gb']} GB, "
            f"kernel {m['kernel']}), commit `{meta['commit']}`{' (uncommitted changes)' if meta['dirty'] else ''}, "
            f"{'quick mode' if meta['quick'] else 'full mode'}, {meta['wall_s']:.0f} s in all. "
            f"Machine load while it ran: 1-min load average median {load.get('loadavg_median', float('nan')):.2f} "
            f"(max {load.get('loadavg_max', float('nan')):.2f}); runs flagged for foreign load: "
            f"{meta.get('contaminated_runs', 0)} of {meta.get('live_runs', 0)}"
            + (f"; failed runs: {meta['failed_runs']}" if meta.get("failed_runs") else "")
            + f". Results: `{rej['source'] if rej else shown(out)}/`."
            + (f" Judged again on {rej['date']} by `python -m bench --resummarize` with commit `{rej['commit']}`"
               f"{' (uncommitted changes)' if rej['dirty'] else ''}, from the stored rows." if rej else "")
            + "\n\n"
            + table(results) + "\n\n" + "\n".join(f"- {r['figure']}" for r in results) + "\n")
    (out / "summary.md").write_text(text)
    return text


def shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def update_doc(text: str, doc: Path = DOC) -> None:
    """Replace the generated block of docs/performance.md (the prose around it is kept)."""
    body = doc.read_text() if doc.exists() else f"# Performance\n\n{BEGIN}\n{END}\n"
    if BEGIN not in body or END not in body:
        body += f"\n{BEGIN}\n{END}\n"
    head, rest = body.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
