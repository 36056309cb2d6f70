"""Benchmark 7: flows that start together. On the embedded testbed driven through SSH (an sshd per
namespace, hostnet.hosts.sshd), how far apart n clients start, at n = 2, 8 and 24:

  one-by-one   each client started by its own SSH round trip (Host.start, as hostnet did before
               issue 18), the start time being when its round trip returned (an upper bound)
  start_many   every client of a host in one round trip (SshHost.start_many), each start time
               read on the host's own clock ($EPOCHREALTIME as bash forks it)
  run_point    a whole point (one-to-one flows, no profiler) through run_point: the spread it
               records and whether every flow covered its measurement window (else the run fails
               with that reason)

The clients are `sleep` for the first two (what is measured is the start, not the flow); the
controller and the namespaces share one clock, so both start times are comparable.
"""
from __future__ import annotations

import time

from hostnet.measure import config as stackconfig
from hostnet.hosts import Host
from hostnet.measure.runner import Probing, RunFailed, RunRequest, run_point
from hostnet.store import load_manifest
from hostnet.derive.workloads import LongFlows

from .stats import summarize, verdict

FLOWS = (2, 8, 24)
TARGET = ("<=", 0.050)  # seconds of start spread at n = 24 through SSH, run_point
CONFIG = "all-opts"


def spread_one_by_one(host, n: int) -> float:
    procs, at = [], []
    try:
        for _ in range(n):
            procs.append(host.start(["sleep", "3"]))
            at.append(time.time())
    finally:
        for p in procs:
            p.close()
    return max(at) - min(at)


def spread_start_many(host, n: int) -> float:
    started = host.start_many([["sleep", "3"]] * n)
    try:
        at = [t for _, t in started]
        return max(at) - min(at)
    finally:
        for p, _ in started:
            p.close()


def measure(tb, repetitions: int, runs_dir, duration_s: int, warmup_s: int, log) -> list[dict]:
    host = tb.endpoints["sender"].host
    rows = []
    for rep in range(repetitions):
        for n in FLOWS:
            for method, fn in (("one-by-one", spread_one_by_one), ("start_many", spread_start_many)):
                if method == "start_many" and type(host).start_many is Host.start_many:
                    continue  # not an SSH host: nothing to compare
                rows.append({"repetition": rep, "n": n, "method": method, "spread_s": fn(host, n)})
                log(f"  rep {rep} n={n:>2} {method:>10}: {rows[-1]['spread_s'] * 1e3:.1f} ms")
            row = {"repetition": rep, "n": n, "method": "run_point"}
            try:
                path = run_point(tb, RunRequest(
                    stackconfig.get_config(CONFIG), LongFlows(duration_s, warmup_s, "one-to-one", n), runs_dir,
                    "bench-flow-start", experiment="bench", repetition=rep, run_id=f"flows{n}-r{rep}",
                    probing=Probing(profile=False)))
                w = load_manifest(path)["window"]
                row.update(spread_s=w["start_spread_s"], covered=True, window_s=w["seconds"])
            except RunFailed as exc:
                row.update(spread_s=float("nan"), covered="not covered by every flow" not in str(exc),
                           failed=True, error=str(exc)[:400])
            rows.append(row)
            shown = (f"FAILED ({row['error']})" if row.get("failed") else
                     f"{row['spread_s'] * 1e3:.1f} ms, window {row['window_s']:.2f} s")
            log(f"  rep {rep} n={n:>2}  run_point: {shown}")
    return rows


def result(rows: list[dict], transport: str = "SSH (an sshd per namespace)") -> dict:
    def spreads(method, n):
        return summarize(r["spread_s"] for r in rows if r["method"] == method and r["n"] == n
                         and not r.get("failed"))
    at24 = spreads("run_point", max(FLOWS))
    op, target = TARGET
    uncovered = [r for r in rows if r["method"] == "run_point" and r.get("covered") is False]
    failed = [r for r in rows if r.get("failed")]
    judgement = verdict(at24.median, op, target)
    if uncovered:
        judgement = "below target"
    per = {m: {str(n): spreads(m, n).as_dict() for n in FLOWS} for m in ("one-by-one", "start_many", "run_point")}
    text = "; ".join(f"n={n}: " + ", ".join(f"{m} {per[m][str(n)]['median'] * 1e3:.1f} ms" for m in per
                                          if per[m][str(n)]["n"]) for n in FLOWS)
    return {"name": "flow_start", "title": "Flow start spread", "unit": "s",
            "metric": f"seconds between the first and the last of {max(FLOWS)} flows' starts, run_point through "
                      f"{transport}; and every run's window covered by every flow",
            "summary": at24.as_dict(), "value": at24.median, "op": op, "target": target, "verdict": judgement,
            "per_method": per, "uncovered_runs": len(uncovered), "rows": rows,
            "figure": f"flow start spread through {transport}: {text}; windows not covered by every flow: "
                      f"{len(uncovered)} of {sum(r['method'] == 'run_point' for r in rows)} runs"
                      + (f"; failed runs: {len(failed)} ({failed[0]['error'][:160]})" if failed else "")
                      + f"; target {op} {target * 1e3:.0f} ms at n={max(FLOWS)}"}


def chart(res: dict):
    """Spread against n, one line per method (log scale: one-by-one grows with n round trips)."""
    import altair as alt
    import pandas as pd
    data = pd.DataFrame([{"flows": int(n), "method": m, "spread_ms": s["median"] * 1e3}
                         for m, per_n in res["per_method"].items() for n, s in per_n.items() if s["n"]])
    return alt.Chart(data, title=f"Flow start spread ({res['metric'].split(',')[0]})").mark_line(point=True).encode(
        x=alt.X("flows:Q", title="flows started"), y=alt.Y("spread_ms:Q", title="start spread (ms)",
                                                          scale=alt.Scale(type="log")),
        color=alt.Color("method:N", title="start"))
