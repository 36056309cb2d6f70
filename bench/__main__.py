"""python -m bench [--quick] [--only NAMES]: run the benchmarks, write bench/results/, update
docs/performance.md. Each benchmark prints its figure last."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hostnet.runner import preflight
from hostnet.testbed import embedded

from . import analysis_speed, live, replay_speed, results, sweep_overhead

NAMES = ("fidelity", "profiler_cost", "cpu_accounting", "sweep_overhead", "analysis_speed", "replay_speed")
FULL = {"variants": ["hand", "harness", *(f"perf{f}" for f in live.PERF_FREQS), "default"], "repetitions": 4,
        "duration": 4, "warmup": 2, "sweep_points": 3, "sweep_duration": 10, "sweep_warmup": 2,
        "analysis_sizes": [10**5, 10**6], "analysis_reps": 2, "replay_reps": 2}
QUICK = {"variants": ["hand", "harness", "perf999", "default"], "repetitions": 1, "duration": 2, "warmup": 1,
         "sweep_points": 2, "sweep_duration": 2, "sweep_warmup": 1, "analysis_sizes": [2 * 10**4],
         "analysis_reps": 1, "replay_reps": 1}


def log(msg: str) -> None:
    print(msg, flush=True)


def report(out: Path, res: dict, done: list) -> None:
    results.write_result(out, res)
    done.append(res)
    print(res["figure"], flush=True)  # the benchmark's figure, printed last


def resummarize(out: Path, update_doc: bool = True) -> int:
    """Recompute benchmarks 1-2 from their CSV rows (e.g. after a change in how they are judged);
    the others are taken as stored."""
    import pandas as pd
    meta = json.loads((out / "summary.json").read_text())["meta"]
    rows: list[dict] = []
    if (out / "profiler_cost.csv").exists() and (out / "fidelity.csv").exists():
        hand = pd.read_csv(out / "fidelity.csv")
        rows = pd.concat([hand[hand["variant"] == "hand"], pd.read_csv(out / "profiler_cost.csv")]).to_dict("records")
    done = []
    for name in NAMES:
        if name in ("fidelity", "profiler_cost") and rows:
            res = live.fidelity(rows) if name == "fidelity" else live.profiler_cost(rows)
            results.write_result(out, res)
        elif (out / f"{name}.json").exists():
            res = json.loads((out / f"{name}.json").read_text())
        else:
            continue
        done.append(res)
        print(res["figure"])
    text = results.write_summary(out, done, meta)
    if update_doc and not meta["quick"]:
        results.update_doc(text)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="short runs, one repetition (development)")
    ap.add_argument("--only", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/performance.md")
    ap.add_argument("--results", type=Path, help="write results here instead of bench/results/<date>-<commit>/")
    ap.add_argument("--resummarize", type=Path, metavar="DIR",
                    help="judge a results directory again from its stored rows (no runs), rewrite its summary")
    args = ap.parse_args(argv)
    if args.resummarize:
        return resummarize(args.resummarize, update_doc=not args.no_doc)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = set(only) - set(NAMES)
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}")
    p = QUICK if args.quick else FULL
    out = args.results or results.out_dir(args.quick)
    out.mkdir(parents=True, exist_ok=True)
    head, dirty = results.commit()
    started = time.monotonic()
    done: list[dict] = []
    live_rows: list[dict] = []
    with results.LoadSampler() as load, tempfile.TemporaryDirectory(prefix="hostnet-bench-") as tmp:
        tmp = Path(tmp)
        if set(only) & set(NAMES[:5]):
            with embedded(f"b{os.getpid() % 10**7}") as tb:
                versions = preflight(tb)
                kernel = next(iter(versions.values()))["kernel"]
                if set(only) & set(NAMES[:3]):
                    log(f"== benchmarks 1-3: {', '.join(p['variants'])} x {p['repetitions']}, alternating")
                    live_rows = live.run_variants(tb, p["variants"], p["repetitions"], p["duration"], p["warmup"],
                                                  tmp / "runs", "bench", log)
                    for name, fn in (("fidelity", live.fidelity), ("profiler_cost", live.profiler_cost),
                                     ("cpu_accounting", live.cpu_agreement)):
                        if name in only:
                            log(f"== {name}")
                            report(out, fn(live_rows), done)
                if "sweep_overhead" in only:
                    log(f"== sweep_overhead: {p['sweep_points']} points of {p['sweep_duration']} s")
                    m = sweep_overhead.measure(tb, tmp / "runs", "bench-sweep", p["sweep_points"],
                                               p["sweep_duration"], p["sweep_warmup"])
                    sweep_overhead.write_profile(m, out)
                    report(out, sweep_overhead.result(m, p["sweep_duration"], p["sweep_warmup"]), done)
                if "analysis_speed" in only:
                    log(f"== analysis_speed: {p['analysis_sizes']} samples")
                    rows = analysis_speed.measure(tb, p["analysis_sizes"], p["analysis_reps"], tmp, kernel, log)
                    report(out, analysis_speed.result(rows), done)
        if "replay_speed" in only:
            log("== replay_speed")
            report(out, replay_speed.result(replay_speed.measure(p["replay_reps"], log)), done)
    loads = [r["loadavg_1m"] for r in load.rows] or [float("nan")]
    results.write_result(out, {"name": "load", "rows": load.rows})
    flagged = [r for r in live_rows if r.get("contaminated")]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": head, "dirty": dirty,
            "quick": args.quick, "params": p, "machine": results.machine(), "wall_s": time.monotonic() - started,
            "load": {"loadavg_median": statistics.median(loads), "loadavg_max": max(loads),
                     "busy_pct_median": statistics.median([r["busy_pct_all_cpus"] for r in load.rows] or [0])},
            "live_runs": sum(1 for r in live_rows if r["variant"] != "hand"), "contaminated_runs": len(flagged)}
    text = results.write_summary(out, done, meta)
    if not (args.quick or args.no_doc or args.results):
        results.update_doc(text)
    print(f"\nresults: {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
