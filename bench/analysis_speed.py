"""Benchmark 5: seconds from perf.data to the category tables, ours vs `perf report` alone.

perf.data is recorded here, during a single all-opts flow, at 10 kHz on every CPU (cpu-clock;
both CPUs are busy, so samples ~ 2 x 10 kHz x seconds). Each analysis runs in its own process
(bench/pipeline.py), alternating ours / perf report / perf script alone / the earlier sequential
path (report_files_sequential), so its peak RSS is its own and old and new meet the same load.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hostnet import config as stackconfig
from hostnet.hosts import LocalHost
from hostnet.probes.perf import record_argv
from hostnet.workloads import LongFlows

from .live import CONFIG, start_pair
from .stats import alternating, linear_fit, paired_ratios, summarize, verdict

RECORD_HZ = 10000
MODES = ["ours", "perf-report", "perf-script", "ours-sequential"]
TARGET = ("<=", 1.2)
REPO = Path(__file__).resolve().parent.parent


def record(tb, path: Path, samples: int) -> float:
    """perf record -a -g while a flow runs, long enough for about `samples` samples."""
    cpus = len({c for e in tb.endpoints.values() for c in e.cpus})
    seconds = max(1, round(samples / (RECORD_HZ * cpus)))
    stackconfig.apply(tb, stackconfig.get_config(CONFIG))
    server, client = start_pair(tb, LongFlows(seconds + 2, 0))
    try:
        time.sleep(1)
        host = next(iter(tb.machines.values()))
        host.run([*record_argv(str(path), RECORD_HZ), "--", "sleep", str(seconds)], timeout=seconds + 120)
        client.wait(timeout=seconds + 30)
    finally:
        client.close()
        server.close()
    return seconds


def analyse(mode: str, data: Path, kernel: str) -> dict:
    # env -C: the child imports bench/ from the repository, whatever the caller's directory
    res = LocalHost("bench").run(["env", "-C", str(REPO), sys.executable, "-m", "bench.pipeline", mode,
                                  str(data), kernel], timeout=1800)
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(tb, sizes: list[int], repetitions: int, workdir: Path, kernel: str, log) -> list[dict]:
    rows = []
    for size in sizes:
        data = workdir / f"perf-{size}.data"
        seconds = record(tb, data, size)
        for rep, mode in alternating(MODES, repetitions):
            r = analyse(mode, data, kernel)
            rows.append({"size": size, "record_s": seconds, "repetition": rep, "mode": mode, **r,
                         "perf_data_mb": data.stat().st_size / 1e6})
            log(f"  {size:>9} samples {mode:>11}: {r['wall_s']:.2f} s, peak RSS python "
                f"{r['maxrss_python_mb']:.0f} MB, perf {r['maxrss_children_mb']:.0f} MB")
        data.unlink()
    return rows


def result(rows: list[dict]) -> dict:
    per_size = {}
    for size in sorted({r["size"] for r in rows}):
        mine = [r for r in rows if r["size"] == size]
        a = {r["repetition"]: r["wall_s"] for r in mine if r["mode"] == "ours"}
        b = {r["repetition"]: r["wall_s"] for r in mine if r["mode"] == "perf-report"}
        samples = summarize(r["samples"] for r in mine if r["mode"] == "ours").median
        seq = {r["repetition"]: r["wall_s"] for r in mine if r["mode"] == "ours-sequential"}
        script = [r["wall_s"] for r in mine if r["mode"] == "perf-script"]
        per_size[size] = {"samples": samples, "ratio": summarize(paired_ratios(a, b)).as_dict(),
                          "sequential_ratio": summarize(paired_ratios(seq, b)).as_dict() if seq else None,
                          "sequential_s": summarize(seq.values()).as_dict() if seq else None,
                          "sequential_peak_rss_mb": max((r["maxrss_python_mb"] for r in mine
                                                         if r["mode"] == "ours-sequential"), default=None),
                          "perf_script_s": summarize(script).as_dict() if script else None,
                          "ours_s": summarize(a.values()).as_dict(), "perf_report_s": summarize(b.values()).as_dict(),
                          "ours_peak_rss_mb": max(r["maxrss_python_mb"] for r in mine if r["mode"] == "ours"),
                          "perf_peak_rss_mb": max(r["maxrss_children_mb"] for r in mine),
                          "ours_perf_peak_rss_mb": max(r["maxrss_children_mb"] for r in mine if r["mode"] == "ours"),
                          "stages": {k: summarize(r["stages"][k] for r in mine if r["mode"] == "ours").median
                                     for k in next(r for r in mine if r["mode"] == "ours")["stages"]}}
    largest = per_size[max(per_size)]
    xs = [v["samples"] for v in per_size.values()]
    fit = linear_fit(xs, [v["ours_s"]["median"] for v in per_size.values()])
    mem = linear_fit(xs, [v["ours_peak_rss_mb"] for v in per_size.values()])
    op, target = TARGET
    value = largest["ratio"]["median"]
    text = "; ".join(f"{v['samples']:.3g} samples: ours {v['ours_s']['median']:.2f} s vs perf report "
                     f"{v['perf_report_s']['median']:.2f} s = {v['ratio']['median']:.2f}x, peak RSS "
                     f"{v['ours_peak_rss_mb']:.0f} MB" + _extra(v) for v in per_size.values())
    return {"name": "analysis_speed", "title": "Analysis speed", "unit": "ratio",
            "metric": "seconds perf.data -> category tables (ours) / perf report alone, at the largest size",
            "summary": largest["ratio"], "value": value, "op": op, "target": target,
            "verdict": verdict(value, op, target), "per_size": {str(k): v for k, v in per_size.items()},
            "time_fit": fit, "memory_fit": mem, "rows": rows,
            "figure": f"analysis speed: {text}; time per sample grows x{fit['per_item_growth']:.2f} across sizes, "
                      f"memory per sample x{mem['per_item_growth']:.2f}; target {op} {target}x"}


def _extra(v: dict) -> str:
    """perf script alone (the floor of any path through it) and the earlier path, when measured."""
    out = ""
    if v.get("perf_script_s"):
        out += f" (perf script alone {v['perf_script_s']['median']:.2f} s"
        out += f" = {v['perf_script_s']['median'] / v['perf_report_s']['median']:.2f}x)"
    if v.get("sequential_s"):
        out += (f", earlier sequential path {v['sequential_s']['median']:.2f} s = "
                f"{v['sequential_ratio']['median']:.2f}x, {v['sequential_peak_rss_mb']:.0f} MB")
    return out
