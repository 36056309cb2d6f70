"""Encodings the figures share: the CPU categories' colours, a share-of-CPU axis stacked to 100 %,
95 % CI (or min-max) error bars over bars, and the caveat a breakdown's metric carries. Each
builder in charts/ composes these, so a category is the same colour and a CI the same mark in
every figure."""
from __future__ import annotations

import altair as alt

from ..analysis.metrics import BREAKDOWN_ORDER

CATEGORY_COLORS = {
    "data_copy": "#4c78a8", "tcp/ip": "#f58518", "netdev": "#54a24b", "skb": "#e45756",
    "mm": "#72b7b2", "lock": "#b279a2", "sched": "#eeca3b", "etc": "#9d755d",
    "testbed": "#1a1a1a", "user": "#bab0ac", "unclassified": "#d3d3d3",
}
CPU_CLOCK_CAVEAT = ("perf sampled on cpu-clock (no hardware PMU): time with interrupts off is billed "
                    "to handle_softirqs/native_write_msr, inflating 'etc'")
ATTRIBUTED_CAVEAT = ("perf sampled on cpu-clock (no hardware PMU); samples taken where interrupts come back on "
                     "are attributed through the call chain (irqs-off-callchain rule, docs/measurement.md)")


def caveat(metric: str | None) -> str:
    """What a breakdown of `metric` cannot tell apart (cpu-clock sampling), said under its chart."""
    return ATTRIBUTED_CAVEAT if metric == "breakdown_attributed_pct" else CPU_CLOCK_CAVEAT


def category_color(order=BREAKDOWN_ORDER, title: str | None = "category", **more) -> alt.Color:
    """The CPU categories in their fixed colours, in `order` (BREAKDOWN_ORDER, or every category
    with testbed/user/unclassified); title None leaves the legend's title to Vega-Lite."""
    order = list(order)
    return alt.Color("category:N", sort=order, **({} if title is None else {"title": title}),
                     scale=alt.Scale(domain=order, range=[CATEGORY_COLORS[c] for c in order]), **more)


def share_axis(title: str, field: str = "pct") -> alt.Y:
    """Shares stacked to 100 % (each bar a whole), on a percent axis."""
    return alt.Y(f"{field}:Q", stack="normalize", title=title, axis=alt.Axis(format="%"))


def ci_bars(data, x, title: str, lo: str = "lo", hi: str = "hi", **more) -> alt.Chart:
    """Error bars from `lo` to `hi` (a 95 % CI, or a min-max range) at each x of bars drawn
    with the same x (and xOffset, colour... in `more`)."""
    return alt.Chart(data).mark_errorbar().encode(x=x, y=alt.Y(f"{lo}:Q", title=title), y2=f"{hi}:Q", **more)


def breakdown_caveat(bd) -> str:
    """caveat() of a breakdown table by its `metric` column (the breakdown its shares are of); a table
    whose rows mix the leaf and the attributed breakdown, or that has none, gets cpu-clock's."""
    kinds = set(bd["metric"])
    return caveat(kinds.pop() if len(kinds) == 1 else None)
