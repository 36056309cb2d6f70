"""Flame graphs from folded stacks: a self-contained interactive HTML page (d3-flame-graph, vendored
in hostnet/assets: search, click to zoom, tooltips, no network) for people, and an altair icicle
chart (a static PNG/SVG) for notebooks and figures."""
from __future__ import annotations

import html
import json
from importlib import resources
from string import Template
from typing import Iterable

import altair as alt
import pandas as pd

from ..parsers.perf_script import Sample

# Inlined in this order (d3-flame-graph's UMD build reads the global d3); hostnet/assets/README.md
# says where they come from.
ASSETS = ("d3-7.9.0.min.js", "d3-flame-graph-5.0.0.umd.min.js")


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
    return alt.layer(bars, labels).properties(width=760,  # with its labels, within plots.PANEL_WIDTH
                                              height=alt.Step(16),
                                              title=alt.Title(title, subtitle=subtitle))


def stack_tree(samples: Iterable[tuple[Sample, int]], cpus, root: str = "all") -> dict:
    """d3-flame-graph's input from folded samples of the given CPUs: nested {"name", "value",
    "children"}, the command under the root and its call chain from the outermost frame down;
    value = the node's samples including its children's. Nothing is dropped: the viewer zooms."""
    top = {"name": root, "value": 0, "children": {}}
    for s, n in samples:
        if s.cpu not in cpus:
            continue
        node = top
        node["value"] += n
        for frame in (s.comm, *reversed(s.frames)):
            node = node["children"].setdefault(frame, {"name": frame, "value": 0, "children": {}})
            node["value"] += n

    def listed(node: dict) -> dict:  # children by name while counting, a list (by name) for d3
        return {"name": node["name"], "value": node["value"],
                "children": [listed(c) for _, c in sorted(node["children"].items())]}
    return listed(top)


_PAGE = Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>$title</title>
<style>body{font-family:"DejaVu Sans",Verdana,sans-serif;margin:1em;color:#222}h1{font-size:1.3em;margin:0}
.meta{color:#555;margin:.3em 0 .8em}form{margin:.5em 0}#details{min-height:1.4em;font-size:.9em;color:#333}</style>
<script>$d3</script>
<script>$flamegraph</script>
</head><body>
<h1>$title</h1>
<p class="meta">$subtitle Width = share of samples; the root is at the bottom. Click a frame to zoom,
search by regular expression (matches turn purple).</p>
<form id="search"><input id="term" type="search" size="40" placeholder="frame name or regex, e.g. copy|tcp_">
<button type="submit">search</button> <button type="button" id="clear">clear</button>
<button type="button" id="reset">reset zoom</button></form>
<div id="details"></div>
<div id="chart"></div>
<script type="application/json" id="stacks">$data</script>
<script>
const data = JSON.parse(document.getElementById("stacks").textContent);
const details = document.getElementById("details");
const pct = v => (100 * v / data.value).toFixed(2);
const chart = flamegraph.default()
  .width(Math.max(960, document.body.clientWidth))
  .cellHeight(18).minFrameSize(1).transitionDuration(300)
  .setDetailsElement(details)
  .tooltip(flamegraph.tooltip.defaultFlamegraphTooltip()
    .text(d => d.data.name + ": " + d.value + " samples (" + pct(d.value) + " %)"));
d3.select("#chart").datum(data).call(chart);
document.getElementById("search").addEventListener("submit", e => {
  e.preventDefault();
  try { chart.search(document.getElementById("term").value); }
  catch (err) { details.textContent = "not a regular expression: " + err.message; }
});
document.getElementById("clear").addEventListener("click", () => { chart.clear(); details.textContent = ""; });
document.getElementById("reset").addEventListener("click", () => chart.resetZoom());
</script>
</body></html>
""")


def flamegraph_html(tree: dict, title: str, subtitle: str = "") -> str:
    """One HTML file with the d3 and d3-flame-graph code inlined: opens from disk with no network."""
    assets = resources.files("hostnet") / "assets"
    d3, fg = (assets.joinpath(name).read_text(encoding="utf-8") for name in ASSETS)
    # "<" escaped so that no frame name can close the <script> element the JSON sits in
    data = json.dumps(tree, separators=(",", ":")).replace("<", "\\u003c")
    return _PAGE.substitute(title=html.escape(title), subtitle=html.escape(subtitle), d3=d3, flamegraph=fg,
                            data=data)
