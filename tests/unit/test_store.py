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
    assert not (final / "raw").exists() and store.raw_text(final, "tool.txt") == "raw output"  # packed
    m = store.load_manifest(final)
    assert m["status"] == "ok" and m["schema"] == store.SCHEMA_VERSION and m["files"] == ["tool.txt"]
    assert store.raw_names(final) == m["files"]  # the manifest lists what the archive holds

    bad = store.RunDir(tmp_path, "c", "r2")
    bad.manifest["experiment"] = "single-flow"
    final2 = bad.finish("failed", pd.DataFrame([_row(run_id="r2")]), error="iperf3 error: refused")
    assert not (final2 / "tidy.csv").exists()
    assert json.loads((final2 / "manifest.json").read_text())["error"] == "iperf3 error: refused"
    assert store.is_packed(final2) and store.raw_names(final2) == []  # a failed run with no output: packed too

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
    for name in (f"{raw}/tool.txt.tmp", f"{part}/tidy.csv.tmp", f"{part}/manifest.json.tmp",
                 f"{part}/raw.tar.xz.tmp"):
        assert before.index(("fsync", name)) < before.index(("rename", name, name[:-4])), name
    assert ("fsync", raw) in before and ("fsync", part) in before  # the renamed entries, durable
    # raw/ packed last, and its removal durable before the run is published
    assert before.index(("rename", f"{part}/raw.tar.xz.tmp", f"{part}/raw.tar.xz")) < len(before) - 1
    assert before[-1] == ("fsync", part)
    assert events[publish + 1:] == [("fsync", str(tmp_path / "c"))]  # and the publishing rename


def _ok_run(tmp_path, run_id, rows=3):
    rd = store.RunDir(tmp_path, "c", run_id)
    rd.manifest.update(experiment="single-flow", config={"name": "tsogro"}, repetition=0)
    return rd.finish("ok", pd.DataFrame([_row(run_id=run_id, value=float(i)) for i in range(rows)]))


def test_a_changed_or_missing_tidy_table_is_not_believed_and_counts_as_damaged(tmp_path):
    """Issue 33: a tidy.csv cut at a line boundary, torn mid-line or deleted, and a corrupt manifest,
    each changed results or dropped a run while the quality line still said every run was ok."""
    from hostnet.sections import common
    runs = {name: _ok_run(tmp_path, name) for name in ("cut", "torn", "gone", "garbled", "fine")}
    assert store.load_manifest(runs["fine"])["checks"]["tidy.csv"]["rows"] == 3
    text = (runs["cut"] / "tidy.csv").read_text()
    (runs["cut"] / "tidy.csv").write_text("".join(text.splitlines(keepends=True)[:-1]))  # at a line boundary
    (runs["torn"] / "tidy.csv").write_text(text[:-5])
    (runs["gone"] / "tidy.csv").unlink()
    (runs["garbled"] / "manifest.json").write_text('{"schema": 2, "sta')
    with pytest.warns(UserWarning) as caught:
        manifests = store.load_manifests(tmp_path, "c")
        tidy = store.load_tidy(tmp_path, "c")
    said = " | ".join(str(w.message) for w in caught)
    assert f"{runs['garbled']}: manifest.json is empty or unreadable" in said
    assert f"{runs['cut']}: tidy.csv was changed after the run (2 rows, 3 recorded" in said
    assert f"{runs['torn']}: tidy.csv was changed after the run" in said
    status = {m["run_id"]: m["status"] for m in manifests}
    assert status == {"cut": store.DAMAGED, "torn": store.DAMAGED, "gone": store.DAMAGED, "fine": "ok"}
    assert {m["run_id"]: m["error"] for m in manifests}["gone"] == f"{runs['gone']}: tidy.csv is missing"
    assert set(tidy.run_id) == {"fine"}  # only the run whose table is the one it wrote
    assert manifests.unreadable == [str(runs["garbled"])]
    quality = common.run_quality(manifests)  # 5 runs: the garbled manifest's counts too, as failed
    assert (quality["runs"], quality["ok"], quality["failed"], quality["damaged"]) == (5, 1, 4, 4)
    with pytest.raises(store.DamagedRun, match=r"cut: tidy.csv was changed after the run"):
        store.read_tidy(runs["cut"])


def test_rewrite_run_and_seal_record_the_checks_of_what_they_leave(tmp_path):
    run = _ok_run(tmp_path, "r")
    m = store.load_manifest(run)
    store.rewrite_run(run, m, pd.DataFrame([_row(run_id="r", value=9.0)]))
    assert store.damage(run, store.load_manifest(run)) == "" and list(store.read_tidy(run).value) == [9.0]
    # a run written before manifests carried checks: believed as it is, sealed once, then checked
    old = store.load_manifest(run)
    del old["checks"]
    (run / "manifest.json").write_text(json.dumps(old))
    assert store.damage(run, old) == "" and store.seal(run) and not store.seal(run)
    (run / "tidy.csv").write_text((run / "tidy.csv").read_text().replace("9.0", "8.0"))
    assert "changed after the run" in store.damage(run, store.load_manifest(run))


def test_a_full_disk_names_the_file_and_leaves_no_half_written_tmp(tmp_path, monkeypatch, capsys):
    """#33: a full runs or state dir ended in an `OSError: [Errno 28]` traceback and a 0-byte
    *.json.tmp. Now the temporary file goes, the error names the file, and the CLI says it in a line."""
    import errno
    import os

    from hostnet import cli

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(store.os, "fsync", full)
    target = tmp_path / "sweep.json"
    with pytest.raises(OSError) as exc:
        store.write_atomic(target, "{}")
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []

    monkeypatch.setattr(cli, "cmd_compare", lambda args: store.write_atomic(target, "{}"))
    with pytest.raises(SystemExit) as stop:
        cli.main(["compare", "a", "b"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert f"No space left on device: {target}" in err and "Traceback" not in err


def test_sections_that_gather_several_experiments_keep_the_unreadable_runs_once(tmp_path):
    """Time budget, NUMA and DCA gather their manifests experiment by experiment: an unreadable
    run (no manifest, so no experiment) is counted once in their quality line, not dropped."""
    from hostnet.sections import common
    runs = {name: _ok_run(tmp_path, name) for name in ("fine", "garbled")}
    (runs["garbled"] / "manifest.json").write_text("{")
    gathered = store.Manifests()
    with pytest.warns(UserWarning):
        for _ in range(2):  # as for two experiments of one campaign
            gathered += store.load_manifests(tmp_path, "c")
    assert gathered.unreadable == [str(runs["garbled"])]
    quality = common.run_quality(gathered)
    assert (quality["runs"], quality["failed"]) == (3, 1)


# -- raw files packed into one archive per run (issue 30, lean data) --------------------------------

RAW = {"local.perf_report.txt": "# perf report\n 12.00%  iperf3  [kernel]  copy_user\n",
       "iperf3_client_0.json": '{"end": {"sum_received": {"bits_per_second": 1e9}}}\n',
       "empty.txt": "", "dos.txt": "one\r\ntwo\rthree\n", "unicode.txt": "µs – ±\n"}


def _raw_run(where, files=RAW, manifest=True):
    """A run directory as older runs are stored: raw/ beside a manifest listing its files."""
    run = where / "c" / "r0"
    (run / "raw").mkdir(parents=True)
    for name, text in files.items():
        (run / "raw" / name).write_bytes(text.encode())
    if manifest:
        (run / "manifest.json").write_text(json.dumps({"schema": 2, "run_id": "r0", "status": "failed",
                                                       "files": sorted(files)}))
    return run


def test_pack_then_unpack_gives_back_every_file_byte_for_byte(tmp_path):
    run = _raw_run(tmp_path)
    before = {p.name: p.read_bytes() for p in (run / "raw").iterdir()}
    assert store.pack_raw(run) is True
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json", "raw.tar.xz"]  # raw/ gone, no .tmp
    assert not store.pack_raw(run)  # packed already: nothing to do
    archive = (run / "raw.tar.xz").read_bytes()
    raw = store.unpack_raw(run)
    assert raw == run / "raw" and {p.name: p.read_bytes() for p in raw.iterdir()} == before
    assert (run / "raw.tar.xz").read_bytes() == archive  # the record stays
    assert store.unpack_raw(run) == raw  # unpacked already: left as it is
    assert store.pack_raw(run) is True and not raw.exists()  # the copy equals the archive: removed
    assert (run / "raw.tar.xz").read_bytes() == archive


def test_the_same_files_pack_to_the_same_bytes_whoever_wrote_them_and_when(tmp_path):
    import os
    import tarfile
    a = _raw_run(tmp_path / "a")
    b = _raw_run(tmp_path / "b", dict(reversed(list(RAW.items()))))  # created in the other order
    for p in (b / "raw").iterdir():
        os.utime(p, (1_700_000_000, 1_700_000_000))
        p.chmod(0o600)
    store.pack_raw(a)
    store.pack_raw(b)
    data = (a / "raw.tar.xz").read_bytes()
    assert data == (b / "raw.tar.xz").read_bytes() == store.archive_bytes({k: v.encode() for k, v in RAW.items()})
    with tarfile.open(a / "raw.tar.xz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(RAW)
    assert {(m.mtime, m.mode, m.uid, m.gid, m.uname, m.gname, m.type) for m in members} == \
        {(0, 0o644, 0, 0, "", "", tarfile.REGTYPE)}
    assert data[:6] == b"\xfd7zXZ\x00"  # xz


def test_either_form_reads_alike_through_the_reader(tmp_path):
    unpacked = _raw_run(tmp_path / "u")
    packed = _raw_run(tmp_path / "p")
    store.pack_raw(packed)
    for run in (unpacked, packed):
        assert store.raw_names(run) == sorted(RAW)
        assert store.has_raw(run, "empty.txt") and not store.has_raw(run, "perf_folded.txt")
        # as Path.read_text() read raw files (UTF-8, universal newlines), whichever form
        assert store.raw_text(run, "dos.txt") == (unpacked / "raw" / "dos.txt").read_text() == "one\ntwo\nthree\n"
        assert store.raw_text(run, "unicode.txt") == RAW["unicode.txt"]
        assert store.raw_texts(run, ["empty.txt", "iperf3_client_0.json", "absent.txt"]) == \
            {"empty.txt": "", "iperf3_client_0.json": RAW["iperf3_client_0.json"]}
        assert store.raw_texts(run) == store.raw_texts(unpacked)
        with pytest.raises(FileNotFoundError, match=r"r0: no raw file absent.txt"):
            store.raw_text(run, "absent.txt")
    nothing = tmp_path / "c" / "bare"
    nothing.mkdir(parents=True)
    assert store.raw_names(nothing) == [] and store.raw_texts(nothing) == {}


def test_the_archive_is_what_is_read_when_an_unpacked_copy_sits_beside_it(tmp_path):
    run = _raw_run(tmp_path)
    store.pack_raw(run)
    store.unpack_raw(run)
    (run / "raw" / "local.perf_report.txt").write_text("edited by a person\n")
    (run / "raw" / "notes.txt").write_text("mine\n")
    assert store.raw_text(run, "local.perf_report.txt") == RAW["local.perf_report.txt"]
    assert store.raw_names(run) == sorted(RAW)
    with pytest.raises(store.PackError, match="differs from raw.tar.xz: both left as they are"):
        store.pack_raw(run)  # an edited copy is not thrown away
    assert (run / "raw" / "notes.txt").exists()


def test_pack_keeps_raw_when_the_archive_does_not_read_back_as_the_files(tmp_path, monkeypatch):
    run = _raw_run(tmp_path)
    real = store.archive_bytes
    monkeypatch.setattr(store, "archive_bytes", lambda files: real({**files, "dos.txt": b"one\ntwo\n"}))
    with pytest.raises(store.PackError, match="does not read back as raw/: not packed"):
        store.pack_raw(run)
    monkeypatch.setattr(store, "archive_bytes", lambda files: real(files)[:-40])  # torn
    with pytest.raises(store.DamagedRun, match="raw.tar.xz.tmp: cannot be read"):
        store.pack_raw(run)
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json", "raw"]  # no archive, no .tmp
    assert {p.name: p.read_bytes().decode() for p in (run / "raw").iterdir()} == RAW


def test_pack_refuses_raw_files_the_manifest_does_not_list_and_anything_but_files(tmp_path):
    run = _raw_run(tmp_path)
    (run / "raw" / "stray.txt").write_text("written after the run\n")
    with pytest.raises(store.PackError, match=r"holds 6 files, its manifest lists 5 \(stray.txt differ\)"):
        store.pack_raw(run)
    assert not store.is_packed(run) and (run / "raw" / "stray.txt").exists()
    (run / "raw" / "stray.txt").unlink()
    (run / "raw" / "link.txt").symlink_to(run / "manifest.json")
    with pytest.raises(store.PackError, match="link.txt: not a regular file"):
        store.pack_raw(run)
    assert not store.is_packed(run)
    no_list = _raw_run(tmp_path / "old", manifest=False)  # no manifest to compare with: packed as it is
    assert store.pack_raw(no_list) and store.raw_names(no_list) == sorted(RAW)


def test_unpacking_refuses_a_run_with_nothing_to_unpack_and_member_names_that_leave_raw(tmp_path):
    import io
    import lzma
    import tarfile
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(FileNotFoundError, match="no raw.tar.xz and no raw/"):
        store.unpack_raw(bare)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    (bare / "raw.tar.xz").write_bytes(lzma.compress(buf.getvalue()))
    with pytest.raises(store.PackError, match="not a plain file name"):
        store.unpack_raw(bare)
    assert not (tmp_path / "escape.txt").exists() and not (bare / "raw").exists()
