"""Beyond the paper (notebook 15-beyond-2021): what the remedies for its headline findings buy on a
current kernel, in the same breakdown. The data copy: sendfile and MSG_ZEROCOPY on the send side,
TCP_ZEROCOPY_RECEIVE on the receive side (hostnet's zcflow, native/zcflow.c, one loop for every
mechanism so points differ only in it). Per-skb costs: BIG TCP, GSO/GRO packets above 64 KB
(iperf3, the limits set by hostnet's bigtcp tool), over IPv4 and IPv6.

The default grids are sweeps/zero-copy.yaml and sweeps/big-tcp.yaml (a test holds them equal). The
zero-copy points run all-opts at MTU 61492, where each segment carries 15 whole pages, the
condition for mapping received data; the BIG TCP points all-opts at its MTU 9000.
"""
from __future__ import annotations

import pandas as pd

from ..analysis import metrics, ledger, verdicts
from ..analysis.findings import beyond as rules
from ..charts import beyond as figures
from ..charts.beyond import charts  # noqa: F401 (notebook 15 calls beyond.charts)
from ..measure.sweep import SweepSpec, declared
from . import common, grid_view
from ..measure.options import LiveOptions

EXPERIMENT = "zero-copy"
BIG_TCP = "big-tcp"
PER_SKB = ("tcp/ip", "netdev", "skb")  # the layers whose work is per packet, not per byte
SEND_MODES = ["copy", "sendfile", "zerocopy"]
RECV_MODES = ["copy", "mmap"]
# what each mode does, for tables and figures
MODE_NAMES = {"copy": "send()", "sendfile": "sendfile()", "zerocopy": "MSG_ZEROCOPY"}
RECV_NAMES = {"copy": "recv()", "mmap": "TCP_ZEROCOPY_RECEIVE"}
MB = 1 << 20
BASELINE = {"send_mode": "copy", "recv_mode": "copy"}


def spec(*, send_modes=None, recv_modes=None, mtu: int | None = None, mss: int = 0, config: str | None = None,
         **fields) -> SweepSpec:
    """sweeps/zero-copy.yaml (its MTU: tcp_mmap.c's whole-page condition), with what is given over it
    (fields: any other SweepSpec field). mss: zcflow's TCP_MAXSEG, 0 the kernel's; 4108 gives
    whole-page segments at any MTU from 4148 (a NIC's 9000), where 61492 is more than a NIC takes."""
    return declared(EXPERIMENT, config=config, grid={
        "mtu": None if mtu is None else [int(mtu)], "mss": [int(mss)] if mss else None,
        "send_mode": send_modes, "recv_mode": recv_modes}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), **spec_args) -> str:
    """Replay the campaign named, or sweep the mechanisms (spec_args: spec()'s) on `live.testbed`, then top
    up until every point has clean runs and the verdicts are decided (grid_view.collect)."""
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name=EXPERIMENT,
                             live=live, judge=judge)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    """The campaign's tidy rows with each run's send_mode, recv_mode and mtu as columns. A campaign
    whose points ran over both IP versions is refused: its table and verdicts would pool them."""
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    versions = {m.get("point", {}).get("ip_version") for m in manifests}
    if len(versions) > 1:
        raise ValueError(f"campaign {campaign} mixes IP versions ({', '.join(sorted(map(str, versions)))}): the "
                         f"zero-copy table pools by mechanism only; record one campaign per version")
    for key in ("send_mode", "recv_mode", "mtu"):
        tidy = grid_view.tag(tidy, manifests, key)
    return tidy, manifests


def mechanism(send_mode: str, recv_mode: str) -> str:
    return f"{MODE_NAMES[send_mode]} → {RECV_NAMES[recv_mode]}"


def _by_run(tidy: pd.DataFrame, *point: str):
    """Per run, in run_id order: its id, its rows as {(side, metric, category): value} and its
    `point` columns' values (those tidy has). Read from whole columns, with no frame sliced per run:
    a slice would deep-copy the frame's attrs, pandas' side channel, each time (the tidy rows carry some)."""
    names = ("side", "metric", "category", "value")
    arrays = {c: tidy[c].to_numpy() for c in (*names, *point) if c in tidy.columns}
    for run_id, idx in sorted(tidy.groupby("run_id").indices.items()):
        side, metric, category, value = (arrays[c][idx].tolist() for c in names)
        v = {(s, m, c if isinstance(c, str) else ""): x for s, m, c, x in zip(side, metric, category, value,
                                                                              strict=True)}
        yield run_id, v, {c: arrays[c][idx[0]] for c in point if c in arrays}


def _run_row(run_id: str, v: dict) -> dict:
    """One run's row so far, from its values (_by_run): throughput, tpc and each side's CPU per MB
    moved (the side's cores in the window over the MB the flow moved)."""
    gbps = v.get(("both", "throughput_gbps", ""), float("nan"))
    mb_per_s = gbps * 1e9 / 8 / MB
    row = {"run_id": run_id, "throughput_gbps": gbps, "tpc_gbps": v.get(("both", "tpc_gbps", ""), float("nan"))}
    for side in ("sender", "receiver"):
        cores = v.get((side, "cpu_util_pct", ""), float("nan")) / 100.0
        row[f"{side}_us_per_mb"] = cores * 1e6 / mb_per_s if mb_per_s > 0 else float("nan")
    return row


def per_run(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per run: the point, throughput, each side's CPU per MB moved (the side's cores in the
    window; the accounting the tidy rows carry), each application thread's own CPU per MB (zcflow's
    getrusage, tcp_mmap.c's unit), the share of bytes mapped and of MSG_ZEROCOPY sends copied, and
    each side's data-copy share of its breakdown."""
    bd = metrics.breakdown_metric(tidy)
    rows = []
    for run_id, v, point in _by_run(tidy, "send_mode", "recv_mode"):
        row = _run_row(run_id, v)
        row.update(send_mode=point["send_mode"], recv_mode=point["recv_mode"])
        for side in ("sender", "receiver"):
            app_bytes = v.get((side, f"{side}_app_bytes_count", ""), float("nan"))
            app_cpu = v.get((side, f"{side}_app_cpu_s", ""), float("nan"))
            row[f"{side}_app_us_per_mb"] = app_cpu * 1e6 / (app_bytes / MB) if app_bytes > 0 else float("nan")
            row[f"{side}_data_copy_pct"] = v.get((side, bd, "data_copy"), float("nan"))
        mapped, got = v.get(("receiver", "receiver_mapped_bytes_count", "")), v.get(("receiver",
                                                                                      "receiver_app_bytes_count", ""))
        row["mapped_pct"] = 100.0 * mapped / got if mapped is not None and got else float("nan")
        done, copied = v.get(("sender", "zerocopy_completed_count", "")), v.get(("sender", "zerocopy_copied_count", ""))
        row["copied_pct"] = 100.0 * copied / done if copied is not None and done else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


_MEANS = ("throughput_gbps", "tpc_gbps", "sender_us_per_mb", "receiver_us_per_mb", "tpc_gbps_nic",
          "sender_us_per_mb_nic", "receiver_us_per_mb_nic", "sender_app_us_per_mb", "receiver_app_us_per_mb",
          "mapped_pct", "copied_pct", "sender_data_copy_pct", "receiver_data_copy_pct")
_WITH_CI = ("throughput_gbps", "tpc_gbps", "sender_us_per_mb", "receiver_us_per_mb")


def with_nic(runs: pd.DataFrame, tidy: pd.DataFrame, derive, columns) -> pd.DataFrame:
    """runs plus the NIC-equivalent accounting's `columns` (suffix _nic), derived the same way from
    ledger.view; NaN where the runs have no ledger (servers, or a side not profiled)."""
    if not ledger.has_ledger(tidy):
        return runs.assign(**{f"{c}_nic": float("nan") for c in columns})
    nic = derive(ledger.view(tidy, ledger.NIC)).set_index("run_id")[list(columns)].add_suffix("_nic")
    return runs.join(nic, on="run_id")


_NIC = ("tpc_gbps", "sender_us_per_mb", "receiver_us_per_mb")


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism (send x receive mode): means over runs, 95 % CIs of throughput, tpc and each
    side's CPU per MB, the same under NIC-equivalent accounting (_nic), and each against the
    copy → copy baseline (%)."""
    runs = with_nic(per_run(tidy), tidy, per_run, _NIC)
    rows = []
    for (s, r), g in runs.groupby(["send_mode", "recv_mode"], sort=False):
        row = {"send_mode": s, "recv_mode": r, "mechanism": mechanism(s, r)}
        for col in _MEANS:
            mean, ci = metrics.confidence(g[col].dropna())
            row[col] = mean
            if col in _WITH_CI:
                row[col + "_ci95"] = ci
        row["repetitions"] = len(g)
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    rank = {**{m: i for i, m in enumerate(SEND_MODES)}, **{m: i for i, m in enumerate(RECV_MODES)}}
    out = out.sort_values(["send_mode", "recv_mode"], key=lambda c: c.map(rank)).reset_index(drop=True)
    base = out[(out.send_mode == "copy") & (out.recv_mode == "copy")]
    for col in ("tpc_gbps", "sender_us_per_mb", "receiver_us_per_mb", "sender_us_per_mb_nic",
                "receiver_us_per_mb_nic"):
        out[col + "_vs_copy_pct"] = (100.0 * (out[col] / base[col].iloc[0] - 1)) if not base.empty else float("nan")
    return out


SHOWN = ("mechanism", "throughput_gbps", "throughput_gbps_ci95", "tpc_gbps", "tpc_gbps_nic", "sender_us_per_mb",
         "sender_us_per_mb_ci95", "sender_us_per_mb_nic", "receiver_us_per_mb", "receiver_us_per_mb_ci95",
         "receiver_us_per_mb_nic", "sender_app_us_per_mb", "receiver_app_us_per_mb", "mapped_pct", "copied_pct",
         "sender_data_copy_pct", "receiver_data_copy_pct", "repetitions")


def shown(summary: pd.DataFrame) -> pd.DataFrame:
    """The table's columns a reader needs first, rounded (the rest stay in `summary`)."""
    return summary[[c for c in SHOWN if c in summary]].round(1)


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    """Median share of each category per mechanism and side."""
    metric = metrics.breakdown_metric(tidy)
    t = tidy[(tidy.metric == metric) & tidy.side.isin(["sender", "receiver"])]
    out = t.groupby(["send_mode", "recv_mode", "side", "category"]).value.median().rename("pct").reset_index()
    out["mechanism"] = [mechanism(s, r) for s, r in zip(out.send_mode, out.recv_mode, strict=True)]
    return out


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F29–F31, expectations from the kernel's own documentation, each by its rule in
    analysis/findings, on the campaign's per-run costs (per_run)."""
    runs = per_run(tidy)
    judged = {"F29": rules.f29(runs), "F30": rules.f30(runs), "F31": rules.f31(runs)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    return verdict_table.verdicts(load(runs_dir, campaign)[0], reference_dir)


# --- BIG TCP -------------------------------------------------------------------------------------------

def big_tcp_spec(*, sizes=None, ip_versions=None, config: str | None = None, **fields) -> SweepSpec:
    """sweeps/big-tcp.yaml: the legacy 64 KB limit and the size the BIG TCP patches were shown with,
    over IPv4 and IPv6, the eBPF probe sampling 1 in 8 skbs for the size histogram; what is given
    over it as in spec()."""
    return declared(BIG_TCP, config=config, grid={"big_tcp_bytes": None if sizes is None else [int(b) for b in sizes],
                                                  "ip_version": None if ip_versions is None else
                                                  [int(v) for v in ip_versions]}, **fields)


def collect_big_tcp(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(),
                    **spec_args) -> str:
    """Replay the campaign named, or sweep the GSO/GRO limit (spec_args: big_tcp_spec()'s) on `live.testbed`
    (refused where the kernel or the driver has no BIG TCP), then top up as collect() does."""
    return grid_view.collect(mode, big_tcp_spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name=BIG_TCP,
                             live=live, judge=judge_big_tcp)


def load_big_tcp(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    """The BIG TCP campaign's tidy rows with each run's big_tcp_bytes and ip_version as columns
    (ip_version 0: the point did not name one, so its flows ran over IPv4)."""
    tidy, manifests = common.load(runs_dir, campaign, BIG_TCP, include_contaminated)
    tidy = grid_view.tag(tidy, manifests, "big_tcp_bytes")
    return grid_view.tag(tidy, manifests, "ip_version", default=0), manifests


def big_tcp_runs(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per run: throughput, tpc, each side's CPU per MB, its per-skb share (tcp/ip + netdev +
    skb of its breakdown) and what that share costs per MB, and the mean packet size GRO delivered
    (eBPF, sampled). ip_version 4 where the point named none (ip_named False)."""
    bd = metrics.breakdown_metric(tidy)
    rows = []
    for run_id, v, point in _by_run(tidy, "big_tcp_bytes", "ip_version"):
        row = _run_row(run_id, v)
        named = int(point.get("ip_version", 0))  # 0: the point named none (IPv4, campaigns before IPv6)
        row.update(big_tcp_bytes=int(point["big_tcp_bytes"]), ip_version=named or 4, ip_named=bool(named),
                   post_gro_skb_bytes=v.get(("receiver", "post_gro_skb_bytes_mean", ""), float("nan")))
        for side in ("sender", "receiver"):
            row[f"{side}_per_skb_pct"] = sum(v.get((side, bd, c), 0.0) for c in PER_SKB)
            # what those layers cost per MB: a share can fall only because other work grew
            row[f"{side}_per_skb_us_per_mb"] = row[f"{side}_per_skb_pct"] / 100.0 * row[f"{side}_us_per_mb"]
        rows.append(row)
    return pd.DataFrame(rows)


def big_tcp_table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per IP version and GSO/GRO limit: means and 95 % CIs over runs (NIC-equivalent ones suffixed _nic)."""
    per_skb = ("sender_per_skb_pct", "receiver_per_skb_pct", "sender_per_skb_us_per_mb", "receiver_per_skb_us_per_mb")
    runs = with_nic(big_tcp_runs(tidy), tidy, big_tcp_runs, (*_NIC, *per_skb))
    rows = []
    for (version, size), g in runs.groupby(["ip_version", "big_tcp_bytes"]):
        row = {"ip_version": int(version), "big_tcp_bytes": int(size)}
        for col in ("throughput_gbps", "tpc_gbps", "sender_us_per_mb", "receiver_us_per_mb", *per_skb,
                    "post_gro_skb_bytes", "tpc_gbps_nic", "sender_us_per_mb_nic", "receiver_us_per_mb_nic",
                    *(f"{c}_nic" for c in per_skb)):
            row[col], row[col + "_ci95"] = metrics.confidence(g[col].dropna())
        row["repetitions"] = len(g)
        rows.append(row)
    return pd.DataFrame(rows)


def skb_sizes(tidy: pd.DataFrame) -> pd.DataFrame:
    """The receiver's post-GRO packet sizes (eBPF histogram buckets, summed over runs) per IP
    version and limit."""
    h = tidy[(tidy.metric == "post_gro_skb_bytes_hist_count") & (tidy.side == "receiver")]
    h = h.assign(ip_version=(h.ip_version.replace(0, 4) if "ip_version" in h.columns else 4))
    out = h.groupby(["ip_version", "big_tcp_bytes", "category"]).value.sum().rename("packets").reset_index()
    out["bucket_lo"] = out.category.str.split("-").str[0].astype(int)
    out["share"] = out.packets / out.groupby(["ip_version", "big_tcp_bytes"]).packets.transform("sum")
    return out.sort_values(["ip_version", "big_tcp_bytes", "bucket_lo"]).reset_index(drop=True)


def sampled_every(manifests: list[dict]) -> int:
    """The eBPF probe's 1-in-N for the size histogram, as the runs recorded it; big-tcp.yaml's for
    campaigns recorded before runs did (one value: a campaign samples at one rate)."""
    rates = {p["sample_every"] for m in manifests for p in m.get("probes", {}).get("latency", {}).values()
             if isinstance(p, dict) and "sample_every" in p}
    return rates.pop() if len(rates) == 1 else declared(BIG_TCP).latency_sample_every


def big_tcp_charts(summary: pd.DataFrame, sizes: pd.DataFrame, label: str, sample_every: int | None = None) -> dict:
    """charts/beyond.py's BIG TCP figures (sample_every: the probe's 1 in N, sampled_every(manifests);
    None: big-tcp.yaml's)."""
    return figures.big_tcp_charts(summary, sizes, label, sample_every or sampled_every([]))


@verdicts.under_accountings
def big_tcp_verdict_table(tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F32 (IPv4) and F33 (IPv6), each by its rule in analysis/findings, where the campaign has that
    IP version's runs at two limits or more."""
    runs = big_tcp_runs(tidy)
    judged = {fid: rules.big_tcp(runs[runs.ip_version == version], needs)
              for version, (fid, needs) in rules.BIG_TCP_FINDINGS.items()}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)


def judge_big_tcp(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    return big_tcp_verdict_table.verdicts(load_big_tcp(runs_dir, campaign)[0], reference_dir)


# the judge of each campaign notebook 15 records, by the experiment its runs are stored as (hostnet top-up)
JUDGES = {EXPERIMENT: judge, BIG_TCP: judge_big_tcp}
