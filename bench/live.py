"""Benchmarks 1-3 on one embedded testbed, in one interleaved loop.

Variants of the same single-flow all-opts point (same namespaces, same pinning, same argv):
  hand         iperf3 server + client started by hand (the argv hostnet builds), nothing else
  harness      hostnet's run_point without its profiler (/proc/stat, load, counters only)
  perf<F>      run_point with perf record at F Hz (+ perf stat), no latency probe
  default      run_point with the default profiling: perf at the default frequency + the eBPF
               latency probe (benchmark 2 divides it by harness; neither runs mpstat)
  cpu          default profiling + mpstat in the same window (benchmark 3, CPUs fully busy)
  cpu-partial  the same, the flow rate-limited with iperf3 -b so the CPUs are partly busy
  spin, spin-partial  the same two flows by hand with a SCHED_IDLE spinner (microbench idlespin)
               on each side's CPU: the share of the CPU the flow took, measured by how much it
               slowed the spinner against an idle CPU, not by the kernel's time accounting
               (benchmark 3's independent source; the spinner keeps the CPU from idling, so it
               is a separate run of the same flow, not the same window)
A run that fails is recorded (failed, its error) and the loop goes on; the medians are over the
repetitions that ran, and their n says how many.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hostnet.measure import config as stackconfig
from hostnet import store, taxonomy
from hostnet.native.build import ensure
from hostnet.parsers import ParseError
from hostnet.parsers.native import parse_microbench
from hostnet.parsers.perf_report import parse_perf_report
from hostnet.probes.perf import DEFAULT_FREQ_HZ, PerfOptions
from hostnet.measure.flows import plan_flows, wait_listening
from hostnet.measure.runner import Probing, RunRequest, run_point
from hostnet.derive.patterns import Flow
from hostnet.derive.workloads import LongFlows

from .mpstat import MpstatProbe, parse_mpstat_average
from .stats import Summary, alternating, paired_ratios, ratio_interval, summarize, verdict

CONFIG = "all-opts"
PERF_FREQS = (99, 499, 999, 4000)
FIDELITY_TARGET = (">=", 0.98)
PROFILER_TARGET = (">=", 0.95)
CPU_TARGET_PP = ("<=", 2.0)
# The default profiling: perf at hostnet's default frequency + the eBPF latency probe
# on every received skb (run_point and SweepSpec leave the probe off unless asked: 0).
DEFAULT_LATENCY_SAMPLE_EVERY = 1
# A throughput ratio is judged only when most of its hostnet runs were free of foreign load
# (the load fingerprint, analysis.foreign_load): on a shared 2-core machine other users' CPU
# moves throughput by more than the effects measured here.
FOREIGN_LIMIT = 0.5
# A frequency is chosen only from repetitions where both its run and the harness run were clean,
# and only with at least this many such pairs (a median of one pair is one measurement).
MIN_CLEAN_PAIRS = 2
# Benchmark 3's partly loaded point: the same flow paced by iperf3 -b. On this VM an all-opts
# flow at 5-8 Gbit/s kept the sender ~60 % and the receiver ~30 % busy (data/runs packet-loss
# campaign); the runs' own utilisation is reported, and the point counts as partly loaded only
# when a side lies inside PARTIAL_BAND.
PARTIAL_RATE_GBPS = 5.0
PARTIAL_BAND = (10.0, 90.0)
CPU_VARIANTS = {"cpu": "full", "cpu-partial": "partial"}
SPIN_VARIANTS = {"spin": "full", "spin-partial": "partial"}
SPIN_ITERATIONS = 1_000_000  # blocks of 1000 increments: ~1.8 s on an idle CPU here
SPIN_FLOW_S = 10  # the spin runs' flow outlasts warm-up + a spinner slowed down to ~4x


def is_true(v) -> bool:
    """A flag from a row, also as read back from CSV (True, "True"; NaN and empty are False)."""
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return v is not None and v == v and bool(v)


def failed(r: dict) -> bool:
    return is_true(r.get("failed"))


def foreign_load(rows: list[dict]) -> str | None:
    """Why the hostnet runs among rows cannot judge a throughput ratio, or None."""
    runs = [r for r in rows if r["variant"] != "hand" and not failed(r)]
    flagged = sum(1 for r in runs if is_true(r.get("contaminated")))
    if runs and flagged / len(runs) > FOREIGN_LIMIT:
        return f"{flagged} of {len(runs)} runs under foreign load"
    return None


def judged(value: float, op: str, target: float, rows: list[dict], more: tuple[str, ...] | list[str] = ()) -> str:
    """The verdict, or "inconclusive: <why> (<verdict> as measured)" when most runs were under
    foreign load or for any of the reasons in more."""
    v = verdict(value, op, target)
    why = [w for w in (foreign_load(rows), *more) if w]
    if why and v != "not measured":
        return f"inconclusive: {'; '.join(why)} ({v} as measured)"
    return v


@dataclass(frozen=True)
class PacedFlows(LongFlows):
    """LongFlows with iperf3 -b: the client paces itself to rate_gbps (hostnet has no rate option
    for TCP flows; the argv is otherwise hostnet's own)."""

    rate_gbps: float = PARTIAL_RATE_GBPS

    def client_argv(self, flow: Flow, server_ip: str) -> list[str]:
        return [*super().client_argv(flow, server_ip), "-b", f"{self.rate_gbps:g}G"]


def start_pair(tb, wl: LongFlows):
    """The iperf3 server and client a person would start with `ip netns exec` (hostnet's argv)."""
    f = plan_flows(tb, wl)[0]
    rcv, snd = tb.endpoints[f.receiver], tb.endpoints[f.sender]
    server = rcv.host.start(wl.server_argv(f, rcv.ip))
    try:
        wait_listening(tb, [f], {f.index: server})
        return server, snd.host.start(wl.client_argv(f, rcv.ip))
    except BaseException:
        server.close()
        raise


def by_hand(tb, cfg, wl: LongFlows) -> float:
    """One flow by hand on the same namespaces and pinning; the config is applied untimed."""
    stackconfig.apply(tb, cfg)
    server, client = start_pair(tb, wl)
    try:
        client.wait(timeout=wl.total_s() + 30)
        server.wait(timeout=10)
        return wl.parse_client(client.stdout(), "by-hand iperf3")["throughput_gbps"]
    finally:
        client.close()
        server.close()


# Where the profiler's cost goes (issue 18): each part of the profiling alone, against the harness.
# perf<F> is perf record + perf stat at F Hz, as run_point records by default.
COST_PARTS = {
    "perf-nostat": ("perf record alone (no perf stat of cache events)", {"cache_counters": False}),
    "perf-nograph": ("perf record without call chains (leaf symbols only)", {"perf_options": PerfOptions("none")}),
    "perf-m8": ("perf's ring buffer 8 pages per CPU (32 KiB)", {"perf_options": PerfOptions(mmap_pages=8)}),
    "perf-m2048": ("perf's ring buffer 2048 pages per CPU (8 MiB)", {"perf_options": PerfOptions(mmap_pages=2048)}),
    "perf-shm": ("perf.data written to tmpfs (/dev/shm)", {"perf_options": PerfOptions(data_dir="/dev/shm")}),
    "perf-cexp": ("perf -C with the experiment's CPUs only", {"perf_options": PerfOptions(cpus="experiment")}),
    "latency": ("the eBPF latency probe alone (every received skb)",
                {"profile": False, "latency_sample_every": DEFAULT_LATENCY_SAMPLE_EVERY}),
}


def variant_kwargs(variant: str) -> dict:
    """The variant's Probing fields (runner.Probing)."""
    default = {"perf_freq_hz": DEFAULT_FREQ_HZ, "latency_sample_every": DEFAULT_LATENCY_SAMPLE_EVERY}
    if variant == "harness":
        return {"profile": False}
    if variant in COST_PARTS:
        return {"perf_freq_hz": DEFAULT_FREQ_HZ, **COST_PARTS[variant][1]}
    if variant.startswith("perf"):
        return {"perf_freq_hz": int(variant[4:])}
    if variant == "default":
        return default
    if variant in CPU_VARIANTS:
        return {**default, "extra": lambda: [MpstatProbe()]}
    raise ValueError(variant)


def workload(variant: str, duration_s: int, warmup_s: int) -> LongFlows:
    if variant in SPIN_VARIANTS:
        duration_s = max(duration_s, SPIN_FLOW_S)
    if variant in ("cpu-partial", "spin-partial"):
        return PacedFlows(duration_s, warmup_s)
    return LongFlows(duration_s, warmup_s)


def _spin(tb, iterations: int) -> dict[str, dict]:
    """microbench idlespin on each side's CPU at once: {side: {"ns_per_op", "wall_s"}}."""
    procs = {}
    t0 = time.monotonic()
    try:
        for side in ("sender", "receiver"):
            ep = tb.endpoints[side]
            host = tb.machines[ep.machine]
            procs[side] = host.start([ensure("microbench", host), "idlespin", "--cpu", str(ep.cpus[0]),
                                      "--iterations", str(iterations)])
        out = {}
        for side, proc in procs.items():
            proc.wait(timeout=120)
            out[side] = {"ns_per_op": parse_microbench(proc.stdout(), f"idlespin {side}").ns_per_op,
                         "wall_s": time.monotonic() - t0}
        return out
    finally:
        for proc in procs.values():
            proc.close()


def spin_busy(tb, cfg, wl: LongFlows, iterations: int = SPIN_ITERATIONS) -> dict:
    """Per side: 100 * (1 - idle-CPU spinner speed / its speed next to the flow) = the share of
    the CPU the flow's work took. Calibrated just before the flow, on the same CPUs."""
    stackconfig.apply(tb, cfg)
    alone = _spin(tb, iterations)
    server, client = start_pair(tb, wl)
    try:
        time.sleep(wl.warmup_s)
        loaded = _spin(tb, iterations)
        client.wait(timeout=wl.total_s() + 60)
        server.wait(timeout=10)
        gbps = wl.parse_client(client.stdout(), "spin-run iperf3")["throughput_gbps"]
    finally:
        client.close()
        server.close()
    # the spinner must finish while the flow still runs, or it measured idle time too
    overran = max(v["wall_s"] for v in loaded.values()) > wl.duration_s
    return {"throughput_gbps": gbps, "spin_overran": overran,
            **{f"spin_{side}_pct": 100.0 * (1 - alone[side]["ns_per_op"] / loaded[side]["ns_per_op"])
               for side in loaded}}


def variants_for(names, variants: list[str]) -> list[str]:
    """The variants the chosen benchmarks read (fidelity: hand, harness; profiler_cost: harness,
    perf*, default; cpu_accounting: cpu, cpu-partial), in the order given."""
    need = set()
    if "fidelity" in names:
        need |= {"hand", "harness"}
    if "profiler_cost" in names:
        need |= {"harness", "default", *COST_PARTS, *(v for v in variants if v.startswith("perf"))}
    if "cpu_accounting" in names:
        need |= set(CPU_VARIANTS) | set(SPIN_VARIANTS)
    return [v for v in variants if v in need]


def run_variants(tb, variants: list[str], repetitions: int, duration_s: int, warmup_s: int,
                 runs_dir: Path, campaign: str, log) -> list[dict]:
    cfg = stackconfig.get_config(CONFIG)
    rows = []
    for rep, variant in alternating(variants, repetitions):
        t0 = time.monotonic()
        wl = workload(variant, duration_s, warmup_s)
        row = {"repetition": rep, "variant": variant}
        try:
            if variant == "hand":
                row["throughput_gbps"] = by_hand(tb, cfg, wl)
            elif variant in SPIN_VARIANTS:
                row.update(spin_busy(tb, cfg, wl))
            else:
                path = run_point(tb, RunRequest(cfg, wl, runs_dir, campaign, experiment="bench", repetition=rep,
                                                run_id=f"{variant}-r{rep}", probing=Probing(**variant_kwargs(variant))))
                tidy = pd.read_csv(path / "tidy.csv")
                m = json.loads((path / "manifest.json").read_text())
                row.update(throughput_gbps=_value(tidy, "throughput_gbps", "both"), run=str(path),
                           contaminated=bool(m.get("contaminated")),
                           foreign_cpu_pct=float(tidy[tidy["metric"] == "foreign_cpu_pct"]["value"].max()))
        except Exception as exc:  # noqa: BLE001 - one failed run must not lose the other benchmarks
            row.update(throughput_gbps=float("nan"), failed=True, error=f"{type(exc).__name__}: {exc}"[:500])
        row["wall_s"] = time.monotonic() - t0
        log(f"  rep {rep} {variant:>11}: " + (f"FAILED ({row['error']})" if failed(row) else
                                             f"{row['throughput_gbps']:.2f} Gbit/s")
            + (" (foreign load)" if row.get("contaminated") else ""))
        rows.append(row)
    return rows


def _value(tidy: pd.DataFrame, metric: str, side: str) -> float:
    sel = tidy[(tidy["metric"] == metric) & (tidy["side"] == side)]["value"]
    return float(sel.iloc[0]) if len(sel) else float("nan")


def by_variant(rows: list[dict], variant: str, clean_only: bool = False) -> dict[int, float]:
    """Throughput per repetition of the runs of a variant that did not fail (and, with clean_only,
    were not flagged for foreign load)."""
    return {r["repetition"]: r["throughput_gbps"] for r in rows if r["variant"] == variant and not failed(r)
            and r["throughput_gbps"] == r["throughput_gbps"] and not (clean_only and is_true(r.get("contaminated")))}


def failures(rows: list[dict], variants) -> str:
    bad = [f"{r['variant']} r{r['repetition']}" for r in rows if r["variant"] in variants and failed(r)]
    return f"; {len(bad)} run(s) failed and left out ({', '.join(bad)})" if bad else ""


def fidelity(rows: list[dict]) -> dict:
    s = summarize(paired_ratios(by_variant(rows, "harness"), by_variant(rows, "hand")))
    op, target = FIDELITY_TARGET
    mine = [r for r in rows if r["variant"] in ("hand", "harness")]
    return {"name": "fidelity", "title": "Harness fidelity", "unit": "ratio",
            "metric": "single-flow all-opts throughput, hostnet run_point (no profiler) / iperf3 by hand",
            "summary": s.as_dict(), "value": s.median, "op": op, "target": target,
            "verdict": judged(s.median, op, target, mine),
            "throughput_gbps": {v: summarize(by_variant(rows, v).values()).as_dict() for v in ("hand", "harness")},
            "rows": mine,
            "figure": f"harness fidelity (run_point / by hand) = {s.text()}; target {op} {target}"
                      + failures(rows, ("hand", "harness"))}


def choose_frequency(curve: dict[int, Summary], target: float, freqs=PERF_FREQS,
                     min_pairs: int = MIN_CLEAN_PAIRS) -> tuple[int | None, str]:
    """The highest frequency for which it and every lower one meet the target, on a curve of
    clean pairs only (perf<F> and harness of the same repetition, neither flagged). Walks up from
    the lowest frequency and stops at the first that has fewer than min_pairs clean pairs or a
    median below the target. Returns (frequency or None, why)."""
    chosen = None
    for f in sorted(freqs):
        s = curve.get(f, Summary(float("nan"), float("nan"), float("nan"), 0))
        if s.n < min_pairs:
            why = f"{f} Hz has {s.n} clean repetition(s), fewer than {min_pairs}"
        elif not s.median >= target:
            why = f"{f} Hz has median {s.median:.3f} < {target} on clean runs"
        else:
            chosen = f
            continue
        return chosen, why + (f"; {chosen} Hz and every lower frequency meet it" if chosen else "")
    return chosen, f"every frequency up to {chosen} Hz meets {target} on clean runs"


def frequency_text(chosen: int | None, why: str, default_hz: int = DEFAULT_FREQ_HZ) -> str:
    if chosen is None:
        return f"no frequency chosen: {why}; hostnet's default stays {default_hz} Hz unjudged by this curve"
    text = f"chosen {chosen} Hz ({why})"
    if chosen != default_hz:
        return (text + f"; RECOMMENDATION: hostnet's DEFAULT_FREQ_HZ is {default_hz} Hz "
                f"(hostnet/probes/perf.py), the curve chooses {chosen} Hz: change the default to {chosen} Hz")
    return text + "; equal to hostnet's DEFAULT_FREQ_HZ"


def profiler_cost(rows: list[dict]) -> dict:
    """Throughput with hostnet's default profiling (a sweep's: perf record + perf stat at the
    default frequency) / without any profiler, paired per repetition; beside it every other part
    of the profiling alone (COST_PARTS, the eBPF latency probe with perf as the Rx-buffer study runs
    it) and the frequency curve. Each part is given as a geometric mean of paired ratios with its
    95 % interval and the number of pairs that would resolve 2 % at the spread measured."""
    base, clean_base = by_variant(rows, "harness"), by_variant(rows, "harness", clean_only=True)
    curve, clean = {}, {}
    for f in PERF_FREQS:
        if any(r["variant"] == f"perf{f}" for r in rows):
            curve[f] = summarize(paired_ratios(by_variant(rows, f"perf{f}"), base))
            clean[f] = summarize(paired_ratios(by_variant(rows, f"perf{f}", clean_only=True), clean_base))
    headline = f"perf{DEFAULT_FREQ_HZ}"
    if not any(r["variant"] == headline for r in rows):  # results stored before issue 18 judged "default"
        headline = "default"
    default = summarize(paired_ratios(by_variant(rows, headline), base))
    parts = {}
    for variant, what in [(headline, f"default profiling: perf record + perf stat at {DEFAULT_FREQ_HZ} Hz"),
                          *((v, d) for v, (d, _) in COST_PARTS.items()),
                          ("default", "perf + the eBPF latency probe on every skb (the Rx-buffer study's profiling)")]:
        if any(r["variant"] == variant for r in rows):
            parts[variant] = {"what": what, **ratio_interval(paired_ratios(by_variant(rows, variant, clean_only=True),
                                                                           clean_base))}
    op, target = PROFILER_TARGET
    mine = [r for r in rows if r["variant"] in ("harness", "default", *COST_PARTS) or r["variant"].startswith("perf")]
    judgement = judged(default.median, op, target, [r for r in mine if r["variant"] in ("harness", headline)])
    chosen, why = choose_frequency(clean, target)
    curve_text = ", ".join(f"{f} Hz {s.median:.3f} (clean pairs: " + (
        f"{clean[f].median:.3f}, n={clean[f].n})" if clean[f].n else "none)") for f, s in curve.items())
    parts_text = "; ".join(f"{v} {p['geomean']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}] n={p['n']}"
                           for v, p in parts.items() if p["n"] >= 2)
    need = max((p["pairs_for_2pct"] for p in parts.values() if p["pairs_for_2pct"]), default=None)
    return {"name": "profiler_cost", "title": "Profiler cost", "unit": "ratio",
            "metric": (f"throughput with hostnet's default profiling (perf record + perf stat at {DEFAULT_FREQ_HZ} Hz) "
                       f"/ without" if headline != "default" else
                       f"throughput with perf {DEFAULT_FREQ_HZ} Hz + eBPF latency probe / without (as stored)"),
            "summary": default.as_dict(), "value": default.median, "op": op, "target": target,
            "verdict": judgement, "curve": {str(f): s.as_dict() for f, s in curve.items()},
            "curve_clean": {str(f): s.as_dict() for f, s in clean.items()}, "parts": parts,
            "pairs_for_2pct": need,
            "default_freq_hz": DEFAULT_FREQ_HZ, "chosen_freq_hz": chosen, "chosen_why": why,
            "recommend_default_change": chosen is not None and chosen != DEFAULT_FREQ_HZ,
            "rows": mine,
            "figure": f"profiler cost (default profiling / none) = {default.text()}; target {op} {target}; "
                      f"each part alone, geometric mean of clean paired ratios [95 % interval]: {parts_text}"
                      + (f"; resolving 2 % at this spread would take ~{need} pairs" if need else "")
                      + f"; perf only: {curve_text}; " + frequency_text(chosen, why)
                      + failures(rows, {r["variant"] for r in mine})}


def cpu_rows(rows: list[dict]) -> list[dict]:
    """Per cpu-variant run and side: hostnet's /proc/stat utilisation, mpstat's and perf's, read
    from the run directories."""
    per_run = []
    for r in rows:
        if r["variant"] not in CPU_VARIANTS or failed(r):
            continue
        path = Path(r["run"])
        m = json.loads((path / "manifest.json").read_text())
        tidy = pd.read_csv(path / "tidy.csv")
        raw = store.raw_texts(path)  # raw/ or the run's archive
        kernel = next(iter(m["versions"].values()))["kernel"]
        # a source that cannot be read gives NaN for the run (judged "not measured"), not a crash
        mp = _read_each(raw, ".mpstat.txt", lambda text, name: parse_mpstat_average(text, name))
        perf = _read_each(raw, ".perf_report.txt", lambda text, name, k=kernel: perf_busy_pct(text, k))
        for side in ("sender", "receiver"):
            cpus = [c for cs in m["side_cpus"][side].values() for c in cs]
            per_run.append({"repetition": r["repetition"], "variant": r["variant"], "load": CPU_VARIANTS[r["variant"]],
                            "side": side, "cpus": cpus, "contaminated": bool(r.get("contaminated")),
                            "throughput_gbps": r["throughput_gbps"], "hostnet_pct": _value(tidy, "cpu_util_pct", side),
                            "mpstat_pct": sum(mp.get(c, {}).get("busy", float("nan")) for c in cpus),
                            "perf_pct": sum(perf.get(c, float("nan")) for c in cpus)})
    return per_run


def _read_each(raw: dict[str, str], suffix: str, parse) -> dict:
    out: dict = {}
    for name, text in raw.items():
        if not name.endswith(suffix):
            continue
        try:
            out.update(parse(text, name))
        except ParseError:
            pass
    return out


def _worst(*xs: float) -> float:
    """The largest, or NaN when any is missing (a source that gave nothing is not agreement)."""
    return float("nan") if any(x != x for x in xs) else max(xs)


def cpu_agreement(rows: list[dict], per_run: list[dict] | None = None) -> dict:
    """hostnet's per-side /proc/stat utilisation vs mpstat and vs perf's samples, same window, at
    full load (cpu) and partly loaded (cpu-partial). Both sources are judged against 2 pp; the
    verdict goes through judged() like benchmarks 1-2, and is inconclusive when no side of the
    partly loaded point was actually partly busy (agreement at 100 % is trivial)."""
    per_run = cpu_rows(rows) if per_run is None else per_run
    spin = spin_pct(rows)
    for p in per_run:
        p["diff_mpstat_pp"] = abs(p["hostnet_pct"] - p["mpstat_pct"])
        p["diff_perf_pp"] = abs(p["hostnet_pct"] - p["perf_pct"])
        # the spinner ran the same flow in a run of its own (same repetition and load)
        p["spin_pct"] = spin.get((p["repetition"], p["load"], p["side"]), float("nan"))
        p["diff_spin_pp"] = abs(p["hostnet_pct"] - p["spin_pct"])
        p["diff_worst_pp"] = _worst(p["diff_mpstat_pp"], p["diff_perf_pp"],
                                    *([p["diff_spin_pp"]] if spin else []))
    s = summarize(p["diff_worst_pp"] for p in per_run)
    value = s.hi if all(p["diff_worst_pp"] == p["diff_worst_pp"] for p in per_run) else float("nan")
    op, target = CPU_TARGET_PP
    runs = {(p["repetition"], p["variant"]): p["contaminated"] for p in per_run}
    lo, hi = PARTIAL_BAND
    partial = [p for p in per_run if p["load"] == "partial"]
    # partly loaded by either account: /proc/stat can call a 20 %-busy CPU 2 % busy (tick accounting)
    why = [] if any(lo <= p["hostnet_pct"] <= hi or lo <= p["spin_pct"] <= hi for p in partial) else [
        f"no side of the paced runs was {lo:g}-{hi:g} % busy" if partial else "no partly loaded run"]
    v = judged(value, op, target, [{"variant": k[1], "contaminated": c} for k, c in runs.items()], why)
    parts, detail = [], {}
    for load in ("full", "partial"):
        sel = [p for p in per_run if p["load"] == load]
        if not sel:
            continue
        mp, pf = summarize(p["diff_mpstat_pp"] for p in sel), summarize(p["diff_perf_pp"] for p in sel)
        sp = summarize(p["diff_spin_pp"] for p in sel if p["diff_spin_pp"] == p["diff_spin_pp"])
        spun = {side: summarize(p["spin_pct"] for p in sel if p["side"] == side and p["spin_pct"] == p["spin_pct"])
                for side in ("sender", "receiver")}
        busy = {side: summarize(p["hostnet_pct"] for p in sel if p["side"] == side) for side in ("sender", "receiver")}
        detail[load] = {"mpstat_pp": mp.as_dict(), "perf_pp": pf.as_dict(), "spin_pp": sp.as_dict(),
                        "busy_pct": {k: b.as_dict() for k, b in busy.items()},
                        "spin_busy_pct": {k: b.as_dict() for k, b in spun.items()}}
        label = "full load" if load == "full" else f"paced to {PARTIAL_RATE_GBPS:g} Gbit/s"
        parts.append(f"{label} (busy: sender {busy['sender'].median:.0f} %, receiver {busy['receiver'].median:.0f} %): "
                     f"|hostnet - mpstat| {mp.text('{:.2f}')} pp, worst {mp.hi:.2f} "
                     f"({verdict(mp.hi, op, target)}); |hostnet - perf samples| {pf.text('{:.2f}')} pp, "
                     f"worst {pf.hi:.2f} ({verdict(pf.hi, op, target)})"
                     + (f"; SCHED_IDLE spinner (own run of the same flow) finds sender "
                        f"{spun['sender'].median:.0f} %, receiver {spun['receiver'].median:.0f} % busy: "
                        f"|hostnet - spinner| {sp.text('{:.1f}')} pp, worst {sp.hi:.1f} "
                        f"({verdict(sp.hi, op, target)})" if sp.n else ""))
    return {"name": "cpu_accounting", "title": "CPU accounting agreement", "unit": "percentage points",
            "metric": "worst absolute difference, hostnet per-side utilisation vs mpstat and vs perf's per-CPU "
                      "samples (same run), and vs a SCHED_IDLE spinner's lost capacity (own run of the same "
                      "flow); per side and run, full load and paced",
            "summary": s.as_dict(), "value": value, "op": op, "target": target, "verdict": v,
            "by_load": detail, "runs": [r for r in rows if r["variant"] in {**CPU_VARIANTS, **SPIN_VARIANTS}],
            "rows": per_run,
            "figure": "CPU accounting: " + ("; ".join(parts) or "no run") + f"; target {op} {target} pp on both"
                      + failures(rows, {**CPU_VARIANTS, **SPIN_VARIANTS})}


def spin_pct(rows: list[dict]) -> dict[tuple, float]:
    """{(repetition, load, side): % of the CPU the flow took, by the spinner}, from the spin runs
    that neither failed nor outlasted their flow."""
    out = {}
    for r in rows:
        if r["variant"] in SPIN_VARIANTS and not failed(r) and not is_true(r.get("spin_overran")):
            for side in ("sender", "receiver"):
                if f"spin_{side}_pct" in r:
                    out[(r["repetition"], SPIN_VARIANTS[r["variant"]], side)] = float(r[f"spin_{side}_pct"])
    return out


def perf_busy_pct(report: str, kernel: str) -> dict[int, float]:
    """Per CPU: non-idle cpu-clock samples / all its samples, in %. perf's window is wider than
    /proc/stat's (it starts first and stops last) and idle is under-sampled on this VM (a tickless
    idle CPU takes fewer timer samples), so this reads high when a CPU idles; it is a cross-check."""
    tax = taxonomy.load(taxonomy.series_for(kernel))
    busy: dict[int, int] = {}
    total: dict[int, int] = {}
    for r in parse_perf_report(report):
        total[r.cpu] = total.get(r.cpu, 0) + r.samples
        busy[r.cpu] = busy.get(r.cpu, 0) + (r.samples if tax.classify(r.symbol, r.kernel) != taxonomy.IDLE else 0)
    return {cpu: 100.0 * busy[cpu] / total[cpu] for cpu in total if total[cpu]}
