"""A run directory's raw files -> its tidy rows (one per run, side, metric, category, flow).

The runner calls point_rows() once the window's files are written; everything here is pure (it
reads the raw text handed to it and the manifest, and notes what it found in the manifest:
CPU accounting method, foreign load, bottleneck, taxonomy version, top symbols).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from ..analysis import metrics, ledger
from .. import taxonomy
from ..store import Rows
from ..analysis.attribution import ATTRIBUTION_RULE, breakdown_from_stacks
from ..parsers.bpftrace import parse_bpftrace_maps, subtract_maps
from ..parsers.counters import (
    deltas, interrupt_deltas, parse_ethtool_stats, parse_interrupts, parse_ip_link_stats, parse_perf_stat,
    parse_snmp, parse_softnet_stat, softnet_deltas)
from ..parsers.perf_report import parse_perf_header, parse_perf_report
from ..parsers.perf_script import parse_folded
from ..parsers.procpids import parse_snapshot
from ..parsers.procstat import parse_proc_stat, proc_stat_interval
from ..parsers.rx_prof import parse_rx_prof
from ..probes.rx_prof import rows as rx_prof_rows
from . import udp_loss
from .workloads import Flow, flow_class, flow_part, from_description, workload_comms

# The counters worth a row in the tidy table (everything stays in raw/).
COUNTERS = {
    "snmp": ("Ip.InReceives", "Tcp.RetransSegs", "Tcp.InSegs", "Tcp.OutSegs", "Tcp.InErrs", "Udp.InDatagrams",
             "Udp.InErrors", "Udp.RcvbufErrors", "Udp.OutDatagrams", "Udp.SndbufErrors"),
    "netstat": ("TcpExt.TCPBacklogDrop", "TcpExt.TCPRcvQDrop", "TcpExt.TCPOFOQueue", "TcpExt.TCPSACKReorder",
                "TcpExt.TCPLossProbes", "TcpExt.TCPRcvCoalesce"),
    "link": ("rx.packets", "rx.dropped", "tx.dropped", "rx.errors", "tx.errors"),
}




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


# The /proc/stat fields each side gets a row of (steal: not in busy, its own column).
CPU_FIELDS = ("user", "system", "softirq", "irq", "steal")
# The CPU rule the rows were derived under: busy is wall minus idle, iowait and steal
# (procstat.cpu_utilization); a run recorded under an earlier rule is re-derived (rederive).
CPU_RULE = "steal-apart/1"
# The metrics the CPU rule decides: what re-deriving under a new CPU rule replaces.
CPU_METRICS = ("cpu_util_pct", "cores_count", "tpc_gbps", *(f"cpu_{f}_pct" for f in CPU_FIELDS))


def note_contention(out: Rows, side: str, steal_pct: float, cores: int) -> None:
    """The side's steal in the manifest, and the host-contention flag (analysis.flags reads it) when
    the hypervisor took more than STEAL_LIMIT_PCT of the side's cores on average."""
    out.notes["cpu_rule"] = CPU_RULE
    out.notes.setdefault("steal_pct", {})[side] = round(steal_pct, 2)
    if cores and steal_pct / cores > metrics.STEAL_LIMIT_PCT:
        out.notes.setdefault("host_contention", {})[side] = round(steal_pct / cores, 2)


def cpu_rows(out: Rows, m: dict, side: str, machines: dict[str, set[int]], raw: dict, tax, workload,
             ledgers: dict | None = None) -> float:
    """One side's CPU utilisation and, where it was profiled, its breakdowns; returns busy %.
    ledgers: where the side's attribution goes, for the testbed ledger (breakdown_rows)."""
    busy = side_cpu_rows(out, side, machines, raw)
    if all("perf_report.txt" in raw[machine] for machine in machines):  # else not profiled: no breakdown
        records = [(r, cpu_set) for machine, cpu_set in machines.items()
                   for r in parse_perf_report(raw[machine]["perf_report.txt"], f"{machine}.perf_report.txt")]
        breakdown_rows(out, m, side, machines, records, raw, tax, workload_comms(workload), ledgers)
    return busy


def breakdown_rows(out: Rows, m: dict, side: str, machines: dict[str, set[int]], records: list, raw: dict, tax,
                   comms: list[str], ledgers: dict | None = None) -> None:
    """The side's CPU breakdown by category: leaf symbols (perf report) and, from the call chains,
    the IRQs-off attribution (attribution.py), over this side's CPUs on every machine; comms:
    the workload's processes; ledgers: where the attribution's per-item counts go (ledger_rows)."""
    mine = [r for r, cpu_set in records if r.cpu in cpu_set]
    bd = metrics.breakdown(mine, {r.cpu for r in mine} or {-1}, tax, comms)
    for cat, pct in bd["pct"].items():
        out.add(side, "breakdown_pct", pct, cat)
    stacks = [(smp, n) for machine, cpu_set in machines.items() if "perf_folded.txt" in raw[machine]
              for smp, n in parse_folded(raw[machine]["perf_folded.txt"]) if smp.cpu in cpu_set]
    if stacks:
        att = breakdown_from_stacks(stacks, {smp.cpu for smp, _ in stacks}, tax, comms,
                                    embedded=m["testbed"]["kind"] == "embedded",
                                    loss_injector=bool(m["config"].get("loss_rate")),
                                    gso_for_tso=gso_for_tso(m), gro_off=gro_off(m),
                                    rehearsal=bool(m.get("rehearsal")))
        for cat, pct in att["pct"].items():
            out.add(side, "breakdown_attributed_pct", pct, cat)
        out.add(side, "perf_reattributed_samples_count", att["reattributed_samples"])
        out.add(side, "perf_receive_path_samples_count", att["receive_path_samples"])
        out.add(side, "perf_vm_exit_samples_count", att["vm_exit_samples"])
        out.notes["attribution_rule"] = att["rule"]
        out.notes.setdefault("ipi_category", {})[side] = {"chosen": att["ipi_category"], "senders": att["ipi_senders"]}
        if ledgers is not None:
            ledgers[side] = att
    out.add(side, "perf_busy_samples_count", bd["busy_samples"])
    out.add(side, "perf_foreign_samples_count", bd["foreign_samples"])
    out.notes.setdefault("top_symbols", {})[side] = bd["top_symbols"]
    coverage_rows(out, m, side, machines, raw, bd["busy_samples"] + bd["foreign_samples"])


def gso_for_tso(m: dict) -> bool:
    """The point's TSO is on and its testbed segments in software instead (threaded NAPI on veth)."""
    return bool(m["config"].get("tso")) and m["testbed"].get("rx_steering") == "napi-thread"


def gro_off(m: dict) -> bool:
    """The point has no GRO and its testbed keeps GRO on merging nothing (threaded NAPI on veth)."""
    return not m["config"].get("gro") and m["testbed"].get("rx_steering") == "napi-thread"


def ledger_books(m: dict) -> bool:
    """Whether ledger_rows books the run: the embedded testbed's, or a rehearsal's (its own items)."""
    return m["testbed"]["kind"] == "embedded" or bool(m.get("rehearsal"))


def ledger_rows(out: Rows, m: dict, total_gbps: float, busy: dict[str, float], ledgers: dict[str, dict]) -> None:
    """The testbed ledger (ledger.py) of an embedded point whose sides were both profiled: each
    item's share of each side's raw busy samples, and the NIC-equivalent accounting beside the raw
    one (its breakdown, CPU, tpc and bottleneck side). Nothing raw is replaced. A rehearsal's point
    (the NIC rehearsal's guests) has a ledger of its own: its emulation traps."""
    if not ledger_books(m):
        return
    rehearsal = m["testbed"]["kind"] != "embedded"
    out.notes["ledger_rule"] = ledger.LEDGER_RULE  # applied, or nothing to apply it to (a side not profiled)
    if set(ledgers) != set(busy) or not ledgers:
        return
    sides = {s: {"busy_pct": busy[s], "busy_samples": att["busy_samples"], "stack": att["stack"],
                 "ledger": att["ledger"]} for s, att in ledgers.items()}
    nic = ledger.nic_equivalent(sides, ledger.peers_of(m), ledger.REHEARSAL_ITEMS if rehearsal else ledger.ITEMS)
    for s, acc in nic.items():
        for it, pct in acc["ledger_pct"].items():
            out.add(s, "ledger_pct", pct, it)
        for cat in [*metrics.BREAKDOWN_ORDER, ledger.AMBIGUOUS]:
            out.add(s, "breakdown_nic_pct", acc["pct"].get(cat, 0.0) if acc["pct"] else float("nan"), cat)
        out.add(s, "cpu_util_nic_pct", acc["cpu_util_pct"])
        pct = acc["cpu_util_pct"]
        out.add(s, "tpc_nic_gbps", total_gbps / (pct / 100.0) if pct > 0 else float("nan"))
    side, tpc = metrics.throughput_per_core(total_gbps, {s: acc["cpu_util_pct"] for s, acc in nic.items()})
    out.add("both", "tpc_nic_gbps", tpc)
    out.notes["bottleneck_nic"] = side


def perf_span_s(files: dict[str, str], machine: str) -> float | None:
    """The seconds perf sampled on a machine: its header's first-to-last sample span, or, where perf
    ran without build-ids (-B: it then writes no sample times), how long its events were on
    (enable to disable acknowledged, perf_enabled_s.txt). None for runs that kept neither."""
    if "perf_enabled_s.txt" in files:
        return float(files["perf_enabled_s.txt"])
    header = files.get("perf_header.txt", "")
    return parse_perf_header(header, f"{machine}.perf_header.txt")["duration_s"] if header else None


def coverage_rows(out: Rows, m: dict, side: str, machines: dict[str, set[int]], raw: dict, samples: int) -> None:
    """Sampling coverage: the side's non-idle perf samples / (its busy CPU-seconds x perf's rate),
    busy from /proc/stat over perf's own span. Below COVERAGE_MIN the side's breakdown rests on
    too few samples (a halted vCPU takes no cpu-clock samples): flagged in the manifest and in
    the figures. Runs without perf's span (recorded before it was kept) get no row."""
    spans = [perf_span_s(raw[machine], machine) for machine in machines]
    if None in spans:
        return
    span = max(spans)
    busy_pct = next(r["value"] for r in out.rows if r["side"] == side and r["metric"] == "cpu_util_pct")
    expected = busy_pct / 100.0 * span * m["probes"]["perf"]["freq_hz"]
    ratio = samples / expected if expected > 0 else float("nan")
    out.add(side, "perf_sampling_coverage_ratio", ratio)
    if ratio < metrics.COVERAGE_MIN:
        out.notes.setdefault("undersampled", {})[side] = round(ratio, 3)


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
    from pathlib import Path

    from .. import store
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
    from .. import store
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


def side_cpu_rows(out: Rows, side: str, machines: dict[str, set[int]], raw: dict) -> float:
    """One side's CPU rows from its machines' /proc/stat snapshots (cpu_rows without the breakdown);
    returns busy %."""
    util: dict[str, float] = defaultdict(float)
    for machine, cpu_set in machines.items():
        files = raw[machine]
        before = parse_proc_stat(files["proc_stat_before.txt"], f"{machine}.proc_stat_before.txt")
        after = parse_proc_stat(files["proc_stat_after.txt"], f"{machine}.proc_stat_after.txt")
        interval, clk = proc_stat_interval(files)  # wall minus idle where the snapshot times were kept
        out.notes.setdefault("cpu_util_method", {})[machine] = "wall-minus-idle" if interval else "busy-ticks"
        for k, v in metrics.side_utilization(before, after, cpu_set, interval, clk).items():
            util[k] += v
    cores = sum(len(c) for c in machines.values())
    out.add(side, "cpu_util_pct", util["busy_pct"])
    out.add(side, "cores_count", cores)
    for f in CPU_FIELDS:
        out.add(side, f"cpu_{f}_pct", util[f"{f}_pct"])
    note_contention(out, side, util["steal_pct"], cores)
    return util["busy_pct"]


def tpc_rows(out: Rows, total_gbps: float, busy: dict[str, float]) -> None:
    """Throughput per core: the busier side's ("both", the bottleneck note) and each side's own
    (analysis picks one side per point: metrics.with_side_tpc)."""
    side, tpc = metrics.throughput_per_core(total_gbps, busy)
    out.notes["bottleneck"] = side
    out.add("both", "tpc_gbps", tpc)
    for s, pct in busy.items():
        out.add(s, "tpc_gbps", total_gbps / (pct / 100.0) if pct > 0 else float("nan"))


def receive_latency_rows(out: Rows, raw: dict) -> None:
    """Receive -> copy latency and post-GRO sizes: from bpftrace, or from a kernel with kernel_patch/."""
    for machine, files in raw.items():
        if "bpftrace_latency.txt" in files:
            final = parse_bpftrace_maps(files["bpftrace_latency.txt"], f"{machine}.bpftrace_latency.txt")
            # runs recorded before the opening dump was kept have none: the final dump is the window
            opened = (parse_bpftrace_maps(files["bpftrace_latency_open.txt"], f"{machine}.bpftrace_latency_open.txt")
                      if "bpftrace_latency_open.txt" in files else {})
            latency_rows(out.add, subtract_maps(final, opened))
        if "rx_prof.txt" in files:
            window = subtract_maps(parse_rx_prof(files["rx_prof.txt"], f"{machine}.rx_prof.txt"),
                                   parse_rx_prof(files["rx_prof_open.txt"], f"{machine}.rx_prof_open.txt"))
            for metric, value, category in rx_prof_rows(window):
                out.add("receiver", metric, value, category)


def latency_rows(add, maps: dict) -> None:
    """Receive -> copy latency (avg from exact stats, quantiles from 1 us / 100 us histograms)."""
    stats = maps.get("lat_stats")
    if not stats or not stats.get("count"):
        add("receiver", "rx_to_copy_samples_count", 0)
        return
    add("receiver", "rx_to_copy_samples_count", stats["count"])
    add("receiver", "rx_to_copy_latency_avg_usec", stats["average"] / 1000)
    fine, coarse = maps.get("lat_fine_us"), maps.get("lat_coarse_us")
    for q in (0.5, 0.99):
        v = fine.quantile(q) if fine else None
        if v is None or v >= 1000:  # past the fine histogram's range
            v = coarse.quantile(q) if coarse else None
        if v is not None:
            add("receiver", f"rx_to_copy_latency_p{int(q * 100)}_usec", v)
    for name, metric in (("lat_us", "rx_to_copy_latency_hist_count"), ("skb_len", "post_gro_skb_bytes_hist_count")):
        if name in maps:
            for lo, hi, n in maps[name].buckets:
                add("receiver", metric, n, f"{lo}-{'' if hi is None else hi}")
    if "skb_len" in maps and maps["skb_len"].total:
        add("receiver", "post_gro_skb_bytes_mean", maps["skb_len"].mean())


def note_foreign_load(out: Rows, m: dict, raw: dict, our_pids) -> None:
    """Other processes' CPU over the window, per machine (LoadProbe's files): a row each, and the
    manifest's load notes and contaminated flag (analysis.flags reads it)."""
    notes = {}
    for machine, files in raw.items():
        load = metrics.foreign_load(parse_snapshot(files["pids_before.txt"], f"{machine}.pids_before.txt"),
                                     parse_snapshot(files["pids_after.txt"], f"{machine}.pids_after.txt"),
                                     our_pids, int(files["clk_tck.txt"].strip() or 100), float(m["window"]["seconds"]),
                                     f"{machine}.pids")
        notes[machine] = load
        out.add("machine:" + machine, "foreign_cpu_pct", load["foreign_cpu_pct"])
    out.notes["load"] = notes
    out.notes["contaminated"] = any(v["contaminated"] for v in notes.values())


# /proc/interrupts rows worth a tidy row: the IPIs (RES, CAL, TLB) and the local timer
INTERRUPT_ROWS = ("RES", "CAL", "TLB", "LOC")


def interrupt_rows(out: Rows, side: str, machines: dict[str, set[int]], raw: dict) -> None:
    """Interrupts taken on the side's CPUs over the window (runs recorded before the probe have none)."""
    totals: dict[str, int] = {}  # a row the kernel does not have (TLB is x86's) is left out, not zero
    for machine, cpu_set in machines.items():
        if "interrupts_before.txt" not in raw[machine]:
            return
        before = parse_interrupts(raw[machine]["interrupts_before.txt"], f"{machine}.interrupts_before.txt")
        after = parse_interrupts(raw[machine]["interrupts_after.txt"], f"{machine}.interrupts_after.txt")
        delta = interrupt_deltas(before, after, INTERRUPT_ROWS, f"{machine}.interrupts")
        for name, per_cpu in delta.items():
            totals[name] = totals.get(name, 0) + sum(per_cpu.get(c, 0) for c in cpu_set)
    for name, v in totals.items():
        out.add(side, "interrupts_delta_count", v, name)


def counter_rows(out: Rows, m: dict, cpus: dict, raw: dict, ep_raw: dict) -> None:
    """Counter deltas over the window: snmp, netstat, link and ethtool drops per endpoint, softnet
    per side, and cache events where perf stat has them (recorded unsupported, never zero)."""
    for role, f in ep_raw.items():
        parsed = {
            "snmp": deltas(parse_snmp(f["before.snmp.txt"]), parse_snmp(f["after.snmp.txt"]), f"{role}.snmp"),
            "netstat": deltas(parse_snmp(f["before.netstat.txt"], "netstat"),
                              parse_snmp(f["after.netstat.txt"], "netstat"), f"{role}.netstat"),
            "link": deltas(parse_ip_link_stats(f["before.link.json"]), parse_ip_link_stats(f["after.link.json"]),
                           f"{role}.link"),
        }
        for source, names in COUNTERS.items():
            for name in names:
                if name in parsed[source]:
                    out.add(role, "counter_delta_count", parsed[source][name], f"{source}:{name}")
        ip_packets = parsed["snmp"].get("Ip.InReceives", 0)
        if role.startswith("receiver") and ip_packets > 0 and "rx.packets" in parsed["link"]:
            # frames the device took per packet IP saw: what GRO merged (1.0: nothing)
            out.add(role, "gro_merge_ratio", parsed["link"]["rx.packets"] / ip_packets)
        # drop and error counters only: driver statistics may include gauges, which can go down
        eth_before, eth_after = ({k: v for k, v in parse_ethtool_stats(f[n], f"{role}.{n}").items()
                                  if "drop" in k or "err" in k} for n in ("before.ethtool_S.txt",
                                                                          "after.ethtool_S.txt"))
        eth = deltas(eth_before, eth_after, f"{role}.ethtool_S.txt")
        for name, value in eth.items():
            if "drop" in name or "err" in name:
                out.add(role, "counter_delta_count", value, f"ethtool:{name}")
    cache_support = {}
    for side, machines in cpus.items():
        totals: dict[str, int] = {}
        cache: dict[str, float | None] = {}
        for machine, cpu_set in machines.items():
            delta = softnet_deltas(parse_softnet_stat(raw[machine]["softnet_before.txt"]),
                                   parse_softnet_stat(raw[machine]["softnet_after.txt"]), f"{machine}.softnet_stat")
            for cpu in cpu_set:
                for k, v in delta.get(cpu, {}).items():
                    totals[k] = totals.get(k, 0) + v
            cache_text = raw[machine].get("perf_stat_cache.txt")  # absent: no cache probe on this run
            for event, per_cpu in (parse_perf_stat(cache_text, f"{machine}.perf_stat_cache.txt").items()
                                   if cache_text is not None else ()):
                vals = [per_cpu.get(c) for c in cpu_set]
                cache[event] = None if any(v is None for v in vals) else sum(vals)
        for k, v in totals.items():
            out.add(side, "counter_delta_count", v, f"softnet:{k}")
        interrupt_rows(out, side, machines, raw)
        for event, v in cache.items():
            cache_support[event] = v is not None
            if v is not None:
                out.add(side, "cache_events_count", v, event)
    out.notes["cache_counters"] = ("supported" if cache_support and all(cache_support.values())
                           else "unsupported (perf stat: <not supported>; no hardware PMU)")
