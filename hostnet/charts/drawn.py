"""What a chart actually draws, read back from its SVG: marks a reader can see, per view.

A chart can render without error and show nothing: bars whose colour scale (shared with another view
of a concatenation) has no colour for their values are drawn with no fill; a view whose offset
scale is another view's domain puts its bars nowhere. Tests use this module on every chart a notebook
stores (its spec, in the output's metadata, drawn again) and on every SVG in figures/.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import vl_convert as vlc

from .plots import _vl_version

SVG_NS = "{http://www.w3.org/2000/svg}"
_MARK_CLASS = re.compile(r"\bmark-(\w+) role-mark (\S+)")
# a mark's name: its view's, then "child" (a facet's cell), layers and "marks"
_VIEW_OF_MARK = re.compile(r"_?(child_)?(layer_\d+_)*marks$")
_INVISIBLE = {"none", "transparent", ""}


@dataclass(frozen=True)
class Mark:
    name: str      # Vega's name for the mark, e.g. concat_1_layer_0_marks
    kind: str      # rect, rule, symbol, text, line, area, ...
    items: int     # elements drawn for it
    visible: int   # of them, those with a fill or stroke a reader can see

    @property
    def view(self) -> str:
        """The view the mark belongs to: its name without the layer and mark suffix
        (concat_1_layer_0_marks -> concat_1; a single chart's marks -> "")."""
        return _VIEW_OF_MARK.sub("", self.name)


def _paint(element, inherited: dict) -> dict:
    paint = dict(inherited)
    for attr in ("fill", "stroke", "opacity", "fill-opacity", "stroke-opacity"):
        if element.get(attr) is not None:
            paint[attr] = element.get(attr)
    return paint


def _shows(paint: dict) -> bool:
    def on(colour: str, opacity: str) -> bool:
        return paint.get(colour, "none") not in _INVISIBLE and float(paint.get(opacity, 1)) > 0
    return float(paint.get("opacity", 1)) > 0 and (on("fill", "fill-opacity") or on("stroke", "stroke-opacity"))


def marks(svg: str | bytes) -> list[Mark]:
    """Every data mark in an SVG vl-convert (Vega) drew, with how many of its items show."""
    root = ET.fromstring(svg)
    found: list[Mark] = []

    def walk(element, paint: dict) -> None:
        paint = _paint(element, paint)
        match = _MARK_CLASS.search(element.get("class", ""))
        if match and element.tag == f"{SVG_NS}g":
            items = list(element)
            shown = 0
            for item in items:
                leaves = [item] if len(item) == 0 else list(item.iter())
                shown += any(_shows(_paint(leaf, _paint(item, paint))) for leaf in leaves)
            found.append(Mark(match.group(2), match.group(1), len(items), shown))
            return
        for child in element:
            walk(child, paint)

    walk(root, {})
    return found


def svg_problems(svg: str | bytes) -> list[str]:
    """What a reader would miss: a mark with items none of which shows (drawn in no colour), and a
    view that shows no mark at all."""
    found = marks(svg)
    problems = [f"{m.name}: {m.items} {m.kind} item(s), none visible" for m in found if m.items and not m.visible]
    views: dict[str, int] = {}
    for m in found:
        views[m.view] = views.get(m.view, 0) + m.visible
    problems += [f"view {view or '(the chart)'} shows no mark" for view, shown in views.items() if not shown]
    return problems


# Channels whose scales Vega-Lite shares across a concatenation unless told otherwise (x and y are
# independent by default); hostnet.charts.plots.panel resolves them independent.
SHARED_BY_DEFAULT = ("color", "fill", "stroke", "opacity", "fillOpacity", "strokeOpacity", "shape", "size",
                     "strokeDash", "xOffset", "yOffset")
_CONCAT = ("hconcat", "vconcat", "concat")


def _encodings(view: dict):
    yield view.get("encoding", {})
    for layer in view.get("layer", []):
        yield from _encodings(layer)
    if "spec" in view:
        yield from _encodings(view["spec"])


def _channel_uses(view: dict, channel: str) -> set[str]:
    """What a view (and views concatenated inside it that share the channel upward) encodes
    `channel` with: field and scale, as text."""
    if any(key in view for key in _CONCAT):
        if view.get("resolve", {}).get("scale", {}).get(channel) == "independent":
            return set()
        return {use for key in _CONCAT for child in view.get(key, []) for use in _channel_uses(child, channel)}
    return {f"{e[channel].get('field')} {e[channel].get('scale', '')}".strip()
            for e in _encodings(view) if isinstance(e.get(channel), dict) and "field" in e[channel]}


def spec_problems(spec: dict) -> list[str]:
    """Concatenations whose views would share a scale built for different fields or domains: one
    view's marks then take another's colours, offsets or legend."""
    problems = []

    def walk(view: dict, where: str) -> None:
        for key in _CONCAT:
            for i, child in enumerate(view.get(key, [])):
                walk(child, f"{where}{key}[{i}]")
        if not any(key in view for key in _CONCAT):
            return
        for channel in SHARED_BY_DEFAULT:
            uses = _channel_uses(view, channel)
            if len(uses) > 1:
                problems.append(f"{where or 'the chart'} shares one {channel} scale across {sorted(uses)}")

    walk(spec, "")
    return problems


def problems(spec: dict) -> list[str]:
    """Everything wrong with a Vega-Lite spec as drawn: shared scales it should not share, and what
    its SVG does not show."""
    return spec_problems(spec) + svg_problems(vlc.vegalite_to_svg(spec, vl_version=_vl_version()))


def plot_areas(spec: dict) -> list[tuple[float, float, float, float]]:
    """(x, y, width, height) in CSS px of each plot area of a chart as vl-convert lays it out (a
    view's, or each cell of a facet): where its marks are, to look for them in a picture of it."""
    drawn = vlc.vegalite_to_scenegraph(spec, vl_version=_vl_version())
    areas = []

    def walk(mark: dict, x: float, y: float) -> None:
        if mark.get("marktype") != "group":
            return
        for item in mark.get("items", []):
            ix, iy = x + item.get("x", 0), y + item.get("y", 0)
            children = item.get("items", [])
            if any(c.get("role") == "mark" and c.get("marktype") != "group" for c in children):
                areas.append((ix, iy, item.get("width", 0), item.get("height", 0)))
            for child in children:
                walk(child, ix, iy)

    walk(drawn["scenegraph"], *drawn["origin"])
    return areas
