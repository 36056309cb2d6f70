"""Icicle charts (flame graphs drawn top-down) from folded stacks, in altair: interactive HTML
with a tooltip per frame, or SVG/PNG. No external FlameGraph checkout."""
from __future__ import annotations

from typing import Iterable

import altair as alt
import pandas as pd

from .parsers.perf_script import Sample


def icicle_rects(samples: Iterable[tuple[Sample, int]], cpus, max_depth: int = 40,
                 min_share: float = 0.002) -> pd.DataFrame:
    """One rectangle per (call path prefix): x0/x1 in [0, 1] of the CPUs' samples, depth from the root.

    Paths narrower than min_share of all samples are dropped to keep the chart readable.
    """
    tree: dict[tuple[str, ...], int] = {}
    total = 0
    for s, n in samples:
        if s.cpu not in cpus:
            continue
        total += n
        path = (s.comm,) + tuple(reversed(s.frames))[: max_depth - 1]
        for d in range(1, len(path) + 1):
            tree[path[:d]] = tree.get(path[:d], 0) + n
    rows, cursor = [], {(): 0.0}
    for path in sorted(tree):  # parents sort before their children, siblings by name
        width = tree[path] / total
        parent = path[:-1]
        x0 = cursor.get(parent, 0.0)
        cursor[parent] = x0 + width
        cursor[path] = x0
        if width >= min_share:
            rows.append({"frame": path[-1], "depth": len(path) - 1, "x0": x0, "x1": x0 + width,
                         "samples": tree[path], "share_pct": 100 * width, "path": " ← ".join(reversed(path))})
    return pd.DataFrame(rows)


def icicle_chart(rects: pd.DataFrame, title: str, subtitle: str = "") -> alt.Chart:
    base = alt.Chart(rects).encode(
        x=alt.X("x0:Q", axis=None, scale=alt.Scale(domain=[0, 1])), x2="x1:Q",
        y=alt.Y("depth:O", axis=alt.Axis(title="call depth (root at top)")),
        tooltip=["frame", alt.Tooltip("share_pct:Q", format=".2f", title="% of samples"), "samples", "path"])
    bars = base.mark_bar(stroke="white", strokeWidth=0.5).encode(
        color=alt.Color("frame:N", legend=None, scale=alt.Scale(scheme="orangered")))
    labels = base.transform_filter("datum.x1 - datum.x0 > 0.06").mark_text(
        align="left", dx=3, fontSize=9, color="black").encode(text="frame:N")
    return alt.layer(bars, labels).properties(width=900, height=alt.Step(16),
                                              title=alt.Title(title, subtitle=subtitle))
