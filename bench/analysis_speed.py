"""Benchmark 5: seconds from perf.data to the category tables, ours vs `perf script` alone with the
same fields (the floor of any path that reads the call chains: ≤ 1.1x) and vs what a user would
otherwise run, `perf script | stackcollapse-perf.pl` (≥ 5x faster), at every size; memory flat.

perf.data is recorded here, during a single all-opts flow, at 10 kHz on every CPU (cpu-clock;
both CPUs are busy, so samples ~ 2 x 10 kHz x seconds). Each analysis runs in its own process
(bench/pipeline.py), alternating ours / perf script alone / the user's pipeline / perf report
alone (which does not read call chains: shown for scale), so its peak RSS is its own and every
mode meets the same load. The earlier sequential path (report_files_sequential) was measured up
to commit 1f12b5d (its results directory); it is left out now.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hostnet.measure import config as stackconfig
from hostnet.hosts import LocalHost
from hostnet.probes.perf import record_argv
from hostnet.derive.workloads import LongFlows

from .live import CONFIG, start_pair
from .stats import alternating, linear_fit, paired_ratios, summarize, verdict

RECORD_HZ = 10000
MODES = ["ours", "perf-script", "script-collapse", "perf-report"]
TARGET = ("<=", 1.1)  # ours / perf script with the same fields, at every size
PIPELINE_TARGET = (">=", 5.0)  # (perf script | stackcollapse-perf.pl) / ours, at every size
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
            log(f"  {size:>9} samples {mode:>15}: " + (f"unsupported: {r['unsupported']}" if "unsupported" in r else
                f"{r['wall_s']:.2f} s, peak RSS python {r['maxrss_python_mb']:.0f} MB, "
                f"children {r['maxrss_children_mb']:.0f} MB"))
        data.unlink()
    return rows


def _by_rep(rows: list[dict], mode: str) -> dict[int, float]:
    return {r["repetition"]: r["wall_s"] for r in rows if r["mode"] == mode and "wall_s" in r}


def result(rows: list[dict]) -> dict:
    per_size = {}
    for size in sorted({r["size"] for r in rows}):
        mine = [r for r in rows if r["size"] == size]
        ours, script, pipe, report = (_by_rep(mine, m) for m in MODES)
        per_size[size] = {
            "samples": summarize(r["samples"] for r in mine if r["mode"] == "ours").median,
            "ratio_script": summarize(paired_ratios(ours, script)).as_dict(),
            "speedup_pipeline": summarize(paired_ratios(pipe, ours)).as_dict() if pipe else None,
            "collapser": next((r["collapser"] for r in mine if r.get("collapser")), None),
            "pipeline_unsupported": next((r["unsupported"] for r in mine if r.get("unsupported")), None),
            "ours_s": summarize(ours.values()).as_dict(), "perf_script_s": summarize(script.values()).as_dict(),
            "pipeline_s": summarize(pipe.values()).as_dict() if pipe else None,
            "perf_report_s": summarize(report.values()).as_dict(),
            "ours_peak_rss_mb": max(r["maxrss_python_mb"] for r in mine if r["mode"] == "ours"),
            "ours_perf_peak_rss_mb": max(r["maxrss_children_mb"] for r in mine if r["mode"] == "ours"),
            "stages": {k: summarize(r["stages"][k] for r in mine if r["mode"] == "ours").median
                       for k in next(r for r in mine if r["mode"] == "ours")["stages"]}}
    xs = [v["samples"] for v in per_size.values()]
    fit = linear_fit(xs, [v["ours_s"]["median"] for v in per_size.values()])
    mem = linear_fit(xs, [v["ours_peak_rss_mb"] for v in per_size.values()])
    op, target = TARGET
    pop, ptarget = PIPELINE_TARGET
    worst = max(per_size.values(), key=lambda v: v["ratio_script"]["median"])
    value = worst["ratio_script"]["median"]
    speedups = [v["speedup_pipeline"]["median"] for v in per_size.values() if v["speedup_pipeline"]]
    judgement = verdict(value, op, target)
    if not speedups:
        judgement += "; pipeline not measured"
    elif verdict(min(speedups), pop, ptarget) != "met":
        judgement = "below target"
    text = "; ".join(f"{v['samples']:.3g} samples: ours {v['ours_s']['median']:.2f} s, perf script alone "
                     f"{v['perf_script_s']['median']:.2f} s = {v['ratio_script']['median']:.2f}x, "
                     + (f"perf script | {v['collapser']} {v['pipeline_s']['median']:.2f} s = "
                        f"{v['speedup_pipeline']['median']:.1f}x slower than ours" if v["speedup_pipeline"] else
                        f"pipeline unsupported ({v['pipeline_unsupported']})")
                     + f", perf report alone {v['perf_report_s']['median']:.2f} s, "
                       f"peak RSS {v['ours_peak_rss_mb']:.0f} MB"
                     for v in per_size.values())
    return {"name": "analysis_speed", "title": "Analysis speed", "unit": "ratio",
            "metric": "seconds perf.data -> category tables, ours / perf script alone (same fields), worst size; "
                      f"and (perf script | stackcollapse-perf.pl) / ours {pop} {ptarget:g} at every size",
            "summary": worst["ratio_script"], "value": value, "op": op, "target": target,
            "verdict": judgement, "per_size": {str(k): v for k, v in per_size.items()},
            "pipeline_speedup_min": min(speedups) if speedups else None,
            "time_fit": fit, "memory_fit": mem, "rows": rows,
            "figure": f"analysis speed: {text}; time per sample grows x{fit['per_item_growth']:.2f} across sizes, "
                      f"memory per sample x{mem['per_item_growth']:.2f}; target ours/perf script {op} {target}x "
                      f"and pipeline/ours {pop} {ptarget:g}x"}
