"""hostnet.charts.drawn reads back what an SVG shows: marks in no colour, views with nothing drawn,
and concatenations that share a scale across fields."""
import altair as alt
import pandas as pd
import vl_convert as vlc

from hostnet.charts import drawn, plots

DATA = pd.DataFrame({"x": list("abc"), "y": [3, 1, 2]})


def _svg(chart) -> str:
    return vlc.vegalite_to_svg(chart.to_dict(), vl_version=plots._vl_version())


def test_a_drawn_chart_has_visible_marks_and_no_problem():
    bars = alt.Chart(DATA).mark_bar().encode(x="x", y="y")
    rule = alt.Chart(DATA).mark_rule(color="black").encode(x="x", y="y")
    found = drawn.marks(_svg(alt.layer(bars, rule)))
    assert [(m.name, m.kind, m.items, m.visible, m.view) for m in found] == [
        ("layer_0_marks", "rect", 3, 3, ""), ("layer_1_marks", "rule", 3, 3, "")]
    assert drawn.svg_problems(_svg(alt.layer(bars, rule))) == []


def test_marks_drawn_in_no_colour_or_fully_transparent_are_reported():
    clear = alt.Chart(DATA).mark_bar(opacity=0).encode(x="x", y="y")
    assert drawn.svg_problems(_svg(clear)) == ["marks: 3 rect item(s), none visible", "view (the chart) shows no mark"]
    unfilled = alt.Chart(DATA).mark_bar(fill="transparent").encode(x="x", y="y")
    assert "marks: 3 rect item(s), none visible" in drawn.svg_problems(_svg(unfilled))


def test_an_empty_layer_beside_a_drawn_one_is_not_a_problem():
    """A reference layer with no rows (no paper number for these configs) draws nothing, rightly."""
    bars = alt.Chart(DATA).mark_bar().encode(x="x", y="y")
    none = alt.Chart(DATA.iloc[:0]).mark_tick().encode(x="x", y="y")
    assert drawn.svg_problems(_svg(alt.layer(bars, none))) == []


def test_views_are_named_by_their_concatenation_and_facet_cells():
    facet = alt.Chart(DATA.assign(side=["s", "r", "s"])).mark_bar().encode(x="x", y="y", column="side")
    chart = alt.hconcat(alt.layer(alt.Chart(DATA).mark_bar().encode(x="x", y="y")), facet)
    assert {m.view for m in drawn.marks(_svg(chart))} == {"concat_0", "concat_1"}


def test_a_concatenation_sharing_a_scale_across_fields_is_a_problem_unless_resolved_independent():
    a = alt.Chart(DATA).mark_bar().encode(x="x", y="y", color="x:N")
    b = alt.Chart(DATA).mark_bar().encode(x="x", y="y", color="y:N")
    assert drawn.spec_problems((a | b).to_dict()) == ["the chart shares one color scale across ['x', 'y']"]
    assert drawn.spec_problems((a | a).to_dict()) == []  # one field: sharing is what the reader wants
    assert drawn.spec_problems(((a | b).resolve_scale(color="independent") & a).to_dict()) == []
    assert drawn.spec_problems(plots.panel(a, b).to_dict()) == []
    nested = alt.vconcat(alt.hconcat(a, b), a).to_dict()
    assert drawn.spec_problems(nested) == ["vconcat[0] shares one color scale across ['x', 'y']",
                                           "the chart shares one color scale across ['x', 'y']"]
