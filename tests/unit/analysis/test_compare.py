"""hostnet.analysis.compare: two stored sweeps, point by point, with the CI of the difference."""
import math

import pandas as pd
import pytest

from hostnet.analysis import compare
from hostnet import store


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
