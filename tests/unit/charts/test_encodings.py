"""hostnet.charts.encodings: the encodings every figure shares."""
import pandas as pd

from hostnet.analysis.metrics import BREAKDOWN_ORDER
from hostnet.charts import encodings


def test_a_category_keeps_its_colour_in_any_order_and_subset():
    whole = encodings.category_color().to_dict()
    assert whole["sort"] == list(BREAKDOWN_ORDER) and whole["title"] == "category"
    assert dict(zip(whole["scale"]["domain"], whole["scale"]["range"], strict=True)) == {
        c: encodings.CATEGORY_COLORS[c] for c in BREAKDOWN_ORDER}
    some = encodings.category_color(["skb", "data_copy"], title=None).to_dict()
    assert "title" not in some  # left to Vega-Lite
    assert some["scale"] == {"domain": ["skb", "data_copy"], "range": ["#e45756", "#4c78a8"]}


def test_the_caveat_follows_the_breakdown_metric():
    assert encodings.caveat("breakdown_attributed_pct") == encodings.ATTRIBUTED_CAVEAT
    assert encodings.caveat("breakdown_pct") == encodings.caveat(None) == encodings.CPU_CLOCK_CAVEAT


def test_ci_bars_span_lo_to_hi_on_the_bars_axis_title():
    d = pd.DataFrame({"k": ["a"], "lo": [1.0], "hi": [2.0]})
    spec = encodings.ci_bars(d, "k:N", "Gbit/s", xOffset="side:N").to_dict()
    assert spec["mark"]["type"] == "errorbar"
    assert spec["encoding"]["y"] == {"field": "lo", "title": "Gbit/s", "type": "quantitative"}
    assert spec["encoding"]["y2"] == {"field": "hi"} and spec["encoding"]["xOffset"]["field"] == "side"
    y = encodings.share_axis("share").to_dict()
    assert y["stack"] == "normalize" and y["axis"] == {"format": "%"}


def test_a_breakdown_s_caveat_is_that_of_the_metric_its_rows_name():
    def bd(*metrics):
        return pd.DataFrame({"category": ["skb"] * len(metrics), "pct": [1.0] * len(metrics), "metric": list(metrics)})
    assert encodings.breakdown_caveat(bd("breakdown_attributed_pct")) == encodings.ATTRIBUTED_CAVEAT
    assert encodings.breakdown_caveat(bd("breakdown_pct", "breakdown_pct")) == encodings.CPU_CLOCK_CAVEAT
    # shares of both breakdowns, or none: the attribution does not vouch for every bar
    assert encodings.breakdown_caveat(bd("breakdown_pct", "breakdown_attributed_pct")) == encodings.CPU_CLOCK_CAVEAT
    assert encodings.breakdown_caveat(bd()) == encodings.CPU_CLOCK_CAVEAT
