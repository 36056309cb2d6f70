"""Altair figure builders in one theme; saved as SVG and PNG offline through vl-convert.

Builders take tidy tables (or summaries of them) and never read raw tool output. Importing this
module makes notebooks show charts as PNG images (the "hostnet-png" renderer): a stored PNG output
is drawn with no network, in an untrusted notebook in JupyterLab, on GitHub and by nbconvert,
where altair's HTML output needs scripts from a CDN. interactive() switches to altair's HTML with
the vega bundle inlined, for a live session.
"""
from __future__ import annotations

import base64
import io
from pathlib import Path

import altair as alt
import pandas as pd
import vl_convert as vlc
from PIL import Image

from . import chart_cache
from ..analysis.metrics import BREAKDOWN_ORDER, COVERAGE_MIN, summarize

CATEGORY_COLORS = {
    "data_copy": "#4c78a8", "tcp/ip": "#f58518", "netdev": "#54a24b", "skb": "#e45756",
    "mm": "#72b7b2", "lock": "#b279a2", "sched": "#eeca3b", "etc": "#9d755d",
    "testbed": "#1a1a1a", "user": "#bab0ac", "unclassified": "#d3d3d3",
}
CPU_CLOCK_CAVEAT = ("perf sampled on cpu-clock (no hardware PMU): time with interrupts off is billed "
                    "to handle_softirqs/native_write_msr, inflating 'etc'")
ATTRIBUTED_CAVEAT = ("perf sampled on cpu-clock (no hardware PMU); samples taken where interrupts come back on "
                     "are attributed through the call chain (irqs-off-callchain rule, docs/measurement.md)")


@alt.theme.register("hostnet", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return alt.theme.ThemeConfig({
        "config": {
            "font": "DejaVu Sans",
            "title": {"fontSize": 14, "anchor": "start", "subtitleFontSize": 11, "subtitleColor": "#555"},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": True, "gridColor": "#eee"},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "view": {"stroke": None},
        }
    })


def _order(configs, present) -> list[str]:
    return [c for c in configs if c in set(present)]


def tpc_chart(tidy: pd.DataFrame, order, reference: pd.DataFrame | None = None,
              testbed: str = "embedded veth testbed") -> alt.Chart:
    """Fig. 3(a): throughput-per-core per config from each side, median bar with min-max rule;
    the paper's (receiver-based) ticks sit on the receiver's bar."""
    s = summarize(tidy)
    s = s[(s.metric == "tpc_gbps") & s.side.isin(["sender", "receiver"])]
    sides = ["sender", "receiver"]
    x = alt.X("config:N", sort=_order(order, s.config), title="configuration")
    offset = alt.XOffset("side:N", sort=sides)
    bars = alt.Chart(s).mark_bar().encode(
        x=x, xOffset=offset, y=alt.Y("median:Q", title="throughput per core (Gbit/s)"),
        color=alt.Color("side:N", sort=sides, title="tpc from"),
        tooltip=["config", "side", alt.Tooltip("median:Q", format=".1f"), "min", "max", "n"])
    rules = alt.Chart(s).mark_rule(color="black").encode(x=x, xOffset=offset, y="min:Q", y2="max:Q")
    layers = [bars, rules]
    if reference is not None:
        ref = reference[(reference.metric == "tpc_gbps") & reference.config.isin(s.config)]
        ref = ref.assign(side=ref.get("side", "receiver"))
        layers.append(alt.Chart(ref).mark_tick(color="#e45756", thickness=3, size=14).encode(
            x=x, xOffset=offset, y="value:Q", tooltip=["config", "side", "value"]))
    bottleneck = tidy.attrs.get("bottleneck")
    return alt.layer(*layers).properties(
        width=380, height=260,
        title=alt.Title("Fig. 3(a) analogue: throughput per core, single flow",
                        subtitle=[*testbed.split("\n"), "bar = median, line = min–max over repetitions; "
                                  "the paper's tpc is the bottleneck (receiver) side's",
                                  "red tick = paper (100G NIC testbed), on the side it measured"
                                  if reference is not None else "",
                                  _bottleneck_line(bottleneck) if bottleneck else ""]))


def _bottleneck_line(chosen: dict) -> str:
    sides = sorted(set(chosen.values()))
    return "bottleneck side (higher median CPU per core): " + (sides[0] + " at every point" if len(sides) == 1
                                                                 else "varies by point, see the table")


def cpu_chart(tidy: pd.DataFrame, order, testbed: str = "embedded veth testbed") -> alt.Chart:
    """Fig. 3(b): per-side CPU utilisation (% of one core) per config."""
    s = summarize(tidy)
    s = s[(s.metric == "cpu_util_pct") & s.side.isin(["sender", "receiver"])]
    return alt.Chart(s).mark_bar().encode(
        x=alt.X("config:N", sort=_order(order, s.config), title="configuration"),
        xOffset=alt.XOffset("side:N", sort=["sender", "receiver"]),
        y=alt.Y("median:Q", title="CPU utilisation (% of one core)"),
        color=alt.Color("side:N", sort=["sender", "receiver"], title="side"),
        tooltip=["config", "side", alt.Tooltip("median:Q", format=".1f"), "min", "max"],
    ).properties(width=380, height=260, title=alt.Title(
        "Fig. 3(b) analogue: CPU utilisation per side",
        subtitle=[*testbed.split("\n"), "medians; /proc/stat, % of one core summed over the side's CPUs"]))


def breakdown_chart(tidy: pd.DataFrame, order, side: str, figure: str,
                    testbed: str = "embedded veth testbed", caveat: str | None = None,
                    metric: str = "breakdown_pct") -> alt.Chart:
    """Fig. 3(c)/(d): one side's CPU breakdown by category, stacked to 100 %."""
    caveat = caveat or (ATTRIBUTED_CAVEAT if metric == "breakdown_attributed_pct" else CPU_CLOCK_CAVEAT)
    s = summarize(tidy)
    s = s[(s.metric == metric) & (s.side == side)].copy()
    return alt.Chart(s).mark_bar().encode(
        x=alt.X("config:N", sort=_order(order, s.config), title="configuration"),
        y=alt.Y("median:Q", stack="normalize", title=f"{side} CPU (share of busy samples)",
                axis=alt.Axis(format="%")),
        color=alt.Color("category:N", sort=BREAKDOWN_ORDER, title="category",
                        scale=alt.Scale(domain=BREAKDOWN_ORDER,
                                        range=[CATEGORY_COLORS[c] for c in BREAKDOWN_ORDER])),
        order=alt.Order("category_rank:Q"),
        tooltip=["config", "category", alt.Tooltip("median:Q", format=".1f"), "min", "max"],
    ).transform_calculate(
        category_rank=f"indexof({BREAKDOWN_ORDER!r}, datum.category)"
    ).properties(width=380, height=260, title=alt.Title(
        f"Fig. 3({figure}) analogue: {side} CPU breakdown",
        subtitle=[*testbed.split("\n"), caveat, *breakdown_notes(tidy, side, metric)]))


def breakdown_notes(tidy: pd.DataFrame, side: str, metric: str) -> list[str]:
    """Subtitle lines under a breakdown: which breakdown it is, the testbed's share (drawn apart,
    never the largest layer), the share the attribution moved, and sides with too few samples."""
    s = summarize(tidy)
    mine = s[s.side == side]
    lines = [("call-chain attributed" if metric == "breakdown_attributed_pct" else "leaf symbols only")
             + " breakdown"]
    testbed = mine[(mine.metric == metric) & (mine.category == "testbed")]["median"]
    if len(testbed):
        lines[0] += f"; testbed overhead (black) {testbed.min():.0f}–{testbed.max():.0f} % of busy samples"
    moved = tidy[(tidy.side == side) & (tidy.metric == "perf_reattributed_samples_count")]
    busy = tidy[(tidy.side == side) & (tidy.metric == "perf_busy_samples_count")]
    if metric == "breakdown_attributed_pct" and len(moved) and len(busy):
        share = 100 * moved.groupby("config").value.median() / busy.groupby("config").value.median()
        lines.append(f"the attribution moved {share.min():.0f}–{share.max():.0f} % of samples off their leaf symbol")
    cov = mine[mine.metric == "perf_sampling_coverage_ratio"]
    low = cov[cov["median"] < COVERAGE_MIN]
    if len(low):
        lines.append(f"undersampled (perf samples < {COVERAGE_MIN:.0%} of busy time x rate): "
                     + ", ".join(f"{r.config} {r.median:.2f}" for r in low.itertuples()))
    return lines


# Drawn at twice the CSS size (sharp on HiDPI screens) and shown at CSS size through the output's
# width/height metadata.
PNG_SCALE = 2
STATIC_RENDERER = "hostnet-png"


def _vl_version() -> str:
    """vl-convert's name for the Vega-Lite version altair writes (v6.4.1 -> v6_4)."""
    return "v" + "_".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def png(spec: dict, scale: float = PNG_SCALE) -> tuple[bytes, tuple[int, int]]:
    """A Vega-Lite spec as PNG bytes and its CSS size (width, height) in pixels.

    vl-convert draws it offline; Pillow re-encodes it as a 256-colour palette PNG, because
    vl-convert's PNG is barely compressed (a chart is 4-10x smaller re-encoded) and a chart has few
    colours (the palette keeps its colours and anti-aliasing close enough to read)."""
    def render() -> bytes:
        drawn = Image.open(io.BytesIO(vlc.vegalite_to_png(spec, vl_version=_vl_version(), scale=scale)))
        out = io.BytesIO()
        drawn.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
        return out.getvalue()

    data = chart_cache.rendered("png", spec, render, scale=scale, vl_version=_vl_version())
    width, height = Image.open(io.BytesIO(data)).size  # the header only
    return data, (round(width / scale), round(height / scale))


def svg(chart: alt.Chart, spec: dict | None = None) -> bytes:
    """The chart as altair's own chart.save writes SVG (through vl-convert), from the chart cache
    when the same spec was drawn before. spec: chart.to_dict(), when the caller has it."""
    def render() -> bytes:
        out = io.StringIO()
        chart.save(out, format="svg")
        return out.getvalue().encode()

    return chart_cache.rendered("svg", spec if spec is not None else chart.to_dict(), render)


def _title(spec: dict) -> str:
    title = spec.get("title") or next((c.get("title") for key in ("hconcat", "vconcat", "concat", "layer")
                                       for c in spec.get(key, []) if c.get("title")), "")
    return title.get("text", "") if isinstance(title, dict) else str(title)


def static_renderer(spec: dict, **_options) -> tuple[dict, dict]:
    """An altair renderer: the chart as a PNG output (plus its title as text/plain)."""
    data, (width, height) = png(spec)
    text = f"<chart {width}x{height}: {_title(spec)}>" if _title(spec) else f"<chart {width}x{height}>"
    return ({"image/png": base64.b64encode(data).decode("ascii"), "text/plain": text},
            {"image/png": {"width": width, "height": height}})


def interactive(enable: bool = True) -> None:
    """Interactive charts (tooltips) in a live, trusted session with no network: altair's HTML
    renderer with the vega/vega-lite/vega-embed bundle inlined (from vl-convert, ~1 MB per chart).
    Its outputs are scripts: stored in a notebook they are blank once it is reopened untrusted, on
    GitHub and in nbconvert, so notebooks are stored with the PNG renderer (interactive(False))."""
    if enable:
        alt.renderers.enable("html", template="inline")
    else:
        alt.renderers.enable(STATIC_RENDERER)


alt.renderers.register(STATIC_RENDERER, static_renderer)
alt.renderers.enable(STATIC_RENDERER)


def save(chart: alt.Chart, stem: str | Path) -> list[Path]:
    """Write stem.svg and stem.png (offline, vl-convert; the PNG as in notebooks; both through the
    chart cache, hostnet.charts.chart_cache)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    svg_path, png_path = stem.with_suffix(".svg"), stem.with_suffix(".png")
    spec = chart.to_dict()
    svg_path.write_bytes(svg(chart, spec))
    png_path.write_bytes(png(spec)[0])
    return [svg_path, png_path]
