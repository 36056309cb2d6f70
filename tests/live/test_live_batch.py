"""Notebook sweeps executed live by papermill (hostnet.notebook.sweeps.sweep_notebook), once per point,
each into its own campaign, smoke profile. sweep_02 / sweep_07 are shared with the servers
rehearsal (test_live_servers.py), which runs them on its testbed.yaml."""
import json

import pandas as pd
import pytest

from conftest import REPO, live_ready
from hostnet.notebook import sweeps
from hostnet.sections import short_flows

pytestmark = pytest.mark.live
RX = REPO / "notebooks" / "02-rx-buffer.ipynb"
SHORT = REPO / "notebooks" / "07-short-flows.ipynb"


def sweep_02(tmp_path, kind: str, duration: int = 2, **fixed) -> None:
    """Notebook 02 once per Rx buffer size, each into its own …-<kind> campaign; checks what it left.
    duration: the smoke profile's 2 s, longer through SSH (the window's edges take seconds there)."""
    # include_contaminated: other jobs on a shared machine must not fail a test of the sweep mechanism
    done = sweeps.sweep_notebook(RX, {"sizes_kb": [200, 3200]}, {"repetitions": 1, "include_contaminated": True,
                                                                  "duration": duration, **fixed},
                                 "smoke", tmp_path, mode="run")
    assert [e["point"] for e in done] == [{"sizes_kb": [200]}, {"sizes_kb": [3200]}]
    for entry in done:
        cdir = tmp_path / entry["campaign"]
        executed = json.loads((cdir / RX.name).read_text())
        assert executed["metadata"]["papermill"]["parameters"]["sizes_kb"] == entry["point"]["sizes_kb"]
        manifests = [json.loads(p.read_text()) for p in cdir.glob("*/manifest.json")]
        assert manifests and {m["point"]["rx_buffer_kb"] for m in manifests} == set(entry["point"]["sizes_kb"])
        assert entry["campaign"].endswith(f"-{kind}") and {m["testbed"]["kind"] for m in manifests} == {kind}
        assert all(m["workload"]["duration_s"] == duration for m in manifests)
        assert (cdir / "figures" / "rx-buffer-tpc.svg").stat().st_size > 1000
        assert json.loads((cdir / "notebook_sweep.json").read_text())["status"] == "ok"
    assert not (REPO / "notebooks" / "executed" / "sweep").exists()
    table = done[0]["table"]  # every point's summary, beside the campaigns
    assert table.parent == tmp_path and table.name.endswith("-sweep.csv")
    assert set(pd.read_csv(table).rx_buffer_kb) == {200, 3200}


def sweep_07(tmp_path, kind: str, duration: int = 2, **fixed) -> None:
    """Notebook 07 (short flows) once per RPC size, each into its own …-<kind> campaign."""
    done = sweeps.sweep_notebook(SHORT, {"rpc_sizes": [4, 64]},
                                 {"repetitions": 1, "flows": 2, "include_contaminated": True, "duration": duration,
                                  **fixed},
                                 "smoke", tmp_path, mode="run")
    assert [e["point"] for e in done] == [{"rpc_sizes": [4]}, {"rpc_sizes": [64]}]
    for entry in done:
        cdir = tmp_path / entry["campaign"]
        assert json.loads((cdir / "notebook_sweep.json").read_text())["status"] == "ok"
        executed = json.loads((cdir / SHORT.name).read_text())
        assert executed["metadata"]["papermill"]["parameters"]["rpc_sizes"] == entry["point"]["rpc_sizes"]
        manifests = [json.loads(p.read_text()) for p in cdir.glob("*/manifest.json")]
        assert manifests and all(m["status"] == "ok" for m in manifests)
        assert entry["campaign"].endswith(f"-{kind}") and {m["testbed"]["kind"] for m in manifests} == {kind}
        # the notebook's KB become the workload's bytes (64 KB is capped at sockperf's largest message,
        # whichever tool runs, so points compare); every run is one point of `duration` seconds
        kb = entry["point"]["rpc_sizes"][0]
        assert {m["point"]["rpc_size"] for m in manifests} == {min(kb * 1024, 65506)} == {short_flows.size_bytes(kb)}
        assert all(m["workload"]["duration_s"] == duration and len(m["flows"]) == 2 for m in manifests)
        assert (cdir / "figures" / "short-flows-tpc.svg").stat().st_size > 1000


def test_sweep_notebook_02_over_two_rx_buffer_sizes(tmp_path, state_dir):
    """Notebook 02 executed live on fresh embedded testbeds, once per Rx buffer size."""
    why = live_ready()
    if why:
        pytest.skip(why)
    sweep_02(tmp_path, "embedded")


def test_sweep_notebook_07_over_two_rpc_sizes(tmp_path, state_dir):
    """Notebook 07 (short flows) executed live on fresh embedded testbeds, once per RPC size."""
    why = live_ready()
    if why:
        pytest.skip(why)
    sweep_07(tmp_path, "embedded")
