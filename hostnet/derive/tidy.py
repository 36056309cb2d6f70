"""A run directory's raw files -> its tidy rows (one per run, side, metric, category, flow).

The runner calls point_rows() once the window's files are written; `hostnet rederive` calls
rederive() on a stored run, offline. Everything here is pure (it reads the raw text handed to it
and the manifest, and notes what it found in the manifest: CPU accounting method, foreign load,
bottleneck, taxonomy version, top symbols); a side's CPU rows are cpu.py's, the counters' counters.py's.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from .. import store, taxonomy
from ..analysis import ledger, metrics
from ..analysis.attribution import ATTRIBUTION_RULE
from ..parsers.perf_report import parse_perf_report
from ..store import Rows
from . import udp_loss
from .counters import counter_rows, note_foreign_load, receive_latency_rows
from .cpu import (CPU_METRICS, CPU_RULE, breakdown_rows, cpu_rows, ledger_books, ledger_rows, side_cpu_rows,
                  tpc_rows)
from .patterns import Flow
from .workloads import flow_class, flow_part, from_description, workload_comms

def client_file(workload, flow: Flow) -> str:
    """The raw file holding a flow's client output."""
    part = flow_part(workload, flow)
    return f"{part.tool}_client_{flow.index}.{part.client_suffix}"


def server_file(workload, flow: Flow) -> str:
    """The raw file holding a flow's server output (stdout, then stderr)."""
    return f"{flow_part(workload, flow).tool}_server_{flow.index}.txt"


@dataclass(frozen=True)
class FlowOutput:
    """What a flow's tools printed: the client's, and the server's (read where the workload parses it)."""
    client: str
    server: str = ""


class Derived(NamedTuple):
    """What a run's raw files give: its tidy rows, and the notes for its manifest (the caller records
    them: the derivation only reads the manifest)."""
    rows: pd.DataFrame
    notes: dict


def point_rows(cfg, workload, manifest: dict, flows: list[Flow], cpus: dict, outputs: dict[int, FlowOutput],
               raw: dict, ep_raw: dict, our_pids, kernel: str) -> Derived:
    """Every tidy row of a flow point: flows, CPU per side, breakdowns, latency, foreign load,
    tpc, counters, and the workload's own rows (UDP loss by location)."""
    out = Rows(manifest, cfg.name)
    tax = taxonomy.load(taxonomy.series_for(kernel))
    total = flow_rows(out, workload, flows, outputs, manifest)
    ledgers: dict[str, dict] = {}
    busy = {side: cpu_rows(out, manifest, side, machines, raw, tax, workload, ledgers)
            for side, machines in cpus.items()}
    receive_latency_rows(out, raw)
    note_foreign_load(out, manifest, raw, our_pids)
    cv = [r["value"] for r in out.rows if r["metric"] == "flow_throughput_cv_pct"]
    out.notes["unsteady"] = bool(cv) and max(cv) > metrics.STEADY_CV_LIMIT_PCT
    out.notes["steady_rule"] = metrics.STEADY_RULE
    out.notes["taxonomy"] = tax.version
    tpc_rows(out, total, busy)
    ledger_rows(out, manifest, total, busy, ledgers)
    counter = Rows(manifest, cfg.name)
    counter_rows(counter, manifest, cpus, raw, ep_raw)
    frames = [out.frame(), pd.DataFrame(counter.rows)]
    extra = workload.window_rows(manifest, raw, ep_raw)
    if extra:
        frames.append(pd.DataFrame(extra))
    return Derived(pd.concat(frames, ignore_index=True), {**out.notes, **counter.notes})


def sum_side(metric: str) -> str:
    """Which side a flow metric's sum over the point's flows belongs to."""
    if metric == "retransmits_count" or metric.startswith(("sender_", "zerocopy_")):
        return "sender"
    return "receiver" if metric.startswith("receiver_") else "both"


def flow_rows(out: Rows, workload, flows: list[Flow], outputs: dict[int, FlowOutput], manifest: dict | None = None
              ) -> float:
    """Per-flow rows and their sums; returns the total throughput (Gbit/s). manifest: the run's, whose
    window the flows' steadiness is judged over (flow_window)."""
    sums: dict[str, float] = defaultdict(float)
    for f in flows:
        part = flow_part(workload, f)
        extra = {"window": flow_window(manifest, f, part.warmup_s)} if getattr(part, "steadiness", False) else {}
        metrics = list(part.parse_client(outputs[f.index].client, client_file(workload, f), **extra).items())
        if hasattr(part, "parse_server"):  # the workload's server reports its own side (zcflow)
            metrics += part.parse_server(outputs[f.index].server, server_file(workload, f)).items()
        for metric, value in metrics:
            out.add("flow", f"flow_{metric}", value, flow_class(workload, f), flow=str(f.index))
            if not metric.startswith("latency_") and not metric.endswith("_cv_pct"):
                sums[metric] += value
    total = sums["throughput_gbps"]  # every workload reports it (UDP: NaN without the server report)
    for metric, value in sums.items():
        out.add(sum_side(metric), metric, value)
    out.add("both", "flow_count", len(flows))
    return total


def flow_window(manifest: dict | None, flow: Flow, warmup_s: float) -> tuple[float, float] | None:
    """The measurement window on the flow tool's interval clock: seconds from the end of the flow's
    warm-up, which starts when its client's start returned (iperf3 connects a few ms later). None
    where the manifest kept no start for the flow."""
    window = (manifest or {}).get("window", {})
    started = window.get("flow_starts", {}).get(str(flow.index))
    if not started or "start" not in window:
        return None
    origin = started["returned"] + warmup_s
    return window["start"] - origin, window["end"] - origin


# The rows breakdown_rows writes: what re-deriving under a new taxonomy or rule replaces.
BREAKDOWN_METRICS = ("breakdown_pct", "breakdown_attributed_pct", "perf_reattributed_samples_count",
                     "perf_receive_path_samples_count", "perf_vm_exit_samples_count", "perf_busy_samples_count",
                     "perf_foreign_samples_count", "perf_sampling_coverage_ratio",
                     "ledger_pct", "breakdown_nic_pct", "cpu_util_nic_pct", "tpc_nic_gbps")


def rederive(run, kernel_series: str | None = None, force: bool = False) -> bool:
    """Re-derive a stored run's rows from its own raw files where it was recorded under an earlier
    rule: its CPU rows (utilisation, steal, tpc) under the current CPU rule, and its breakdown rows
    under the current taxonomy, attribution rule and ledger; the manifest keeps what it had
    (`rederived`). Returns whether anything changed. Everything else in the run stays.
    force: re-derive under the same rules too (the stored rows checked against their raw files:
    rewritten, and no `rederived` entry added, as nothing changed)."""
    run = Path(run)
    m = store.load_manifest(run)
    if m.get("status") != "ok" or "side_cpus" not in m:  # failed, or no CPU measured (the benches)
        return False
    profiled = "attribution_rule" in m  # else unprofiled, or no stacks kept: no breakdown to redo
    tax = taxonomy.load(kernel_series or taxonomy.series_for(next(iter(m["versions"].values()))["kernel"]))
    cpu_current = m.get("cpu_rule") == CPU_RULE
    bd_current = not profiled or (m["attribution_rule"] == ATTRIBUTION_RULE and m.get("taxonomy") == tax.version
                                  and (not ledger_books(m) or m.get("ledger_rule") == ledger.LEDGER_RULE))
    steady_current = m.get("steady_rule") == metrics.STEADY_RULE
    if cpu_current and bd_current and steady_current and not force:
        return False
    before = {"cpu_rule": m.get("cpu_rule"), "steady_rule": m.get("steady_rule"),
              **(_breakdown_rules(m, m.get("taxonomy")) if profiled else {})}
    machines = {mm for side in m["side_cpus"].values() for mm in side}
    names = (*CPU_FILES, *(PERF_FILES if profiled else ()))
    files = store.raw_texts(run, [f"{mm}.{name}" for mm in machines for name in names])  # raw/ or its archive
    raw = {mm: {name: files[f"{mm}.{name}"] for name in names if f"{mm}.{name}" in files} for mm in machines}
    old = store.read_tidy(run)
    out = Rows(m, old.config.iloc[0])
    replaced = (CPU_METRICS + (BREAKDOWN_METRICS if profiled else ()) + UDP_CPU_METRICS
                + (() if steady_current else ("flow_throughput_cv_pct",)))
    out.rows = old[~old.metric.isin(replaced)].to_dict("records")
    for key in ("undersampled", "bottleneck_nic", "steal_pct", "host_contention"):
        m.pop(key, None)
    if not steady_current:
        steadiness_rows(out, run, m)
    total = float(old.value[(old.side == "both") & (old.metric == "throughput_gbps")].iloc[0])
    busy = {}
    for side, per_machine in m["side_cpus"].items():
        busy[side] = side_cpu_rows(out, side, {mm: set(c) for mm, c in per_machine.items()}, raw)
    tpc_rows(out, total, busy)
    if "placement" in m:  # the end-host loss study's CPU rows per role, on the receiving machine
        machine = m["testbed"]["endpoints"][m["flows"][0]["receiver"]]["machine"]
        out.rows += udp_loss.cpu_rows(m, machine, raw[machine])
    ledgers: dict[str, dict] = {}
    if profiled:
        comms = workload_comms(from_description(m["workload"]))
        for side, per_machine in m["side_cpus"].items():
            cpu_sets = {mm: set(c) for mm, c in per_machine.items()}
            records = [(r, cpus) for mm, cpus in cpu_sets.items()
                       for r in parse_perf_report(raw[mm]["perf_report.txt"], f"{mm}.perf_report.txt")]
            breakdown_rows(out, m, side, cpu_sets, records, raw, tax, comms, ledgers)
        ledger_rows(out, m, total, busy, ledgers)
        m["taxonomy"] = tax.version
    m.update(out.notes)
    if not (cpu_current and bd_current and steady_current):
        now = {"cpu_rule": CPU_RULE, "steady_rule": metrics.STEADY_RULE,
               **(_breakdown_rules(m, tax.version) if profiled else {})}
        m.setdefault("rederived", []).append({**before, "to": now})
    store.rewrite_run(run, m, pd.DataFrame(out.rows))
    return True


def steadiness_rows(out: Rows, run, m: dict) -> None:
    """A stored run's per-flow steadiness again from its clients' own reports, under the current
    rule (metrics.steadiness_cv over the run's window), and its unsteady flag."""
    workload = from_description(m["workload"])
    flows = [Flow(**f) for f in m.get("flows", [])]
    parts = {f.index: flow_part(workload, f) for f in flows}
    steady = [f for f in flows if getattr(parts[f.index], "steadiness", False)]
    texts = store.raw_texts(run, [client_file(workload, f) for f in steady])
    cv = []
    for f in steady:
        name = client_file(workload, f)
        if name not in texts:
            continue
        value = parts[f.index].parse_client(texts[name], name, window=flow_window(m, f, parts[f.index].warmup_s)
                                            ).get("throughput_cv_pct")
        if value is not None:
            out.add("flow", "flow_throughput_cv_pct", value, flow_class(workload, f), flow=str(f.index))
            cv.append(value)
    m["unsteady"] = bool(cv) and max(cv) > metrics.STEADY_CV_LIMIT_PCT
    m["steady_rule"] = metrics.STEADY_RULE


def _breakdown_rules(m: dict, taxonomy_version) -> dict:
    return {"attribution_rule": m["attribution_rule"], "taxonomy": taxonomy_version,
            "ledger_rule": m.get("ledger_rule")}


# The raw files each re-derivation reads, per machine.
CPU_FILES = ("proc_stat_before.txt", "proc_stat_after.txt", "proc_stat_monotonic_s.txt", "clk_tck.txt")


PERF_FILES = ("perf_report.txt", "perf_folded.txt", "perf_header.txt", "perf_enabled_s.txt")


UDP_CPU_METRICS = ("cpu_busy_pct", "cpu_softirq_pct")  # udp_loss.window_rows' CPU rows, per role
