import math

import pandas as pd
import pytest

from hostnet import analysis, compare, store, sweep


def test_spec_points_and_validation(tmp_path):
    spec = sweep.SweepSpec(configs=["tsogro", "all-opts"], grid={"rx_buffer_kb": [100, 200, 400]}, repetitions=2)
    assert len(spec.points()) == 6 and spec.points()[0] == {"config": "tsogro", "rx_buffer_kb": 100}
    for bad, msg in (({"grid": {"rx_buf": [1]}}, "unknown grid parameter"), ({"experiment": "warp"}, "experiment"),
                     ({"configs": ["turbo"]}, "unknown config"), ({"repetitions": 0}, "repetitions"),
                     ({"grid": {"flows": [2]}}, "single pattern"), ({"colour": 1}, "unknown sweep key")):
        with pytest.raises(ValueError, match=msg):
            sweep.SweepSpec.from_dict(bad)
    path = tmp_path / "s.yaml"
    path.write_text("experiment: incast\nconfigs: [tsogro]\ngrid: {flows: [1, 2], rpc_size: [4096]}\nrepetitions: 1\n")
    spec = sweep.SweepSpec.from_yaml(path)
    assert [p["flows"] for p in spec.points()] == [1, 2]


def test_rx_buffer_point_sets_tcp_rmem_whole():
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 100}).tcp_rmem == "4096 102400 102400"
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 12800}).tcp_rmem == "4096 131072 13107200"


def test_point_ids_are_stable_and_depend_on_the_testbed():
    fp = {"kind": "embedded", "kernels": ["6.18"]}
    a = sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, fp, "single-flow")
    assert a == sweep.point_id({"rx_buffer_kb": 100, "config": "tsogro"}, fp, "single-flow")
    assert a != sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, {**fp, "kernels": ["6.1"]}, "single-flow")


def test_confidence_interval_on_fixed_data():
    mean, half = analysis.confidence([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(analysis.confidence([5.0])[1])
    mean, half = analysis.confidence([10.0] * 40)
    assert (mean, half) == (10.0, 0.0)


def _campaign(runs_dir, name, tpcs):
    for rep, tpc in enumerate(tpcs):
        rd = store.RunDir(runs_dir, name, f"p-r{rep}")
        rd.manifest.update(experiment="single-flow", config={"name": "tsogro"},
                           point={"id": "p", "config": "tsogro", "rx_buffer_kb": 400})
        rows = [{"run_id": f"p-r{rep}", "campaign": name, "experiment": "single-flow", "config": "tsogro",
                 "repetition": rep, "side": "both", "metric": "tpc_gbps", "category": "", "flow": "", "value": tpc}]
        rd.finish("ok", pd.DataFrame(rows))


def test_compare_two_stored_sweeps(tmp_path):
    _campaign(tmp_path, "a", [10.0, 11.0, 12.0])
    _campaign(tmp_path, "b", [20.0, 21.0, 22.0])
    m = compare.compare(tmp_path, "a", "b")
    row = m[m.metric == "tpc_gbps"].iloc[0]
    assert row.point == "config=tsogro, rx_buffer_kb=400"
    assert (row.mean_a, row.mean_b, row.delta) == (11.0, 21.0, 10.0)
    assert row.delta_ci95 == pytest.approx(math.sqrt(2) * 4.303 / math.sqrt(3))
    assert "B-A    10.00" in compare.format_comparison(m)
    with pytest.raises(FileNotFoundError):
        compare.compare(tmp_path, "a", "missing")


