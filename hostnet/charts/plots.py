"""Altair figure builders in one theme; saved as SVG and PNG offline through vl-convert.

Builders take tidy tables (or summaries of them) and never read raw tool output. Importing this
module makes notebooks show charts as PNG images (the "hostnet-png" renderer): a stored PNG output
is drawn with no network, in an untrusted notebook in JupyterLab, on GitHub and by nbconvert,
where altair's HTML output needs scripts from a CDN. interactive() switches to altair's HTML with
the vega bundle inlined, for a live session.
"""
from __future__ import annotations

import base64
import copy
import gzip
import io
import json
import textwrap
from pathlib import Path

import altair as alt
import pandas as pd
import vl_convert as vlc
from PIL import Image

from . import chart_cache
from ..analysis.metrics import BREAKDOWN_ORDER, COVERAGE_MIN, summarize
# the shared encodings, named here too for the builders below and their callers
from .encodings import ATTRIBUTED_CAVEAT, CATEGORY_COLORS, CPU_CLOCK_CAVEAT  # noqa: F401


TITLE_PX, SUBTITLE_PX = 14, 12


@alt.theme.register("hostnet", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return alt.theme.ThemeConfig({
        "config": {
            "font": "DejaVu Sans",
            "title": {"fontSize": TITLE_PX, "anchor": "start", "subtitleFontSize": SUBTITLE_PX,
                      "subtitleColor": "#333", "subtitlePadding": 4},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": True, "gridColor": "#eee"},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "view": {"stroke": None},
        }
    })


def _order(configs, present) -> list[str]:
    return [c for c in configs if c in set(present)]


def tpc_chart(tidy: pd.DataFrame, order, reference: pd.DataFrame | None = None,
              testbed: str = "embedded veth testbed", bottleneck: dict[str, str] | None = None) -> alt.Chart:
    """Fig. 3(a): throughput-per-core per config from each side, median bar with min-max rule;
    the paper's (receiver-based) ticks sit on the receiver's bar; bottleneck (metrics.bottlenecks):
    the side chosen per point, said under the title."""
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


def svg(spec: dict) -> bytes:
    """A Vega-Lite spec as SVG (vl-convert, offline), from the chart cache when drawn before."""
    return chart_cache.rendered("svg", spec, lambda: vlc.vegalite_to_svg(spec, vl_version=_vl_version()).encode(),
                                vl_version=_vl_version())


def _title(spec: dict) -> str:
    title = spec.get("title") or next((c.get("title") for key in ("hconcat", "vconcat", "concat", "layer")
                                       for c in spec.get(key, []) if c.get("title")), "")
    return title.get("text", "") if isinstance(title, dict) else str(title)


# Where a notebook output keeps the spec its PNG was drawn from: output metadata (no viewer shows
# it, nbval does not compare it), gzipped JSON in base64 (a flame graph's spec is ~200 KB of text);
# tests draw it again to check every view shows marks (stored_spec reads it back).
SPEC_METADATA = "hostnet/vega-lite+gzip"


def _packed(spec: dict) -> str:
    text = json.dumps(spec, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(text, mtime=0)).decode("ascii")  # mtime=0: the same bytes every run


def stored_spec(output_metadata: dict) -> dict | None:
    """The spec a stored chart output was drawn from (None: stored before hostnet kept it)."""
    packed = output_metadata.get(SPEC_METADATA)
    return json.loads(gzip.decompress(base64.b64decode(packed))) if packed else None


def static_renderer(spec: dict, **_options) -> tuple[dict, dict]:
    """An altair renderer: the chart as a PNG output (plus its title as text/plain), its titles fitted
    to its views and the spec it was drawn from in the output's metadata."""
    spec = fitted(spec)
    data, (width, height) = png(spec)
    text = f"<chart {width}x{height}: {_title(spec)}>" if _title(spec) else f"<chart {width}x{height}>"
    return ({"image/png": base64.b64encode(data).decode("ascii"), "text/plain": text},
            {"image/png": {"width": width, "height": height}, SPEC_METADATA: _packed(spec)})


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
    """Write stem.svg and stem.png (offline, vl-convert; titles fitted and the PNG drawn as in
    notebooks; both through the chart cache, hostnet.charts.chart_cache)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    svg_path, png_path = stem.with_suffix(".svg"), stem.with_suffix(".png")
    spec = fitted(chart.to_dict())
    svg_path.write_bytes(svg(spec))
    png_path.write_bytes(png(spec)[0])
    return [svg_path, png_path]


# Charts shown together: a notebook's output area is about 950 CSS px wide in JupyterLab in a 1,400 px
# window (measured, tests/notebooks/test_notebooks_in_jupyterlab.py), about as wide on GitHub and in
# nbconvert's HTML; a wider image is scaled down, and its 12 px subtitles with it. Views are laid out
# in rows no wider than this.
PANEL_WIDTH = 900
CONCAT_SPACING = 20  # Vega-Lite's default space between concatenated views
# Scales concatenated views must not share: Vega-Lite shares every non-position scale across a
# concatenation, so a view colouring by one field would take the colours (and offsets) of another's
# domain, and draw its marks in no colour at all when that domain has an explicit range.
INDEPENDENT = ("color", "fill", "stroke", "opacity", "fillOpacity", "strokeOpacity", "shape", "size",
               "strokeDash", "xOffset", "yOffset")


def panel(*charts, columns: int | None = None) -> alt.TopLevelMixin:
    """Charts shown together in one output: each keeps its own colours, offsets and legend. Rows of
    `columns` charts, or by default each row as many of the next charts as fit PANEL_WIDTH once their
    titles are fitted (a chart wider than that alone)."""
    if columns is not None:
        rows = [list(charts[i:i + columns]) for i in range(0, len(charts), columns)]
    else:
        rows, used = [], PANEL_WIDTH + 1
        for chart in charts:
            spec = fitted(chart.to_dict())
            width = drawn_width(spec, spec) + CONCAT_SPACING
            if used + width > PANEL_WIDTH + CONCAT_SPACING:
                rows.append([])
                used = 0
            rows[-1].append(chart)
            used += width
    lines = [_apart(alt.hconcat(*row)) if len(row) > 1 else row[0] for row in rows]
    return _apart(alt.vconcat(*lines)) if len(lines) > 1 else lines[0]


def _apart(concat):
    return concat.resolve_scale(**{channel: "independent" for channel in INDEPENDENT})


def drawn_width(view: dict, root: dict) -> int:
    """The width in CSS px vl-convert draws a view at (plot, axes, legend, title), the view taken out
    of the spec `root` (whose data and config it uses); through the chart cache."""
    spec = {**view, **{k: root[k] for k in ("$schema", "config", "datasets") if k in root}}

    def measure() -> bytes:
        return str(vlc.vegalite_to_scenegraph(spec, vl_version=_vl_version())["width"]).encode()

    return round(float(chart_cache.rendered("width", spec, measure, vl_version=_vl_version())))


def fitted(spec: dict) -> dict:
    """The spec with each title and subtitle line wrapped to the width its view draws without them,
    so text is never what widens a chart, and so never what shrinks it on the page."""
    spec = copy.deepcopy(spec)
    _fit(spec, spec)
    return spec


def _fit(view: dict, root: dict) -> None:
    for key in ("hconcat", "vconcat", "concat"):
        for child in view.get(key, []):
            _fit(child, root)
    title = view.get("title")
    if not title:
        return
    # the y axis's labels and title sit left of where a title starts
    room = drawn_width({k: v for k, v in view.items() if k != "title"}, root) - 40
    title = {"text": title} if isinstance(title, (str, list)) else dict(title)
    title["text"] = _wrap(title.get("text", ""), room, TITLE_PX, em=0.62)
    if "subtitle" in title:
        title["subtitle"] = _wrap(title["subtitle"], room, SUBTITLE_PX, em=0.56)
    view["title"] = title


def _wrap(lines, room: float, px: int, em: float) -> list[str] | str:
    """Lines wrapped at the characters that fit `room` pixels of DejaVu Sans at `px` (`em`: its
    average character width, in em); empty lines dropped."""
    lines = [lines] if isinstance(lines, str) else list(lines)
    chars = max(30, int(room / (em * px)))
    out = [w for line in lines if line for w in textwrap.wrap(line, chars, break_on_hyphens=False)]
    return out[0] if len(out) == 1 else out
