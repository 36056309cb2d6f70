"""python -m bench [--quick] [--only NAMES]: run the benchmarks, write bench/results/, update
docs/performance.md (only when all of them ran). Each benchmark prints its figure last."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hostnet.measure.runner import preflight
from hostnet.testbed import embedded

from . import analysis_speed, cli_start, flow_start, live, replay_speed, results, sweep_overhead, text_speed

NAMES = ("fidelity", "profiler_cost", "cpu_accounting", "sweep_overhead", "analysis_speed", "replay_speed",
         "flow_start", "cli_start", "text_speed")
FULL = {"variants": ["hand", "harness", *(f"perf{f}" for f in live.PERF_FREQS), *live.COST_PARTS, "default",
                     *live.CPU_VARIANTS, *live.SPIN_VARIANTS],
        "repetitions": 4, "duration": 4, "warmup": 2, "sweep_points": 3, "sweep_duration": 10, "sweep_warmup": 2,
        "sweep_repetitions": 4, "sweep_profile": True, "analysis_sizes": [10**4, 10**5, 10**6], "analysis_reps": 2,
        "replay_reps": 5, "flow_reps": 3, "flow_duration": 4, "flow_warmup": 2, "cli_reps": 5,
        "text_sizes": [10**4, 10**5, 10**6], "text_reps": 2}
QUICK = {"variants": ["hand", "harness", "perf999", "default", *live.CPU_VARIANTS, *live.SPIN_VARIANTS],
         "repetitions": 1,
         "duration": 2, "warmup": 1, "sweep_points": 2, "sweep_duration": 2, "sweep_warmup": 1,
         "sweep_repetitions": 1, "sweep_profile": True, "analysis_sizes": [2 * 10**4], "analysis_reps": 1,
         "replay_reps": 1, "flow_reps": 1, "flow_duration": 2, "flow_warmup": 1, "cli_reps": 2,
         "text_sizes": [2 * 10**4], "text_reps": 1}


def log(msg: str) -> None:
    print(msg, flush=True)


def report(out: Path, res: dict, done: list) -> None:
    results.write_result(out, res)
    done.append(res)
    print(res["figure"], flush=True)  # the benchmark's figure, printed last


def update_doc_if_complete(done: list[dict], text: str, out: Path) -> bool:
    """The generated block of docs/performance.md holds one run of every benchmark; a partial
    run (--only, or a benchmark that produced nothing) leaves it alone and says where it went."""
    missing = [n for n in NAMES if n not in {r["name"] for r in done}]
    if missing:
        print(f"docs/performance.md not rewritten: {', '.join(missing)} did not run; results: {out}", flush=True)
        return False
    results.update_doc(text)
    return True


def rejudge(out: Path, meta: dict) -> list[dict]:
    """Judge the stored results of a directory again with the current code, from their rows (no
    runs): benchmarks 1-2 from their CSV rows, 3 from its per-side rows, 4 from its stored sweeps;
    5-6 as stored. Results of the earlier formats are read too (see live_rows_stored)."""
    import pandas as pd
    rows: list[dict] = []
    if (out / "profiler_cost.csv").exists() and (out / "fidelity.csv").exists():
        hand = pd.read_csv(out / "fidelity.csv")
        rows = pd.concat([hand[hand["variant"] == "hand"], pd.read_csv(out / "profiler_cost.csv")]).to_dict("records")
    done = []
    for name in NAMES:
        if name in ("fidelity", "profiler_cost") and rows:
            res = live.fidelity(rows) if name == "fidelity" else live.profiler_cost(rows)
        elif name == "cpu_accounting" and (out / "cpu_accounting.csv").exists():
            per_run = cpu_rows_stored(out, rows)
            stored = json.loads((out / "cpu_accounting.json").read_text())
            res = live.cpu_agreement(stored.get("runs", []), per_run)
        elif name == "sweep_overhead" and (out / "sweep_overhead.json").exists():
            stored = json.loads((out / "sweep_overhead.json").read_text())
            p = meta["params"]
            note = "" if "sweeps" in stored else (
                "re-judged from the one stored sweep of the earlier benchmark: run under cProfile, "
                "perf only, no latency probe")
            res = sweep_overhead.result(sweep_overhead.stored_sweeps(stored), p["sweep_duration"], p["sweep_warmup"],
                                        note, "default profiling" if not note else "perf only, as stored")
        elif (out / f"{name}.json").exists():
            res = json.loads((out / f"{name}.json").read_text())
        else:
            continue
        done.append(res)
    return done


def cpu_rows_stored(out: Path, live_rows: list[dict]) -> list[dict]:
    """Benchmark 3's per-side rows as stored. Rows of the earlier format came from the "default"
    runs at full load and carry no foreign-load flag: it is taken from profiler_cost's row of the
    same run."""
    import pandas as pd
    per_run = pd.read_csv(out / "cpu_accounting.csv").to_dict("records")
    flags = {r["repetition"]: r.get("contaminated") for r in live_rows if r["variant"] == "default"}
    for p in per_run:
        if "variant" not in p:
            p.update(variant="default", load="full", contaminated=live.is_true(flags.get(p["repetition"])))
        p["contaminated"] = live.is_true(p.get("contaminated"))
    return per_run


def resummarize(src: Path, update_doc: bool = True, out: Path | None = None) -> int:
    """Judge a results directory again from its stored rows and rewrite its summary (and the doc's
    generated block, when all of them are there and it is not a quick run). With out, src is copied
    there first and left untouched (e.g. a committed results directory)."""
    import shutil
    if out and out.resolve() != src.resolve():
        shutil.copytree(src, out, dirs_exist_ok=True)
    else:
        out = src
    meta = json.loads((out / "summary.json").read_text())["meta"]
    head, dirty = results.commit()
    meta["rejudged"] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": head, "dirty": dirty,
                        "source": results.shown(src)}
    done = rejudge(out, meta)
    for res in done:
        results.write_result(out, res)
        print(res["figure"])
    text = results.write_summary(out, done, meta)
    if update_doc and not meta["quick"]:
        update_doc_if_complete(done, text, out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="short runs, one repetition (development)")
    ap.add_argument("--only", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/performance.md")
    ap.add_argument("--results", type=Path, help="write results here instead of bench/results/<date>-<commit>/")
    ap.add_argument("--resummarize", type=Path, metavar="DIR",
                    help="judge a results directory again from its stored rows (no runs), rewrite its summary; "
                         "with --results, into a copy (DIR untouched, docs not rewritten)")
    args = ap.parse_args(argv)
    if args.resummarize:
        return resummarize(args.resummarize, update_doc=not (args.no_doc or args.results), out=args.results)
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
        if set(only) & {*NAMES[:5], "text_speed"}:
            with embedded(f"b{os.getpid() % 10**7}") as tb:
                versions = preflight(tb)
                kernel = next(iter(versions.values()))["kernel"]
                if set(only) & set(NAMES[:3]):
                    variants = live.variants_for(only, p["variants"])
                    log(f"== benchmarks 1-3: {', '.join(variants)} x {p['repetitions']}, alternating")
                    live_rows = live.run_variants(tb, variants, p["repetitions"], p["duration"], p["warmup"],
                                                  tmp / "runs", "bench", log)
                    for name, fn in (("fidelity", live.fidelity), ("profiler_cost", live.profiler_cost),
                                     ("cpu_accounting", live.cpu_agreement)):
                        if name in only:
                            log(f"== {name}")
                            report(out, fn(live_rows), done)
                if "sweep_overhead" in only:
                    log(f"== sweep_overhead: {p['sweep_repetitions']} sweeps of {p['sweep_points']} points "
                        f"of {p['sweep_duration']} s" + (" (+1 under cProfile, not counted)"
                                                         if p["sweep_profile"] else ""))
                    m = sweep_overhead.measure(tb, tmp / "runs", "bench-sweep", p["sweep_points"],
                                               p["sweep_duration"], p["sweep_warmup"], p["sweep_repetitions"],
                                               p["sweep_profile"], log)
                    sweep_overhead.write_profile(m, out)
                    report(out, sweep_overhead.result(m, p["sweep_duration"], p["sweep_warmup"]), done)
                if "analysis_speed" in only:
                    log(f"== analysis_speed: {p['analysis_sizes']} samples")
                    rows = analysis_speed.measure(tb, p["analysis_sizes"], p["analysis_reps"], tmp, kernel, log)
                    report(out, analysis_speed.result(rows), done)
                if "text_speed" in only:
                    log(f"== text_speed: perf script text of {p['text_sizes']} samples")
                    rows = text_speed.measure(tb, p["text_sizes"], p["text_reps"], tmp, kernel, log)
                    report(out, text_speed.result(rows), done)
        if "cli_start" in only:
            log("== cli_start")
            report(out, cli_start.result(cli_start.measure(p["cli_reps"], log)), done)
        if "replay_speed" in only:
            log("== replay_speed")
            report(out, replay_speed.result(replay_speed.measure(p["replay_reps"], log)), done)
        if "flow_start" in only:
            log(f"== flow_start: n = {', '.join(map(str, flow_start.FLOWS))} through SSH, x {p['flow_reps']}")
            with embedded(f"f{os.getpid() % 10**7}", ssh=True) as tb:
                res = flow_start.result(flow_start.measure(tb, p["flow_reps"], tmp / "runs", p["flow_duration"],
                                                           p["flow_warmup"], log))
            report(out, res, done)
            from hostnet.charts import plots
            plots.save(flow_start.chart(res), out / "flow_start")
    loads = [r["loadavg_1m"] for r in load.rows] or [float("nan")]
    results.write_result(out, {"name": "load", "rows": load.rows})
    flagged = [r for r in live_rows if live.is_true(r.get("contaminated"))]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": head, "dirty": dirty,
            "quick": args.quick, "params": p, "machine": results.machine(), "wall_s": time.monotonic() - started,
            "load": {"loadavg_median": statistics.median(loads), "loadavg_max": max(loads),
                     "busy_pct_median": statistics.median([r["busy_pct_all_cpus"] for r in load.rows] or [0])},
            "live_runs": sum(1 for r in live_rows if r["variant"] != "hand" and not live.failed(r)),
            "contaminated_runs": len(flagged), "failed_runs": sum(1 for r in live_rows if live.failed(r))}
    text = results.write_summary(out, done, meta)
    if not (args.quick or args.no_doc or args.results):
        update_doc_if_complete(done, text, out)
    print(f"\nresults: {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
