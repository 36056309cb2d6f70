"""Notebook 13 live in the quick profile: microbenchmarks and two batch sizes on a fresh
embedded testbed, through papermill, and everything the testbed changed is undone."""
import json

import pytest

from conftest import REPO, live_ready
from hostnet.notebook import batch
from hostnet import store, testbed

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def test_notebook_13_runs_live_quick(state_dir, tmp_path):
    runs, figs = tmp_path / "runs", tmp_path / "figures"
    runs.mkdir()
    before = _our_namespaces()
    params = {"mode": "run", "campaign": "live13", **batch.SMOKE, "batch_sizes": [1, 32],
              "micro_scale": 0.1, "top_up_rounds": 0,
              "runs_dir": str(runs), "figures_dir": str(figs)}
    batch.execute(REPO / "notebooks" / "13-time-budget.ipynb", params, tmp_path / "executed")
    manifests = store.load_manifests(runs, "live13")
    batches = sorted(m["point"]["batch"] for m in manifests if m["experiment"] == "udp-batch")
    assert batches == sorted([1, 32] * batch.SMOKE["repetitions"]) and all(m["status"] == "ok" for m in manifests)
    assert any(m["experiment"] == "time-budget-micro" for m in manifests)
    meta = json.loads((figs / "13-time-budget.meta.json").read_text())
    assert [v["id"] for v in meta["verdicts"]] == ["F18", "F19", "F20"]
    assert (figs / "time-budget-batch-pps.svg").stat().st_size > 1000
    # the notebook's testbed is gone: no state left, no new namespace of its kind
    assert testbed.status() == []
    assert _our_namespaces() <= before


def _our_namespaces() -> set[str]:
    from pathlib import Path
    d = Path("/run/netns")
    return {p.name for p in d.iterdir() if p.name.startswith("hostnet-tb")} if d.exists() else set()
