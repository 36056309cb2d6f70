"""§3.1 Fig. 3(e)/(f) (F07, F08): verdicts on small hand-made per-run frames, judged by the CI of the
difference between runs, and the recorded Rx-buffer sweep."""
import pandas as pd
import pytest

from conftest import REPO
from hostnet.sections import rx_buffer
from hostnet.analysis.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VOCABULARY

REF = REPO / "data" / "reference"
RUNS = REPO / "data" / "runs"
KB = [100, 200, 400, 800]
SPREAD = (0.0, 0.3, -0.3)  # three runs a point: tpc ± 0.3 Gbit/s, latency ± 3 %


def rx_tidy(tpc, lat, spread=SPREAD, kb=KB) -> pd.DataFrame:
    """Per Rx buffer size a mean tpc (Gbit/s) and receive → copy latency (µs), one run per spread step."""
    rows = []
    for size, t, latency in zip(kb, tpc, lat, strict=True):
        for r, s in enumerate(spread):
            base = {"run_id": f"kb{size}-r{r}", "rx_buffer_kb": size, "category": ""}
            rows += [{**base, "metric": "tpc_gbps", "side": "both", "value": t + s},
                     {**base, "metric": "rx_to_copy_latency_avg_usec", "side": "receiver",
                      "value": latency * (1 + s / 10)}]
    return pd.DataFrame(rows)


def verdicts(tidy) -> pd.DataFrame:
    return rx_buffer.verdict_table(tidy, REF).set_index("id")


def test_latency_up_and_tpc_down_past_its_peak_beyond_the_spread_is_reproduced():
    v = verdicts(rx_tidy([10, 20, 15, 14], [10, 20, 80, 400]))
    assert v.loc["F07", "verdict"] == REPRODUCED, v.loc["F07", "this run shows"]
    shows = v.loc["F07", "this run shows"]
    assert "avg receive → copy latency 100 KB → 800 KB: 10 → 400 µs" in shows
    assert "tpc at its peak (200 KB) → lowest past it (800 KB): 20.00 → 14.00 Gbit/s" in shows
    assert shows.endswith("cache misses: no PMU here")
    assert v.loc["F08", "verdict"] == NOT_TESTABLE
    assert "needs a NIC with adjustable rings" in v.loc["F08", "this run shows"]
    assert rx_buffer.verdict_table.verdicts(rx_tidy([10, 20, 15, 14], [10, 20, 80, 400]), REF).wanted == {}


def test_tpc_drop_within_the_run_to_run_spread_is_inconclusive_and_names_the_points():
    decided = rx_buffer.verdict_table.verdicts(rx_tidy([10, 20, 19, 18.5], [10, 20, 80, 400], spread=(0.0, 1.0, -1.0)),
                                               REF)
    v = decided.table.set_index("id")
    assert v.loc["F07", "verdict"] == INCONCLUSIVE
    assert "20.00 → 18.50 Gbit/s" in v.loc["F07", "this run shows"] and "to decide:" in v.loc["F07", "this run shows"]
    assert decided.wanted == {"F07": [{"rx_buffer_kb": 200}, {"rx_buffer_kb": 800}]}


def test_falling_latency_or_tpc_peaking_at_the_largest_buffer_is_not_reproduced():
    falling = verdicts(rx_tidy([10, 20, 15, 14], [400, 80, 20, 10]))
    assert falling.loc["F07", "verdict"] == NOT_REPRODUCED and "400 → 10 µs" in falling.loc["F07", "this run shows"]
    rising = verdicts(rx_tidy([10, 12, 14, 16], [10, 20, 80, 400]))
    assert rising.loc["F07", "verdict"] == NOT_REPRODUCED
    assert "tpc peaks at the largest buffer (800 KB)" in rising.loc["F07", "this run shows"]


def test_flat_latency_within_the_spread_is_inconclusive_and_two_sizes_judge_nothing():
    v = verdicts(rx_tidy([10, 20, 15, 14], [10, 11, 10, 10.3]))
    assert v.loc["F07", "verdict"] == INCONCLUSIVE and "10 → 10 µs" in v.loc["F07", "this run shows"]
    assert "to decide:" in v.loc["F07", "this run shows"]
    assert rx_buffer.verdict_table.verdicts(rx_tidy([10, 20, 15, 14], [10, 11, 10, 10.3]), REF).wanted == \
        {"F07": [{"rx_buffer_kb": 100}, {"rx_buffer_kb": 800}]}
    assert list(verdicts(rx_tidy([10, 20], [10, 400], kb=[100, 200])).index) == ["F08"]


def test_recorded_sweep_table_has_every_size():
    tidy, manifests = rx_buffer.load(RUNS, "20261123-rx-buffer-embedded")
    t = rx_buffer.table(tidy)
    assert list(t.rx_buffer_kb) == rx_buffer.spec().grid["rx_buffer_kb"]
    assert (t.latency_avg_usec > 0).all() and (t.tpc_gbps > 0).all()
    assert t.latency_p99_usec.iloc[-1] > t.latency_p99_usec.iloc[0]  # the queue grows with the buffer
    decided = rx_buffer.judge(RUNS, "20261123-rx-buffer-embedded", REF)
    v = decided.table
    assert list(v.id) == ["F07", "F08"] and v.verdict.isin(VOCABULARY).all()
    assert "avg receive → copy latency 100 KB → 12800 KB" in v.set_index("id").loc["F07", "this run shows"]
    sizes = rx_buffer.spec().grid["rx_buffer_kb"]
    assert all(p["rx_buffer_kb"] in sizes for pts in decided.wanted.values() for p in pts)


def test_a_sweep_without_latency_samples_still_draws_both_figures(tmp_path):
    """Runs whose latency probe caught no sample (e.g. over SSH, tidy rx_to_copy_samples_count 0)
    give a latency figure that says so instead of a chart with no data, which cannot be drawn."""
    from hostnet.charts import plots
    tidy, _ = rx_buffer.load(RUNS, "20261123-rx-buffer-embedded")
    no_latency = tidy[~tidy.metric.str.startswith("rx_to_copy_latency")]
    charts = rx_buffer.charts(rx_buffer.table(no_latency), "a label")
    saved = [p for stem, ch in charts.items() for p in plots.save(ch, tmp_path / stem)]
    assert {p.name for p in saved} == {"rx-buffer-tpc.svg", "rx-buffer-tpc.png", "rx-buffer-latency.svg",
                                       "rx-buffer-latency.png"}
    assert "no receive → copy latency was measured" in (tmp_path / "rx-buffer-latency.svg").read_text()


def ring_tidy(tpc_by_ring: dict[int, list[float]], kb=(400,), spread=SPREAD) -> pd.DataFrame:
    """A ring sweep (F08): per rx ring size and Rx buffer size a mean tpc, one run per spread step."""
    rows = []
    for ring, tpcs in tpc_by_ring.items():
        for size, t in zip(kb, tpcs, strict=True):
            for r, s in enumerate(spread):
                base = {"run_id": f"ring{ring}-kb{size}-r{r}", "rx_buffer_kb": size, "rx_ring": ring, "category": ""}
                rows += [{**base, "metric": "tpc_gbps", "side": "both", "value": t + s},
                         {**base, "metric": "rx_to_copy_latency_avg_usec", "side": "receiver", "value": 50.0 + s}]
    return pd.DataFrame(rows)


def test_f08_is_judged_where_the_ring_was_swept_smallest_against_largest():
    t = rx_buffer.verdict_table(ring_tidy({256: [20.0], 1024: [18.0], 4096: [15.0]}), REF)
    v = t.set_index("id")
    assert v.loc["F08", "verdict"] == REPRODUCED
    shows = v.loc["F08", "this run shows"]
    assert "tpc rx ring 256 → 4096 descriptors (Rx buffer 400 KB): 20.00 → 15.00 Gbit/s" in shows
    assert "F07" not in v.index  # one Rx buffer size: nothing to say of F07
    flat = rx_buffer.verdict_table.verdicts(ring_tidy({256: [20.0], 4096: [20.2]}, spread=(0.0, 1.0, -1.0)), REF)
    assert flat.table.set_index("id").loc["F08", "verdict"] == INCONCLUSIVE
    assert flat.wanted["F08"] == [{"rx_ring": 256, "rx_buffer_kb": 400},
                                           {"rx_ring": 4096, "rx_buffer_kb": 400}]
    up = verdicts(ring_tidy({256: [15.0], 4096: [20.0]}))
    assert up.loc["F08", "verdict"] == NOT_REPRODUCED
    one = verdicts(ring_tidy({512: [15.0]}))
    assert one.loc["F08", "verdict"] == NOT_TESTABLE
    assert "one rx ring size swept (512)" in one.loc["F08", "this run shows"]


def test_f07_beside_a_ring_sweep_is_judged_at_one_ring_and_says_which():
    both = pd.concat([rx_tidy([10, 20, 15, 14], [10, 20, 80, 400]).assign(rx_ring=256),
                      rx_tidy([9, 19, 14, 13], [10, 20, 80, 400]).assign(rx_ring=4096)
                      .assign(run_id=lambda d: d.run_id + "-big")], ignore_index=True)
    v = verdicts(both)
    assert v.loc["F07", "verdict"] == REPRODUCED and "(rx ring 256)" in v.loc["F07", "this run shows"]
    assert v.loc["F08", "verdict"] == REPRODUCED and "(Rx buffer 800 KB)" in v.loc["F08", "this run shows"]
    summary = rx_buffer.table(both)
    assert list(summary.columns[:2]) == ["rx_ring", "rx_buffer_kb"] and len(summary) == 8
    charts = rx_buffer.charts(summary, "label")
    assert charts["rx-buffer-tpc"].to_dict()["layer"][0]["encoding"]["color"]["field"] == "rx_ring"


def test_the_ring_sweep_joins_the_grid_only_when_asked():
    assert rx_buffer.spec(sizes_kb=[400], rx_rings=[256, 4096]).grid == {"rx_buffer_kb": [400], "rx_ring": [256, 4096]}
    assert "rx_ring" not in rx_buffer.spec().grid


def test_f08_on_servers_without_a_ring_sweep_says_so_instead_of_blaming_veth():
    servers = [{"testbed": {"kind": "servers"}}]
    v = rx_buffer.verdict_table(rx_tidy([10, 20, 15, 14], [10, 20, 80, 400]), REF, servers).set_index("id")
    assert v.loc["F08", "verdict"] == NOT_TESTABLE and "no rx ring sweep (rx_rings)" in v.loc["F08", "this run shows"]
    embedded = [{"testbed": {"kind": "embedded"}}]
    v = rx_buffer.verdict_table(rx_tidy([10, 20, 15, 14], [10, 20, 80, 400]), REF, embedded).set_index("id")
    assert "veth has no NIC rings" in v.loc["F08", "this run shows"]


def test_a_campaign_mixing_ring_and_no_ring_points_is_refused_not_silently_cut(tmp_path):
    """Grouped by ring, the no-ring points (NaN) would vanish from the table and the verdicts."""
    import json
    import shutil
    src = RUNS / "20261128-053016-rx-buffer-embedded"
    dst = tmp_path / "runs" / src.name
    shutil.copytree(src, dst)
    first = sorted(p for p in dst.iterdir() if (p / "manifest.json").exists())[0]
    m = json.loads((first / "manifest.json").read_text())
    m["point"]["rx_ring"] = 4096
    (first / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match="mixes points with and without rx_ring"):
        rx_buffer.load(tmp_path / "runs", src.name)
