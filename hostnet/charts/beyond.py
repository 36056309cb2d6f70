"""Beyond the paper's figures (notebook 15): CPU per MB and the breakdown by send and receive
mechanism (zero-copy), the per-packet layers' share and the packet sizes GRO delivered (BIG TCP)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .encodings import CATEGORY_COLORS, category_color, ci_bars, share_axis

COST_TITLE = "CPU µs per MB moved (the side's cores)"
SKB_TITLE = "tcp/ip + netdev + skb (% of the side's CPU)"


def bucket_name(category: str) -> str:
    """A power-of-two histogram bucket "32768-65536" as "32–64 KiB" ("1–2 B" below a KiB)."""
    lo, _, hi = category.partition("-")
    lo, hi = int(lo), (int(hi) if hi else None)
    unit, div = ("KiB", 1024) if lo >= 1024 else ("B", 1)
    return f"{lo // div}–{hi // div} {unit}" if hi is not None else f"≥ {lo // div} {unit}"


def limit_name(size: int) -> str:
    """65536 -> "64 KiB", 185000 -> "185 KB": the limit as it is usually quoted."""
    return f"{size // 1024} KiB" if size % 1024 == 0 else f"{size / 1000:g} KB"


def point_names(df: pd.DataFrame) -> pd.Series:
    """Each row's limit as limit_name quotes it, with its IP version where the campaign has both."""
    names = df.big_tcp_bytes.map(limit_name)
    if df.ip_version.nunique() > 1:
        names = "IPv" + df.ip_version.astype(int).astype(str) + " " + names
    return names


def _per_side(runs: pd.DataFrame, value: str, mean: str, ci: str) -> pd.DataFrame:
    """runs once per side, the side's `mean` column as `value` with lo/hi its 95 % CI around it."""
    long = pd.concat([runs.assign(side=side, **{value: runs[mean.format(side=side)]},
                                  ci=runs[ci.format(side=side)].fillna(0.0)) for side in ("sender", "receiver")],
                     ignore_index=True)
    return long.assign(lo=long[value] - long.ci, hi=long[value] + long.ci)


def charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    """CPU per MB per mechanism and side, mean and 95 % CI (summary: the section's table), and the
    breakdown per mechanism, a panel per side (bd: its breakdown), mechanisms in the table's order."""
    long = _per_side(summary, "us_per_mb", "{side}_us_per_mb", "{side}_us_per_mb_ci95")
    x = alt.X("mechanism:N", sort=list(summary.mechanism), title=None, axis=alt.Axis(labelAngle=-30, labelLimit=260))
    cost = alt.layer(
        alt.Chart(long).mark_bar().encode(
            x=x, xOffset="side:N", y=alt.Y("us_per_mb:Q", title=COST_TITLE),
            color=alt.Color("side:N", title=""),
            tooltip=["mechanism", "side", alt.Tooltip("us_per_mb:Q", format=".1f"), "repetitions",
                     alt.Tooltip("mapped_pct:Q", format=".1f"), alt.Tooltip("copied_pct:Q", format=".1f")]),
        ci_bars(long, x, COST_TITLE, xOffset="side:N"),
    ).properties(width=420, height=260, title=alt.Title(
        "Beyond 2021: CPU per MB by send and receive mechanism",
        subtitle=[*label.split("\n"), "all-opts, MTU 61492, one flow; mean and 95 % CI over runs"]))
    stack = alt.Chart(bd).mark_bar().encode(
        x=x, y=share_axis("share of the side's CPU samples"), color=category_color(CATEGORY_COLORS),
        column=alt.Column("side:N", title=None, sort=["sender", "receiver"]),
        tooltip=["mechanism", "side", "category", alt.Tooltip("pct:Q", format=".1f")],
    ).properties(width=260, height=240, title="CPU breakdown (median share per category)")
    return {"beyond-cpu-per-mb": cost, "beyond-breakdown": stack}


def big_tcp_charts(summary: pd.DataFrame, sizes: pd.DataFrame, label: str, sample_every: int) -> dict:
    """The per-packet layers' share per point, mean and 95 % CI (summary: the section's big_tcp_table),
    and the packet sizes GRO delivered (sizes: its skb_sizes; sample_every: the probe's 1 in N)."""
    runs = summary.assign(limit=point_names(summary))
    long = _per_side(runs, "pct", "{side}_per_skb_pct", "{side}_per_skb_pct_ci95")
    x = alt.X("limit:N", sort=list(runs.limit), title="GSO/GRO packet limit", axis=alt.Axis(labelAngle=0, labelLimit=0))
    per_skb = alt.layer(
        alt.Chart(long).mark_bar().encode(x=x, xOffset="side:N", color=alt.Color("side:N", title=""),
                                          y=alt.Y("pct:Q", title=SKB_TITLE),
                                          tooltip=["limit", "side", alt.Tooltip("pct:Q", format=".1f"), "repetitions"]),
        ci_bars(long, x, SKB_TITLE, xOffset="side:N"),
    ).properties(width=max(260, 100 * len(runs)), height=240, title=alt.Title(
        "BIG TCP: the per-packet layers' share", subtitle=[*label.split("\n"), "all-opts, one flow; mean and 95 % CI"]))
    hist = sizes.assign(limit=point_names(sizes), bucket=sizes.category.map(bucket_name))
    order = list(dict.fromkeys(hist.sort_values("bucket_lo").bucket))
    dist = alt.Chart(hist).mark_bar().encode(
        x=alt.X("bucket:N", sort=order, title="packet GRO delivered (eBPF histogram bucket)",
                axis=alt.Axis(labelAngle=-30)),
        xOffset=alt.XOffset("limit:N", sort=list(dict.fromkeys(hist.limit))),
        y=alt.Y("share:Q", title="share of sampled packets", axis=alt.Axis(format="%")),
        color=alt.Color("limit:N", title="limit", sort=list(dict.fromkeys(hist.limit))),
        tooltip=["limit", "bucket", "packets", alt.Tooltip("share:Q", format=".3f")],
    ).properties(width=320, height=240, title=alt.Title(
        "Packet sizes after GRO (receiver)", subtitle=f"1 in {sample_every} packets sampled"))
    return {"beyond-big-tcp": per_skb, "beyond-big-tcp-sizes": dist}
