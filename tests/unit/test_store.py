"""hostnet.store: run directories (ok, failed, died mid-way), the manifest schema and its
upgrade, and the one rule for which runs analysis leaves out."""
import json

import pandas as pd
import pytest

from hostnet import store


def _row(**kw):
    base = {"run_id": "r", "campaign": "c", "experiment": "single-flow", "config": "tsogro",
            "repetition": 0, "side": "both", "metric": "throughput_gbps", "category": "", "flow": "", "value": 1.0}
    return {**base, **kw}


def test_run_dir_ok_and_failed(tmp_path):
    ok = store.RunDir(tmp_path, "c", "r1")
    ok.manifest["experiment"] = "single-flow"
    ok.write_raw("tool.txt", "raw output")
    assert ok.path.name == "r1.partial"
    final = ok.finish("ok", pd.DataFrame([_row(run_id="r1")]))
    assert final == tmp_path / "c" / "r1" and not ok.path.exists()
    assert (final / "raw" / "tool.txt").read_text() == "raw output"
    m = store.load_manifest(final)
    assert m["status"] == "ok" and m["schema"] == store.SCHEMA_VERSION and m["files"] == ["tool.txt"]

    bad = store.RunDir(tmp_path, "c", "r2")
    bad.manifest["experiment"] = "single-flow"
    final2 = bad.finish("failed", pd.DataFrame([_row(run_id="r2")]), error="iperf3 error: refused")
    assert not (final2 / "tidy.csv").exists()
    assert json.loads((final2 / "manifest.json").read_text())["error"] == "iperf3 error: refused"

    (tmp_path / "c" / "r3.partial").mkdir()  # a run that died mid-way is invisible
    assert [r.name for r in store.list_runs(tmp_path, "c")] == ["r1", "r2"]
    tidy = store.load_tidy(tmp_path, "c", "single-flow")
    assert list(tidy.run_id) == ["r1"]
    assert store.latest_campaign(tmp_path, "single-flow") == "c"
    with pytest.raises(FileExistsError):
        store.RunDir(tmp_path, "c", "r1")


def test_manifest_schema_is_checked(tmp_path):
    run = tmp_path / "c" / "r"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"schema": 99}))
    with pytest.raises(ValueError, match="schema 99"):
        store.load_manifest(run)


def test_schema_1_runs_are_upgraded_on_load(tmp_path):
    run = tmp_path / "c" / "old"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"schema": 1, "run_id": "old", "status": "ok",
                                                   "experiment": "single-flow", "workload": {"port": 5201}}))
    pd.DataFrame([{k: v for k, v in _row(run_id="old").items() if k != "flow"}]).to_csv(run / "tidy.csv",
                                                                                      index=False)
    m = store.load_manifest(run)
    assert m["schema"] == store.SCHEMA_VERSION and m["workload"]["pattern"] == "single"
    t = store.read_tidy(run)
    assert list(t.columns) == store.TIDY_COLUMNS and t.flow.iloc[0] == "" and t.category.iloc[0] == ""


def test_one_rule_says_which_runs_analysis_leaves_out():
    from hostnet.sections import common
    from hostnet import store
    ms = [{"run_id": "a", "status": "ok"}, {"run_id": "b", "status": "ok", "contaminated": True},
          {"run_id": "c", "status": "ok", "short_window": "0.4 s"}, {"run_id": "d", "status": "failed"}]
    assert [store.flagged(m) for m in ms] == ["", "foreign load", "short window", ""]
    assert [store.usable(m) for m in ms] == [True, False, False, False]
    q = common.run_quality(ms)
    assert (q["ok"], q["failed"], q["contaminated"], q["short_window"]) == (3, 1, 1, 1)


def test_a_run_is_fsynced_file_by_file_and_directory_by_directory_before_the_rename(tmp_path, monkeypatch):
    """Without fsync a crash after the rename can leave a published run whose manifest is empty."""
    import os
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("rename", str(a), str(b))), real_replace(a, b)))
    rd = store.RunDir(tmp_path, "c", "r1")
    rd.manifest["experiment"] = "single-flow"
    rd.write_raw("tool.txt", "raw output")
    final = rd.finish("ok", pd.DataFrame([_row(run_id="r1")]))
    part, raw = str(tmp_path / "c" / "r1.partial"), str(tmp_path / "c" / "r1.partial" / "raw")
    publish = events.index(("rename", part, str(final)))
    before = events[:publish]
    for name in (f"{raw}/tool.txt.tmp", f"{part}/tidy.csv.tmp", f"{part}/manifest.json.tmp"):
        assert before.index(("fsync", name)) < before.index(("rename", name, name[:-4])), name
    assert ("fsync", raw) in before and ("fsync", part) in before  # the renamed entries, durable
    assert events[publish + 1:] == [("fsync", str(tmp_path / "c"))]  # and the publishing rename
