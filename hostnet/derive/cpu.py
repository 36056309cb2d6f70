"""A side's CPU rows from a run's raw files: utilisation per /proc/stat field (steal apart) and
throughput per core, perf's breakdowns by category (leaf symbols and the call-chain attribution),
sampling coverage, and the testbed ledger's NIC-equivalent accounting (analysis/ledger.py)."""
from __future__ import annotations

from collections import defaultdict

from ..analysis import ledger, metrics
from ..analysis.attribution import breakdown_from_stacks
from ..parsers.perf_report import parse_perf_header, parse_perf_report
from ..parsers.perf_script import parse_folded
from ..parsers.procstat import parse_proc_stat, proc_stat_interval
from ..store import Rows
from .workloads import workload_comms


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
