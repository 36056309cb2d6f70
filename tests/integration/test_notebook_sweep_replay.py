"""A notebook swept over a grid in replay mode (hostnet.notebook.sweeps), its kernels real: a
papermill run per point. Planning and refusals are unit tests (tests/unit/notebook/test_sweeps.py)."""
from conftest import REPO
from hostnet.notebook import sweeps

RX = REPO / "notebooks" / "02-rx-buffer.ipynb"


def test_a_replay_sweep_leaves_one_table_of_every_points_summary(tmp_path):
    """`hostnet sweep NOTEBOOK`: beside the executed notebooks, sweep.csv holds the summary table each
    point's notebook printed, with the point's swept parameter, status and directory in front."""
    import pandas as pd
    done = sweeps.sweep_notebook(RX, {"sizes_kb": [200, 3200]}, {"include_contaminated": True}, None,
                                 REPO / "data" / "runs", mode="replay", output_dir=tmp_path / "out")
    table = tmp_path / "out" / "sweep.csv"
    assert [e["table"] for e in done] == [table, table]
    df = pd.read_csv(table)
    assert list(df.columns[:3]) == ["sizes_kb", "status", "dir"] and set(df.status) == {"ok"}
    assert df.groupby("sizes_kb").rx_buffer_kb.unique().map(list).to_dict() == {"[200]": [200], "[3200]": [3200]}
    assert "tpc_gbps" in df.columns and df.tpc_gbps.notna().all()
