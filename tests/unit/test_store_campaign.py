"""store.Campaign: the one owner of a campaign directory (its runs, sweep.json, capabilities.json,
the notebook-sweep record, the lock), and nothing else in hostnet naming those files."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hostnet import store
from hostnet.store import campaign as campaign_files

REPO = Path(__file__).resolve().parents[2]


def test_the_plan_is_read_edited_and_written_whole(tmp_path):
    c = store.Campaign(tmp_path, "c")
    assert not c.is_sweep()
    with pytest.raises(FileNotFoundError):
        c.plan()
    c.path.mkdir()
    c.write_plan({"spec": {"experiment": "single-flow"}, "points": [np.int64(8)]})  # a grid read from a table
    assert c.is_sweep() and c.plan_path == tmp_path / "c" / "sweep.json"
    assert c.edit_plan(lambda plan: plan.setdefault("top_ups", []).append({"state": "running"}) or 0) == 0
    assert json.loads(c.plan_path.read_text()) == {"spec": {"experiment": "single-flow"}, "points": [8],
                                                   "top_ups": [{"state": "running"}]}
    assert not list(c.path.glob("*.tmp"))  # written atomically


def test_a_failing_edit_leaves_the_plan_as_it_was(tmp_path):
    c = store.Campaign(tmp_path, "c")
    c.path.mkdir()
    c.write_plan({"order": ["a-r0"]})

    def breaks(plan):
        plan["order"].append("b-r0")
        raise RuntimeError("killed mid-edit")
    with pytest.raises(RuntimeError):
        c.edit_plan(breaks)
    assert c.plan() == {"order": ["a-r0"]}


def test_the_capability_record_and_other_files_of_the_campaign(tmp_path):
    c = store.Campaign(tmp_path, "c")
    with pytest.raises(FileNotFoundError, match=r"campaign c has no capabilities.json \(record one with mode="):
        c.capabilities()
    assert not c.has_capabilities()
    c.write_capabilities({"label": "embedded", "numa": {}})
    assert c.has_capabilities() and c.capabilities() == {"label": "embedded", "numa": {}}
    assert c.read_json("refused.json", {}) == {}
    c.write_json("refused.json", {"bbr": "no bbr here"})
    assert c.read_json("refused.json") == {"bbr": "no bbr here"}
    assert store.Campaign.at(c.path) == c and c.file("x") == tmp_path / "c" / "x"


def test_runs_are_written_into_the_campaign_and_read_back_through_it(tmp_path):
    c = store.Campaign(tmp_path, "c")
    rd = c.new_run("p-r0", git_commit="abc123")
    rd.manifest.update(experiment="single-flow", config={"name": "tsogro"}, repetition=0)
    rd.finish("failed", error="no perf")
    assert [r.name for r in c.runs()] == ["p-r0"]
    [m] = c.manifests()
    assert m["hostnet"]["git_commit"] == "abc123" and m["campaign"] == "c" and m["status"] == "failed"
    assert c.tidy().empty


def test_the_lock_is_taken_again_by_its_holder_and_refused_to_another(tmp_path):
    c = store.Campaign(tmp_path, "c")
    c.path.mkdir()
    with c.lock():
        with store.Campaign(tmp_path, "c").lock():  # a top-up holds it across its rounds' sweeps
            pass
        assert re.match(r"pid \d+ on .* since ", (c.path / campaign_files.LOCK_FILE).read_text())
    with c.lock():  # released
        pass


def test_no_module_but_the_campaign_names_its_files():
    """sweep.json, capabilities.json, notebook_sweep.json and the lock are spelled in store/campaign.py
    only (comments and docstrings may name them)."""
    names = ("sweep.json", "capabilities.json", "notebook_sweep.json", ".sweep.lock")
    users = set()
    for path in (REPO / "hostnet").rglob("*.py"):
        code = [line.split("#")[0] for line in path.read_text().splitlines()]
        if any(f'"{n}"' in line for line in code for n in names):
            users.add(str(path.relative_to(REPO)))
    assert users == {"hostnet/store/campaign.py"}
