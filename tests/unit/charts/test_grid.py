"""hostnet.charts.grid: the one-grid-key sections' figures, drawn from grid_view's tables; the
breakdown's caveat follows the metric the table names, not a side channel pandas drops. Every
section's chart module draws in the hostnet theme whoever imported it:
tests/integration/test_chart_module_alone.py."""
import pandas as pd

from hostnet.charts import encodings, grid
from hostnet.sections import grid_view


def shares_tidy(metric: str, values=(0, 1), reps: int = 2) -> pd.DataFrame:
    """Per grid value `k` and repetition, each side's data_copy/tcp/ip shares of `metric`."""
    rows = []
    for k in values:
        for r in range(reps):
            for side in ("sender", "receiver"):
                rows += [{"run_id": f"k{k}-r{r}", "k": k, "side": side, "metric": metric, "category": c,
                          "value": p + r} for c, p in (("data_copy", 40.0 + k), ("tcp/ip", 20.0 - k))]
    return pd.DataFrame(rows)


def subtitle(chart) -> list[str]:
    return chart.to_dict()["title"]["subtitle"]


def test_a_breakdown_names_its_metric_and_the_chart_says_that_metric_s_caveat():
    attributed = grid_view.breakdown(shares_tidy("breakdown_attributed_pct"), "k")
    assert set(attributed.metric) == {"breakdown_attributed_pct"} and len(attributed) == 8
    # the column survives what callers do to the table (filter, assign, concat), as attrs did not always
    kept = pd.concat([attributed[attributed.k == k].assign(k=f"{k} KB") for k in (1, 0)])
    chart = grid.breakdown_chart(kept, "k", "t", "a\nlabel", "value")
    assert subtitle(chart) == ["a", "label", encodings.ATTRIBUTED_CAVEAT, "means over repetitions"]
    assert "metric" not in chart.to_dict()["datasets"][chart.to_dict()["data"]["name"]][0]  # not drawn
    leaf = grid_view.breakdown(shares_tidy("breakdown_pct"), "k")
    assert encodings.CPU_CLOCK_CAVEAT in subtitle(grid.breakdown_chart(leaf, "k", "t", "l", "value"))


def test_the_breakdown_table_pivots_the_shares_not_the_metric():
    bd = grid_view.breakdown(shares_tidy("breakdown_pct"), "k")
    wide = grid_view.breakdown_table(bd, "k")
    assert list(wide.columns) == [0, 1] and wide.loc[("receiver", "data_copy"), 1] == 41.5


def test_tpc_bars_draw_the_ci_around_the_mean():
    s = pd.DataFrame({"label": ["a", "b"], "tpc_gbps": [10.0, 8.0], "tpc_gbps_ci95": [1.0, None],
                      "repetitions": [3, 1]})
    assert grid.tpc_ci(s)[["lo", "hi"]].values.tolist() == [[9.0, 11.0], [8.0, 8.0]]
    spec = grid.tpc_bars(s, "label", "x", "title", ["sub"]).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "errorbar"]
    assert spec["layer"][0]["encoding"]["x"]["sort"] == ["a", "b"]
