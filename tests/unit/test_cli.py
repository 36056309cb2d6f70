"""hostnet's command line: bad input gives one line saying what to do, before any host is touched;
`hostnet breakdown` on stored and brought perf profiles; the run summary's note on CPU accounting;
`--testbed` spelt alike by run and sweep (embedded, a name, a testbed.yaml path, which needs no
root on the controller)."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO
from hostnet import cli, hosts, testbed


def hostnet(*args, **kw):
    return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=60, **kw)


@pytest.mark.parametrize("args,msg", [
    (["--config", "turbo"], "unknown config 'turbo'"),
    (["--duration", "0"], "duration must be > 0"),
    (["--repetitions", "0"], "repetitions >= 1"),
])
def test_bad_run_arguments(args, msg):
    out = hostnet("run", "single-flow", *args)
    assert out.returncode == 2
    assert msg in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_unknown_experiment_is_refused():
    out = hostnet("run", "warp-drive")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_not_root_is_refused_before_touching_hosts(monkeypatch):
    from hostnet import cli
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "single-flow", "--duration", "1"])
    assert exc.value.code == 2


def test_missing_tools_are_named(monkeypatch, capsys):
    from hostnet import cli
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hosts.LocalHost, "which", lambda self, tool: None if tool == "iperf3" else "/bin/x")
    with pytest.raises(SystemExit):
        cli.main(["run", "single-flow"])
    assert "missing iperf3" in capsys.readouterr().err


def test_status_without_testbed(tmp_path):
    import os
    out = hostnet("testbed", "status", env={**os.environ, "HOSTNET_STATE_DIR": str(tmp_path)})
    assert out.returncode == 0 and "no embedded testbed and no NIC rehearsal is up" in out.stdout


def test_breakdown_cli_reads_stored_and_brought_profiles(capsys, tmp_path):
    from conftest import FIXTURES
    from hostnet import cli
    assert cli.main(["breakdown", str(FIXTURES / "perf_report_no-opts.txt"), "--cpus", "1", "--comm", "iperf3"]) == 0
    out = capsys.readouterr().out
    assert "hostnet perf report" in out and "taxonomy linux-6/" in out and "CPU 1 leaf" in out and "tcp/ip" in out
    folded = str(FIXTURES / "perf-default" / "stackcollapse_reference_kernel_pid.folded.gz")
    chart = tmp_path / "flame.html"
    assert cli.main(["breakdown", folded, "--csv", "--flamegraph", str(chart)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cpus,category,leaf_pct,attributed_pct" and lines[1].startswith("all,data_copy,29.8")
    page = chart.read_text()  # the interactive page `hostnet flamegraph RUN` writes: d3 inlined, no CDN
    assert chart.stat().st_size > 10000 and "flamegraph.default()" in page and "data_copy" not in page[:200]
    assert "<script src" not in page and "https://cdn" not in page
    assert cli.main(["breakdown", folded, "--flamegraph", str(tmp_path / "icicle.svg")]) == 0
    assert (tmp_path / "icicle.svg").read_text().lstrip().startswith("<svg") and (tmp_path / "icicle.png").exists()
    capsys.readouterr()
    assert cli.main(["breakdown", str(FIXTURES / "perf_script_default_loopback.txt.gz"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["format"] == "perf script" and [b["cpus"] for b in got["breakdowns"]] == ["0", "1", "0,1"]
    for argv, why in ((["--cpus", "0"], "has no CPU field"), (["--flamegraph", str(tmp_path / "x.html")],
                                                               "keeps no whole stacks")):
        with pytest.raises(SystemExit):
            cli.main(["breakdown", str(FIXTURES / "perf_report_default_loopback.txt.gz"), *argv])
        assert why in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["breakdown", folded, "--cpus", "0,x"])
    assert "not a CPU set: '0,x'" in capsys.readouterr().err


def test_figures_top_up_budget_reaches_the_notebook_kernels_through_the_environment(monkeypatch):
    """`hostnet figures --mode run` hands --steering and the top-up budget to the kernels it starts, in
    their environment (read there by notebook.start); a replay and the other commands hand nothing."""
    from hostnet import cli
    from hostnet.measure.options import ENV, LiveOptions
    for var in ENV.values():
        monkeypatch.setenv(var, "")  # restored after the test, whatever main() sets
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda tools=(): None)
    seen = {}
    monkeypatch.setattr("hostnet.notebook.batch.run_notebooks",
                        lambda **kw: seen.update(LiveOptions.from_environment(cli.os.environ).__dict__) or "x")
    cli.main(["figures", "--mode", "run", "--top-up-runs", "12", "--top-up-minutes", "4.5", "--steering", "rps"])
    assert (seen["top_up_runs"], seen["top_up_minutes"], seen["steering"]) == (12, 4.5, "rps")


def test_figures_testbed_is_for_run_mode_and_a_missing_yaml_is_named(capsys, monkeypatch, tmp_path):
    from hostnet import cli
    with pytest.raises(SystemExit) as exc:
        cli.main(["figures", "--testbed", "lab.yaml"])
    assert exc.value.code == 2 and "--testbed names what run mode measures on" in capsys.readouterr().err
    # as root: the file is checked before any notebook
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda: None)
    with pytest.raises(SystemExit) as exc:
        cli.main(["figures", "--mode", "run", "--testbed", str(tmp_path / "lab.yaml")])
    assert exc.value.code == 2 and "lab.yaml: no such testbed.yaml" in capsys.readouterr().err


def test_top_up_refuses_a_campaign_that_is_not_a_sweep_before_touching_the_host(capsys):
    """Notebook 13's batching runs have no sweep.json: its notebook tops them up live, the CLI says so."""
    from hostnet import cli
    with pytest.raises(SystemExit) as exc:
        cli.main(["top-up", "13-time-budget", "20261124-031001-time-budget-embedded",
                  "--runs-dir", str(REPO / "data" / "runs")])
    assert exc.value.code == 2
    assert "is not a sweep (no sweep.json)" in capsys.readouterr().err


def test_top_up_judges_each_of_a_notebooks_campaigns_with_its_own_judge(monkeypatch, capsys):
    """Notebook 15 records two campaigns: the BIG TCP one is judged by F32/F33's judge, not zero-copy's
    (which found nothing to judge in it). The live part is replaced: only the judge chosen is checked."""
    import contextlib
    from hostnet import cli, testbed
    from hostnet.measure.topup import TopUpLog
    from hostnet.measure import topup
    from hostnet.sections import beyond
    chosen = []

    def decide(tb, judge, **kw):
        chosen.append(judge)
        return TopUpLog()
    monkeypatch.setattr(topup, "decide", decide)
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda *a: None)
    monkeypatch.setattr(testbed, "using", lambda *a, **k: contextlib.nullcontext(None))
    runs = str(REPO / "data" / "runs")
    for campaign in ("20261127-133917-big-tcp-embedded", "20261126-225452-zero-copy-embedded"):
        assert cli.main(["top-up", "15-beyond-2021", campaign, "--runs-dir", runs]) == 0
    assert chosen == [beyond.judge_big_tcp, beyond.judge]


RX_RUN = REPO / "data" / "runs" / "20261124-030018-rx-buffer-embedded" / "285a6d52e340-r0"


def test_version_and_a_description_naming_the_subcommands_that_exist():
    from hostnet import __version__, cli
    out = hostnet("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"hostnet {__version__}"
    p = cli.parser()
    commands = set(next(a for a in p._actions if a.dest == "command").choices)
    words = set(p.description.replace(",", " ").replace("(", " ").replace(")", " ").split())
    assert commands <= words and "reproduce" not in words


def test_the_make_target_the_rpc_tool_help_names_exists():
    import re
    from hostnet import cli
    run = next(a for a in cli.parser()._actions if a.dest == "command").choices["run"]
    text = next(a.help for a in run._actions if a.dest == "rpc_tool")
    target = re.search(r"make ([\w-]+)", text).group(1)
    assert re.search(rf"^{target}:", (REPO / "Makefile").read_text(), re.M), target


def test_the_data_commands_and_every_quiet_option_have_help():
    from hostnet import cli
    sub = next(a for a in cli.parser()._actions if a.dest == "command").choices
    missing = [f"{name} {a.dest}" for name, p in sub.items() for a in p._actions
               if a.dest != "help" and not a.help and (name in ("breakdown", "compare", "flamegraph", "figures",
                                                                "notebooks") or a.dest == "quiet")]
    assert missing == []


@pytest.fixture
def rx_report(tmp_path):
    """RX_RUN's perf report as a file in its run directory: a copy's, unpacked, once the run is packed."""
    import shutil
    from hostnet import store
    if not store.is_packed(RX_RUN):
        return RX_RUN / "raw" / "local.perf_report.txt"
    run = shutil.copytree(RX_RUN, tmp_path / RX_RUN.name)
    return store.unpack_raw(run) / "local.perf_report.txt"


def test_breakdown_into_a_closed_pipe_ends_quietly(rx_report):
    """`hostnet breakdown ... | head -1`: no BrokenPipeError traceback. The reader is gone before
    the first write, so the write meets the closed end whatever the output's size."""
    import os
    report = str(rx_report)
    proc = subprocess.Popen([sys.executable, "-m", "hostnet.cli", "breakdown", report],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 128 + 13 and err == ""  # 13: SIGPIPE, as a tool killed by it
    assert os.path.exists(RX_RUN)


def test_breakdown_names_the_sender_and_receiver_cpus_from_the_run(capsys, tmp_path, rx_report):
    import json
    import shutil
    from hostnet import cli
    sides = json.loads((RX_RUN / "manifest.json").read_text())["side_cpus"]
    assert cli.main(["breakdown", str(rx_report)]) == 0
    out = capsys.readouterr().out
    assert "CPU roles from the run's manifest.json: " in out
    for side in ("sender", "receiver"):
        assert f"CPU {sides[side]['local'][0]} {side}" in out
    elsewhere = shutil.copy(rx_report, tmp_path / "report.txt")
    assert cli.main(["breakdown", str(elsewhere)]) == 0
    assert "CPU roles unknown" in capsys.readouterr().out


def test_flamegraph_writes_into_the_working_directory_not_the_run(tmp_path, monkeypatch, capsys):
    from hostnet import cli
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in RX_RUN.iterdir())
    assert cli.main(["flamegraph", str(RX_RUN), "--side", "sender"]) == 0
    assert (tmp_path / f"flamegraph-{RX_RUN.name}-sender.html").stat().st_size > 1000
    assert sorted(p.name for p in RX_RUN.iterdir()) == before


class _Using:
    """testbed.using, recording the spec and the shape it was given, yielding a testbed of `kind`."""

    def __init__(self, kind):
        self.kind, self.calls = kind, []

    def __call__(self, spec, prefix="", steering=None, **shape):
        import contextlib
        self.calls.append((spec, shape))
        self.steering = steering
        return contextlib.nullcontext(type("Tb", (), {"kind": self.kind})())


def _no_local_root(tools=()):
    raise AssertionError("a testbed.yaml needs neither root nor tools on the controller")


def test_run_on_a_testbed_yaml_needs_no_local_root_and_names_its_campaign_servers(monkeypatch, tmp_path):
    from hostnet.measure import sweep
    path = tmp_path / "lab.yaml"
    path.write_text("name: lab\n")
    using, seen = _Using("servers"), {}
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", _no_local_root)
    monkeypatch.setattr(testbed, "using", using)
    monkeypatch.setattr(sweep, "run_configs", lambda tb, spec, **kw: seen.update(kw, spec=spec) or [])
    assert cli.main(["run", "single-flow", "--testbed", str(path), "--config", "tsogro", "--quiet"]) == 1
    assert using.calls == [(str(path), {})] and seen["campaign"].endswith("-single-flow-servers")
    assert seen["spec"].configs == ["tsogro"] and seen["spec"].grid == {}  # the spec it checked is the one it runs


def test_a_host_lost_mid_campaign_says_why_it_stopped_and_what_stays_journaled(monkeypatch, tmp_path, capsys):
    """The sweep's HostUnreachable and the restore that could not reach the host either: the restore's
    RestoreError (raised over it) used to be all the user saw. Both, the cause first; and
    --reconnect-wait reaches the sweep."""
    import contextlib

    from hostnet.hosts import HostUnreachable
    from hostnet.measure import sweep
    from hostnet.testbed.base import RestoreError
    seen = {}

    @contextlib.contextmanager
    def using(spec, **kw):
        try:
            yield type("Tb", (), {"kind": "embedded"})()
        finally:
            raise RestoreError("k1", ["receiver@ssh: unreachable: 11 settings of receiver@ssh stay journaled"])

    def run_configs(tb, spec, **kw):
        seen.update(kw)
        raise HostUnreachable("sweep c stopped at run 1 of 3: receiver@ssh: no answer for 5 s")
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda tools=(): None)
    monkeypatch.setattr(testbed, "using", using)
    monkeypatch.setattr(sweep, "run_configs", run_configs)
    with pytest.raises(SystemExit):
        cli.main(["run", "single-flow", "--testbed", "k1", "--reconnect-wait", "5", "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert err == ["hostnet: sweep c stopped at run 1 of 3: receiver@ssh: no answer for 5 s",
                   "hostnet: k1: could not restore: receiver@ssh: unreachable: 11 settings of receiver@ssh stay "
                   "journaled"]
    assert seen["reconnect_wait_s"] == 5
    with pytest.raises(SystemExit):
        cli.main(["run", "single-flow", "--reconnect-wait", "-1"])
    assert "--reconnect-wait >= 0 s" in capsys.readouterr().err


def test_run_and_sweep_spell_the_testbed_alike(monkeypatch, tmp_path, capsys):
    from hostnet.measure import sweep
    using = _Using("embedded")
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda tools=(): None)
    monkeypatch.setattr(testbed, "using", using)
    monkeypatch.setattr(sweep, "run_configs", lambda tb, spec, **kw: [])
    cli.main(["run", "single-flow", "--quiet"])  # default: a fresh embedded testbed, shaped by the options
    cli.main(["run", "single-flow", "--testbed", "embedded", "--ssh", "--quiet"])
    cli.main(["run", "single-flow", "--testbed", "up1", "--quiet"])
    assert using.calls == [("embedded", {"n_senders": 1, "n_receivers": 1, "ssh": False}),
                           ("embedded", {"n_senders": 1, "n_receivers": 1, "ssh": True}), ("up1", {})]
    monkeypatch.setenv("HOSTNET_RX_STEERING", "none")  # read by the CLI, at the edge; the option wins
    cli.main(["run", "single-flow", "--quiet"])
    assert using.steering == "none"
    cli.main(["run", "single-flow", "--steering", "rps", "--quiet"])
    assert using.steering == "rps"
    with pytest.raises(SystemExit):
        cli.main(["run", "single-flow", "--testbed", "up1", "--senders", "2"])
    assert "--senders shape a fresh embedded testbed; --testbed up1 is already built" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["sweep", "sweeps/rx-buffer.yaml", "--testbed", str(tmp_path / "missing.yaml")])
    assert "no such testbed.yaml" in capsys.readouterr().err


def test_sweep_spec_on_a_testbed_yaml(monkeypatch, tmp_path, capsys):
    from hostnet.measure import sweep
    path = tmp_path / "lab.yaml"
    path.write_text("name: lab\n")
    using = _Using("servers")
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", _no_local_root)
    monkeypatch.setattr(testbed, "using", using)
    ran = {}
    monkeypatch.setattr(sweep, "run_sweep", lambda tb, spec, **kw: ran.update(kw) or {
        "ran": 1, "skipped": 0, "failed": 0, "campaign_dir": tmp_path / kw["campaign"]})
    assert cli.main(["sweep", str(REPO / "sweeps" / "rx-buffer.yaml"), "--testbed", str(path), "--quiet"]) == 0
    assert using.calls == [(str(path), {})] and ran["campaign"].endswith("-servers")
    assert f"--campaign {ran['campaign']} --testbed {path}" in capsys.readouterr().out


def test_sweep_runs_a_declared_experiment_by_name_with_flags_over_it(monkeypatch, tmp_path, capsys):
    from hostnet.measure import sweep
    using = _Using("servers")
    path = tmp_path / "lab.yaml"
    path.write_text("name: lab\n")
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", _no_local_root)
    monkeypatch.setattr(testbed, "using", using)
    ran = []
    monkeypatch.setattr(sweep, "run_sweep", lambda tb, spec, **kw: ran.append(spec) or {
        "ran": 1, "skipped": 0, "failed": 0, "campaign_dir": tmp_path / kw["campaign"]})
    assert cli.main(["sweep", "rx-buffer", "--repetitions", "1", "--duration", "2", "--config", "no-opts",
                     "--testbed", str(path), "--quiet"]) == 0
    declared = sweep.declared("rx-buffer")
    assert ran == [sweep.declared("rx-buffer", configs=["no-opts"], repetitions=1, duration=2)]
    assert ran[0].grid == declared.grid and ran[0].warmup == declared.warmup  # the rest is the file's
    with pytest.raises(SystemExit):
        cli.main(["sweep", "rx-bufer", "--testbed", str(path)])
    assert "rx-bufer: no declared sweep of that name (declared: all-to-all, big-tcp, " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["sweep", "notebooks/07-short-flows.ipynb", "-f", "p.yaml", "--repetitions", "2"])
    assert "--repetitions: for sweep specs; a notebook sweep takes its parameters from -f" in capsys.readouterr().err


def test_a_repeated_config_is_refused_before_anything_runs(capsys, state_dir):
    """#33: `--config tsogro tsogro` once removed the .partial the background finisher was still
    writing and listed the point twice in sweep.json; now it is one line, before any testbed."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "single-flow", "--config", "tsogro", "tsogro"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and 'configs lists "tsogro" more than once' in err and err.count("\n") == 1
    assert not state_dir.exists()  # no testbed was built, nothing journaled


def test_progress_goes_through_logging_to_stderr_and_log_quiet_silences_it(capsys):
    """#31: progress went through print and callbacks; now hostnet's loggers, set up by the CLI."""
    import logging
    from hostnet.notebook import batch
    cli.setup_logging()
    batch.log.info("[1/2] 02-rx-buffer.ipynb: ok in 3 s")
    logging.getLogger("hostnet.measure.sweep").debug("not shown without -v")
    out = capsys.readouterr()
    assert out.err == "[1/2] 02-rx-buffer.ipynb: ok in 3 s\n" and out.out == ""
    cli.setup_logging(verbose=1)
    logging.getLogger("hostnet.measure.sweep").debug("shown with -v")
    cli.setup_logging(quiet=True)
    batch.log.info("not shown with --log-quiet")
    batch.log.warning("a warning still is")
    assert capsys.readouterr().err == "shown with -v\na warning still is\n"
    cli.setup_logging()


def _stored_run(run, files):
    (run / "raw").mkdir(parents=True)
    for name, text in files.items():
        (run / "raw" / name).write_text(text)
    (run / "manifest.json").write_text(json.dumps({"schema": 2, "run_id": run.name, "status": "ok",
                                                   "files": sorted(files)}))
    return run


def test_data_pack_packs_each_run_once_and_unpack_says_where_the_files_are(tmp_path, capsys):
    from hostnet import store
    runs = tmp_path / "runs"
    a = _stored_run(runs / "c" / "a-r0", {"x.txt": "1\n", "y.txt": "2\n"})
    b = _stored_run(runs / "c" / "b-r0", {"x.txt": "3\n"})
    busy = _stored_run(runs / "c" / "d-r0.partial", {"x.txt": "being written\n"})
    other = _stored_run(runs / "other" / "e-r0", {"z.txt": "4\n"})
    assert cli.main(["data", "pack", "c", "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.startswith("2 runs packed (3 files, 0.0 MB of raw text in 0.0 MB of raw.tar.xz); "
                                              "0 packed already\n")
    assert store.is_packed(a) and store.is_packed(b) and not (a / "raw").exists()
    assert (busy / "raw").is_dir() and not store.is_packed(busy)  # a run in progress is left alone
    assert (other / "raw").is_dir()  # only the campaign named
    assert cli.main(["data", "pack", "--runs-dir", str(runs)]) == 0  # every campaign: the rest
    assert "1 runs packed (1 files" in capsys.readouterr().out and store.is_packed(other)

    assert cli.main(["data", "unpack", str(a)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{a / 'raw'}: 2 files unpacked from raw.tar.xz") and f"hostnet data pack {a}" in said
    assert (a / "raw" / "y.txt").read_text() == "2\n" and store.is_packed(a)
    assert cli.main(["data", "unpack", str(a)]) == 0
    assert "there already (unpacked before)" in capsys.readouterr().out
    assert cli.main(["data", "pack", str(a), str(b)]) == 0  # a run directory: the copy beside its archive goes
    assert "0 runs packed (0 files, 0.0 MB of raw text in 0.0 MB of raw.tar.xz); 2 packed already" in \
        capsys.readouterr().out
    assert not (a / "raw").exists()


def test_data_pack_says_in_a_line_which_run_it_refused_and_packs_the_others(tmp_path, capsys):
    from hostnet import store
    runs = tmp_path / "runs"
    good = _stored_run(runs / "c" / "a-r0", {"x.txt": "1\n"})
    odd = _stored_run(runs / "c" / "b-r0", {"x.txt": "1\n"})
    (odd / "raw" / "later.txt").write_text("not in the manifest\n")
    assert cli.main(["data", "pack", str(runs / "c")]) == 1
    out = capsys.readouterr()
    assert out.err == f"hostnet: {odd / 'raw'} holds 2 files, its manifest lists 1 (later.txt differ): not packed\n"
    assert "1 runs packed" in out.out and "1 refused (above)" in out.out
    assert store.is_packed(good) and (odd / "raw" / "later.txt").exists() and not store.is_packed(odd)


def test_data_pack_skips_runs_and_campaigns_that_are_symlinks_and_deletes_nothing_they_lead_to(tmp_path, capsys):
    """#45: a received campaign's run symlinked (absolute or ../..) to a directory holding raw/ had
    that raw/ archived in place and deleted; a raw/ symlinked to ~/.ssh was copied into the archive,
    then the command died with a traceback and left the other campaigns unpacked."""
    from hostnet import store
    runs = tmp_path / "runs"
    outside = _stored_run(tmp_path / "home" / "project" / "r-out", {"notes.txt": "mine\n"})
    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir()
    (secrets / "id_ed25519").write_text("PRIVATE\n")
    good = _stored_run(runs / "c" / "a-r0", {"x.txt": "1\n"})
    (runs / "c" / "b-r0").symlink_to(outside)
    (runs / "c" / "d-r0").symlink_to(Path("..") / ".." / "home" / "project" / "r-out")
    sneaky = runs / "c" / "e-r0"
    sneaky.mkdir()
    (sneaky / "manifest.json").write_text(json.dumps({"schema": 2, "run_id": "e-r0", "status": "ok"}))
    (sneaky / "raw").symlink_to(secrets)
    (runs / "linked").symlink_to(tmp_path / "home" / "project")
    later = _stored_run(runs / "z" / "a-r0", {"y.txt": "2\n"})
    assert cli.main(["data", "pack", "--runs-dir", str(runs)]) == 1
    out = capsys.readouterr()
    for skipped in (runs / "c" / "b-r0", runs / "c" / "d-r0", runs / "linked"):
        assert f"hostnet: {skipped}: a symlink (or it leads outside {skipped.parent}): skipped" in out.err
    assert f"hostnet: {sneaky / 'raw'}: a symlink: not packed, nothing removed" in out.err
    assert "2 runs packed" in out.out and "4 refused (above)" in out.out
    assert store.is_packed(good) and store.is_packed(later)  # the campaign after the bad ones too
    assert (outside / "raw" / "notes.txt").read_text() == "mine\n" and not store.is_packed(outside)
    assert (secrets / "id_ed25519").exists() and not (sneaky / "raw.tar.xz").exists()
    assert cli.main(["data", "unpack", str(sneaky)]) == 1
    assert "raw: a symlink: not unpacked" in capsys.readouterr().err
    b2 = _stored_run(runs / "z" / "b-r0", {"y.txt": "3\n"})
    import os
    here = os.getcwd()
    os.chdir(runs / "z")
    try:  # "." names a campaign like any other directory
        assert cli.main(["data", "pack", "."]) == 0
    finally:
        os.chdir(here)
    assert store.is_packed(b2)


@pytest.mark.parametrize("argv,msg", [
    (["data", "pack", "nowhere", "--runs-dir", "{tmp}"], "no run or campaign nowhere (a directory, or a campaign"),
    (["data", "unpack", "{tmp}"], "no run directory"),
    (["data", "unpack", "{tmp}/gone"], "no run directory"),
])
def test_data_commands_refuse_what_is_not_there_in_one_line(argv, msg, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and msg in err


def test_rederive_force_rebuilds_current_runs_from_their_archive_and_says_none_changed(tmp_path, capsys):
    import shutil
    from hostnet import store
    src = REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0"
    run = shutil.copytree(src, tmp_path / "runs" / "c" / src.name)
    store.unpack_raw(run)
    (run / store.RAW_ARCHIVE).unlink(missing_ok=True)
    store.pack_raw(run)
    assert cli.main(["rederive", "c", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out == ("0 of 1 runs re-derived under the current CPU rule, taxonomy and "
                                       "attribution rule\n")
    # once to write the table as this environment's pandas prints it (the dependency floors print a last
    # digit of some floats otherwise than the versions that wrote the stored run), then again: no change
    assert cli.main(["rederive", "c", "--force", "--runs-dir", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    assert cli.main(["rederive", "c", "--force", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out == ("1 of 1 runs re-derived under the current CPU rule, taxonomy and "
                                       "attribution rule; 0 of them changed (tidy.csv or manifest.json)\n")
    pd.testing.assert_frame_equal(store.read_tidy(run), store.read_tidy(src), check_exact=False, rtol=1e-12)
    # the manifest's keys in another order are the same manifest: no change either
    manifest = run / "manifest.json"
    manifest.write_text(json.dumps(dict(reversed(json.loads(manifest.read_text()).items())), indent=2))
    assert cli.main(["rederive", "c", "--force", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out.endswith("; 0 of them changed (tidy.csv or manifest.json)\n")


def test_breakdown_of_a_packed_runs_raw_file_says_to_unpack_it(tmp_path, capsys):
    run = _stored_run(tmp_path / "c" / "r0", {"local.perf_report.txt": "# perf report\n"})
    from hostnet import store
    store.pack_raw(run)
    with pytest.raises(SystemExit) as stop:
        cli.main(["breakdown", str(run / "raw" / "local.perf_report.txt")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert f"the run's raw files are packed; `hostnet data unpack {run}` writes its raw/ first" in err


def test_breakdown_of_a_perf_data_without_root_keeps_its_scratch_in_the_users_cache(tmp_path, monkeypatch, capsys):
    """As a user who is not root: /run/hostnet is root's, so scratch goes to the user's cache dir
    (the issue: `[Errno 13] Permission denied: '/run/hostnet/scratch'`)."""
    import shutil
    from hostnet.hosts import LocalHost, base
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (Debian: linux-perf)")
    data = tmp_path / "perf.data"  # recorded here: a profile brought from elsewhere lacks this kernel's symbols
    LocalHost().run(["perf", "record", "-e", "cpu-clock", "-g", "-o", str(data), "--",
                     "dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=100000"], timeout=120)
    monkeypatch.delenv("HOSTNET_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(base.os, "geteuid", lambda: 1000)
    assert base.scratch_dir() == tmp_path / "cache" / "hostnet" / "scratch"
    assert cli.main(["breakdown", str(data)]) == 0
    assert "data_copy" in capsys.readouterr().out
    assert base.state_dir() == base.Path("/run/hostnet")  # journals and testbed state stay where root's are
    monkeypatch.setattr(base.os, "geteuid", lambda: 0)
    monkeypatch.setenv("HOSTNET_STATE_DIR", str(tmp_path / "state"))
    assert base.scratch_dir() == tmp_path / "state" / "scratch"


def test_every_data_command_finds_the_projects_runs_from_a_subdirectory_or_with_root(tmp_path, monkeypatch, capsys):
    """One root rule (--root, $HOSTNET_ROOT, or the checkout the working directory is in) for every
    command reading data/runs, whatever directory it is started from."""
    from hostnet import project
    campaign = "20261128-053016-rx-buffer-embedded"
    monkeypatch.delenv(project.ENV, raising=False)
    monkeypatch.chdir(REPO / "docs")
    assert cli.main(["compare", campaign, campaign]) == 0
    assert "rx_buffer_kb=100" in capsys.readouterr().out
    for command in (["data", "pack", campaign], ["seal", campaign], ["top-up", "02-rx-buffer", campaign],
                    ["sweep", "notebooks/02-rx-buffer.ipynb"], ["rederive", campaign]):
        assert cli.parser().parse_args(command).runs_dir is None, command  # resolved in main by the one rule
    monkeypatch.chdir(tmp_path)  # outside the checkout: data/runs only through --root or $HOSTNET_ROOT
    with pytest.raises(SystemExit):
        cli.main(["compare", campaign, campaign])
    assert f"no campaign {tmp_path}/data/runs/{campaign}" in capsys.readouterr().err
    assert cli.main(["--root", str(REPO), "compare", campaign, campaign]) == 0
    monkeypatch.setenv(project.ENV, str(REPO))
    assert cli.main(["compare", campaign, campaign]) == 0


def test_breakdown_of_a_stored_runs_profile_classifies_it_as_the_run_was(tmp_path, monkeypatch, capsys):
    """A stored run's profile: the taxonomy of the kernel the run recorded (not the running one's)
    and the testbed its manifest names (the embedded testbed's veth work in its own category)."""
    import shutil
    from hostnet import store
    from hostnet.hosts import LocalHost
    run = tmp_path / "run"
    shutil.copytree(REPO / "data" / "runs" / "20261128-053016-rx-buffer-embedded" / "1b2d1acaf097-r0", run)
    store.unpack_raw(run)
    monkeypatch.setattr(LocalHost, "read_text", lambda *a: pytest.fail("read the running kernel's release"))
    assert cli.main(["breakdown", str(run / "raw" / "local.perf_folded.txt"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["taxonomy"] == "linux-6/7"
    assert got["taxonomy_from"] == "from the run's manifest (kernel 6.18.44-fc-v657, recorded with linux-6/7)"
    both = next(b for b in got["breakdowns"] if b["cpus"] == "0,1")
    assert both["attributed_pct"]["testbed"] > 1  # --embedded implied by the manifest


def test_the_command_table_is_what_each_module_registers_with_the_same_help():
    import argparse
    import importlib
    from hostnet.cli.commands import COMMANDS
    registered = {}
    for module in {c.module for c in COMMANDS.values()}:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"hostnet.cli.{module}").register(sub)
        registered |= {name: (module, next(a.help for a in sub._choices_actions if a.dest == name))
                       for name in sub.choices}
    assert registered == {name: (c.module, c.help) for name, c in COMMANDS.items()}


@pytest.mark.parametrize("argv,command", [
    (["run", "single-flow"], "run"), (["-v", "--root", "run", "breakdown", "x"], "breakdown"),
    (["--root=/x", "--log-quiet", "top-up", "01", "c"], "top-up"), (["--help"], None), ([], None),
])
def test_the_asked_command_is_the_first_word_that_is_not_hostnets_own_option(argv, command):
    from hostnet.cli.commands import asked
    assert asked(argv) == command


def test_a_command_imports_its_own_module_only_and_the_help_none():
    """In a fresh interpreter: `hostnet --help` loads no command module, `breakdown --help` only
    profiles, and neither loads pandas or jsonschema (what made the CLI slow)."""
    probe = ("import sys\nfrom hostnet import cli\nargv = sys.argv[1:]\ntry:\n    cli.main(argv)\nexcept SystemExit:\n"
             "    pass\nprint(sorted(m.split('.')[-1] for m in sys.modules if m.startswith('hostnet.cli.')),"
             " 'pandas' in sys.modules, 'jsonschema' in sys.modules, file=sys.stderr)")
    for argv, modules in ((["--help"], ["commands", "edge"]),
                          (["breakdown", "--help"], ["commands", "edge", "profiles"])):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert out.stderr.strip().splitlines()[-1] == f"{modules} False False", out.stderr
