"""The receive-path comparison (docs/receive-path.md): the single-flow ladder under each of the
embedded testbed's receive steering modes, judged by the structure it shows, not by which verdict
it flips.

Per (mode, step), from the campaigns' run directories only: throughput (median and range), the
share of receive-path samples (GRO, IP and TCP receive, by call chain) taken on the receiver's
CPUs, IPIs (RES + CAL on both sides) per GB moved, the share of busy samples whose leaf is a
trapped MSR/APIC write (a VM exit), sampling coverage, each side's CPU and tpc.
"""
from __future__ import annotations

import pandas as pd

from ..measure import config as stackconfig
from .. import store, testbed
from ..testbed import steering
from ..measure.sweep import declared, run_configs
from ..analysis import flags

EXPERIMENT = "single-flow"


def record(modes, *, runs_dir, configs=stackconfig.LADDER, duration: int = 5, warmup: int = 2,
           repetitions: int = 5, perf_freq_hz: int = 999) -> dict[str, str]:
    """One single-flow campaign per mode, each on a fresh embedded testbed of that mode;
    returns {mode: campaign}."""
    out = {}
    spec = declared(EXPERIMENT, configs=list(configs), duration=duration, warmup=warmup, repetitions=repetitions,
                    perf_freq_hz=perf_freq_hz)
    for mode in modes:
        steering.check(mode)
        campaign = store.new_campaign_id(f"receive-path-{mode}", "embedded")
        with testbed.embedded(testbed.unique_name("rp"), steering=mode) as tb:
            run_configs(tb, spec, runs_dir=runs_dir, campaign=campaign)
        out[mode] = campaign
    return out


def _per_run(tidy: pd.DataFrame, metric: str, side: str, category: str | None = None) -> pd.Series:
    rows = tidy[(tidy.metric == metric) & (tidy.side == side)]
    if category is not None:
        rows = rows[rows.category == category]
    return rows.groupby("run_id").value.sum()


def structure(tidy: pd.DataFrame, window_s: dict[str, float]) -> pd.DataFrame:
    """Per run: the structural figures (columns) of one campaign's tidy data; window_s: each run's
    measurement window (windows()), which IPIs per GB moved divide by."""
    thr = _per_run(tidy, "throughput_gbps", "both")
    window = tidy.drop_duplicates("run_id").set_index("run_id")
    out = pd.DataFrame({"config": window.config, "throughput_gbps": thr})
    rp = {s: _per_run(tidy, "perf_receive_path_samples_count", s) for s in ("sender", "receiver")}
    out["receive_path_on_receiver_pct"] = 100 * rp["receiver"] / (rp["sender"] + rp["receiver"])
    busy = sum(_per_run(tidy, "perf_busy_samples_count", s) for s in ("sender", "receiver"))
    vm = sum(_per_run(tidy, "perf_vm_exit_samples_count", s) for s in ("sender", "receiver"))
    out["vm_exit_pct"] = 100 * vm / busy
    ipis = sum(_per_run(tidy, "interrupts_delta_count", s, c) for s in ("sender", "receiver") for c in ("RES", "CAL"))
    out["ipis_per_gb"] = ipis / (out.throughput_gbps * out.index.map(window_s) / 8)
    for s in ("sender", "receiver"):
        out[f"{s}_cpu_pct"] = _per_run(tidy, "cpu_util_pct", s)
        out[f"{s}_coverage"] = _per_run(tidy, "perf_sampling_coverage_ratio", s)
    return out


def windows(manifests: list[dict]) -> dict[str, float]:
    """Each run's measurement window in seconds, from its manifest."""
    return {m["run_id"]: m["window"]["seconds"] for m in manifests if m.get("window")}


def table(runs_dir, campaigns: dict[str, str]) -> pd.DataFrame:
    """Median (and throughput range) per (mode, step) over each campaign's clean runs."""
    rows = []
    for mode, campaign in campaigns.items():
        tidy, manifests = _load(runs_dir, campaign)
        per_run = structure(tidy, windows(manifests))
        for cfg in stackconfig.LADDER:
            g = per_run[per_run.config == cfg]
            if g.empty:
                continue
            label = next(m["config_label"] for m in manifests if m["config"]["name"] == cfg)
            row = {"mode": mode, "step": label, "runs": len(g),
                   "throughput_gbps": g.throughput_gbps.median(),
                   "throughput_range": f"{g.throughput_gbps.min():.1f}–{g.throughput_gbps.max():.1f}"}
            for col in ("receive_path_on_receiver_pct", "ipis_per_gb", "vm_exit_pct", "sender_cpu_pct",
                        "receiver_cpu_pct", "sender_coverage", "receiver_coverage"):
                row[col] = g[col].median()
            rows.append(row)
    return pd.DataFrame(rows)


def _load(runs_dir, campaign: str) -> tuple[pd.DataFrame, list[dict]]:
    manifests = store.load_manifests(runs_dir, campaign, EXPERIMENT)
    tidy = store.load_tidy(runs_dir, campaign, EXPERIMENT)
    return tidy[tidy.run_id.isin([m["run_id"] for m in manifests if flags.usable(m)])], manifests


def markdown(t: pd.DataFrame) -> str:
    cols = ["mode", "step", "runs", "throughput_gbps", "throughput_range", "receive_path_on_receiver_pct",
            "ipis_per_gb", "vm_exit_pct", "sender_cpu_pct", "receiver_cpu_pct", "sender_coverage",
            "receiver_coverage"]
    head = ["receive path", "step", "clean runs", "Gbit/s", "range", "rx path on rx CPU %", "IPIs/GB",
            "VM-exit leaf %", "snd CPU %", "rcv CPU %", "snd coverage", "rcv coverage"]
    fmt = {"throughput_gbps": "{:.1f}", "receive_path_on_receiver_pct": "{:.0f}", "ipis_per_gb": "{:,.0f}",
           "vm_exit_pct": "{:.1f}", "sender_cpu_pct": "{:.0f}", "receiver_cpu_pct": "{:.0f}",
           "sender_coverage": "{:.2f}", "receiver_coverage": "{:.2f}"}
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t[cols].itertuples(index=False):
        cells = [fmt[c].format(v) if c in fmt and pd.notna(v) else ("–" if pd.isna(v) else str(v))
                 for c, v in zip(cols, r, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

