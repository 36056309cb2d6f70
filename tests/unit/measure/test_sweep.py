"""hostnet.measure.sweep: specs, their points and validation, point configs (Rx buffer, loss rate), point
ids, the workloads points build, labels, and the sweep files of the notebook sections."""
import json
import re

import pytest
from types import SimpleNamespace

from hostnet.measure import config as sc
from hostnet import store
from hostnet.measure import preflight, sweep
from hostnet.knobs import KnobError
from hostnet.measure.sweep import SweepSpec, point_workload
from conftest import REPO
from hostnet.testbed import EmbeddedLayout, from_layout
from hostnet.derive.workloads import MixedFlows, UdpRate


def test_spec_points_and_validation(tmp_path):
    spec = sweep.SweepSpec(configs=["tsogro", "all-opts"], grid={"rx_buffer_kb": [100, 200, 400]}, repetitions=2)
    assert len(spec.points()) == 6 and spec.points()[0] == {"config": "tsogro", "rx_buffer_kb": 100}
    for bad, msg in (({"grid": {"rx_buf": [1]}}, r"grid\.rx_buf is not a known key"),
                     ({"workload": "warp"}, "workload: 'warp' is not a workload"),
                     ({"configs": ["turbo"]}, "unknown config"),
                     ({"repetitions": 0}, "repetitions"),
                     ({"grid": {"flows": [2]}}, "single pattern"), ({"colour": 1}, "colour is not a known key")):
        with pytest.raises(ValueError, match=msg):
            sweep.SweepSpec.from_dict(bad)
    path = tmp_path / "s.yaml"
    path.write_text("workload: incast\nconfigs: [tsogro]\ngrid: {flows: [1, 2], rpc_size: [4096]}\nrepetitions: 1\n")
    spec = sweep.SweepSpec.from_yaml(path)
    assert [p["flows"] for p in spec.points()] == [1, 2]


def test_a_spec_written_before_the_rename_reads_its_experiment_as_the_workload(tmp_path):
    """sweep.json and sweep files from before 2026-12 say `experiment` for what is now `workload`:
    every campaign under data/ still reads back as the spec it ran, and its points keep their ids."""
    plans = sorted((REPO / "data" / "runs").glob("*/sweep.json"))
    assert plans
    for plan in plans:
        recorded = json.loads(plan.read_text())["spec"]
        spec = SweepSpec.from_dict(recorded, where=str(plan))
        assert spec.workload == recorded.get("experiment", recorded.get("workload")), plan
    old = SweepSpec.from_dict({"experiment": "incast", "configs": ["tsogro"], "grid": {"rpc_size": [4096]}})
    assert old == SweepSpec(workload="incast", configs=["tsogro"], grid={"rpc_size": [4096]})
    with pytest.raises(sweep.SweepError, match="s.yaml: experiment and workload name one field"):
        SweepSpec.from_dict({"experiment": "incast", "workload": "incast"}, where="s.yaml")
    with pytest.raises(sweep.SweepError, match="workload: 'warp' is not a workload"):
        SweepSpec.from_dict({"experiment": "warp"})


def test_rx_buffer_point_sets_tcp_rmem_whole():
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 100}).tcp_rmem == "4096 102400 102400"
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 12800}).tcp_rmem == "4096 131072 13107200"


def test_point_ids_are_stable_and_depend_on_the_testbed():
    fp = {"kind": "embedded", "kernels": ["6.18"]}
    a = sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, fp, "single-flow")
    assert a == sweep.point_id({"rx_buffer_kb": 100, "config": "tsogro"}, fp, "single-flow")
    assert a != sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, {**fp, "kernels": ["6.1"]}, "single-flow")


def test_mixed_sweep_points_and_workloads():
    spec = sweep.SweepSpec(workload="mixed", configs=["tsogro"],
                           grid={"short_flows": [0, 1, 16], "long_flow": [1, 0], "rpc_size": [4096]})
    pts = spec.points()
    # long_flow x short_flows without the empty point
    assert len(pts) == 5 and {"config": "tsogro", "short_flows": 0, "long_flow": 0, "rpc_size": 4096} not in pts
    w = sweep.point_workload(spec, {"config": "tsogro", "short_flows": 16, "long_flow": 0, "rpc_size": 4096},
                             "netperf")
    assert isinstance(w, MixedFlows) and w.n == 16 and not w.long_flow
    with pytest.raises(sweep.SweepError, match="belong to workload mixed"):
        sweep.SweepSpec(workload="single-flow", grid={"short_flows": [1]})


def test_loss_rate_grid_key_sets_the_loss_knob_on_every_receiver(state_dir):
    spec = sweep.SweepSpec(configs=["tsogro"], grid={"loss_rate": [0, 0.001, 0.01]})
    cfgs = [sweep.point_config(p) for p in spec.points()]
    assert [c.loss_rate for c in cfgs] == [0.0, 0.001, 0.01]
    tb = from_layout(EmbeddedLayout("unit"))
    loss = {s.value for s in sc.settings(tb, cfgs[2]) if s.knob.name == "loss" and s.place.label == "receiver"}
    zero = [(s.place.label, s.key, s.value) for s in sc.settings(tb, cfgs[0]) if s.knob.name == "loss"]
    assert loss == {"0.01"} and zero == [("receiver", "hnunitr", "0")]  # 0 is written too: the table removed
    # points without a loss rate leave the knob alone (hosts without nft run everything else)
    assert not [s for s in sc.settings(tb, sc.get_config("tsogro")) if s.knob.name == "loss"]
    with pytest.raises(sc.ConfigError, match="outside"):
        sweep.point_config({"config": "tsogro", "loss_rate": 1.5})
    with pytest.raises(KnobError):
        sc.KNOBS["loss"].validate("hnunitr", "-0.1")


def test_sweep_builds_udp_points():
    spec = SweepSpec(workload="udp-loss", configs=["no-opts"],
                     grid={"udp_rate_gbps": [1, 8], "socket_buffer_kb": [1024], "app_cpu": ["same", "different"]},
                     repetitions=1, duration=2, warmup=1)
    works = [point_workload(spec, p, "iperf") for p in spec.points()]
    assert len(works) == 4 and all(isinstance(w, UdpRate) for w in works)
    assert {(w.rate_gbps, w.app_cpu) for w in works} == {(1.0, "same"), (1.0, "different"), (8.0, "same"),
                                                         (8.0, "different")}


def test_sweep_label_is_checked():
    from hostnet.measure.sweep import SweepError, SweepSpec
    assert SweepSpec(workload="incast", label="numa-nic-local").stored_as == "numa-nic-local"
    assert SweepSpec(workload="incast").stored_as == "incast"
    with pytest.raises(SweepError, match="label: 'NUMA local' is not a label"):
        SweepSpec(workload="incast", label="NUMA local")


# -- resuming, the campaign lock and a lost host (fake SSH link, conftest.FakeRemote) --------------

SMALL = SweepSpec(configs=["tsogro"], repetitions=2, duration=1, warmup=0)


@pytest.fixture
def ssh_sweep(tmp_path, monkeypatch):
    """A sweep over one server behind a fake SSH link: no preflight or capability probing."""
    from conftest import FakeRemote
    from unit.measure.test_runner import VERSIONS, ssh_testbed
    remote = FakeRemote()
    tb = ssh_testbed(tmp_path, monkeypatch, remote)
    monkeypatch.setattr(sweep, "preflight", lambda tb, tools, **kw: VERSIONS)
    monkeypatch.setattr(sweep, "point_requirements", lambda tb, cfg, ip_version=4: [])
    monkeypatch.setattr(sweep, "RECONNECT_POLL_S", 0.01)
    return tb, remote


def rmem_writes(remote) -> list[str]:
    from unit.measure.test_runner import RMEM
    return [argv[4].strip() for argv in remote.commands
            if argv[:2] == ["sh", "-c"] and argv[2].startswith("printf") and argv[5].endswith(RMEM.replace(".", "/"))]


def test_a_lost_link_fails_the_point_restores_when_the_host_answers_and_the_sweep_goes_on(tmp_path, ssh_sweep):
    from unit.measure.test_runner import PRIOR, SET
    tb, remote = ssh_sweep
    remote.drop_after(0.1, when=lambda argv: argv == ["cat", "/proc/stat"], down_for=2)
    out = sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False, reconnect_wait_s=60)
    assert out["failed"] == 2 and out["restore_problems"] == []
    ms = sorted((store.load_manifest(r) for r in store.list_runs(tmp_path / "runs", "c")),
                key=lambda m: m["started"])
    assert "SSH link lost" in ms[0]["error"] and ms[0]["unreachable"]
    # the second point ran with the server back (it fails here on the fake's empty iperf3 output)
    assert "unreachable" not in ms[1] and "SSH link lost" not in ms[1]["error"]
    # point 1 set it, the restore put it back as soon as the server answered, point 2 set it again ...
    assert rmem_writes(remote) == [SET, PRIOR, SET]
    # ... journaled again after that restore, so the end of the campaign puts it back too
    assert [e["prior"] for e in tb.journal.entries()] == [PRIOR]


def test_what_the_lost_point_left_running_is_stopped_once_the_host_answers(tmp_path, ssh_sweep):
    """perf, iperf3 and the probes run in their own sessions on the server: an sshd (or a link) that
    died leaves them running, measuring beside the next point. Stopped by their mark once it answers."""
    from hostnet.hosts import ProcessTag
    from hostnet.hosts.ssh import _START, _START_MANY
    tb, remote = ssh_sweep
    tb.machines["lab"].tag = ProcessTag("unit-tag")
    remote.lifetime_s = 600  # the first point's processes would run on ...
    lost = {}

    def drop(argv):
        if argv != ["cat", "/proc/stat"]:
            return False
        lost["running"] = set(remote.running)
        remote.lifetime_s = 1.0  # ... what starts after the loss ends by itself
        return True
    remote.drop_after(0.1, when=drop, down_for=2)
    sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False, reconnect_wait_s=60)
    kills = [i for i, argv in enumerate(remote.commands) if argv[:2] == ["kill", "-KILL"]]
    assert len(kills) == 1
    stopped = {int(p) for p in remote.commands[kills[0]][2:]}
    assert stopped and stopped <= lost["running"]  # the lost point's, and only what still ran
    starts_after = [argv for argv in remote.commands[kills[0]:] if argv[2:3] in ([_START], [_START_MANY])]
    assert starts_after  # stopped before the second point started its own


def test_native_tools_are_built_again_once_a_lost_host_answers(tmp_path, ssh_sweep, monkeypatch):
    """A host that rebooted comes back without /tmp, where its native builds were: the points after
    it run freshly built tools, not the paths of the gone ones."""
    tb, remote = ssh_sweep
    builds = []

    def native_binaries(t, tool):
        builds.append(tool)
        return tuple((role, f"/tmp/hostnet-native.{len(builds)}/{tool}") for role in t.endpoints)
    monkeypatch.setattr(sweep, "native_binaries", native_binaries)
    # the link drops as the first point's zcflow server starts
    remote.drop_after(0, when=lambda argv: any(a.endswith("/zcflow") for a in argv), down_for=2)
    spec = SweepSpec(configs=["tsogro"], grid={"send_mode": ["sendfile"]}, repetitions=2, duration=1, warmup=0)
    sweep.run_sweep(tb, spec, runs_dir=tmp_path / "runs", campaign="c", progress=False, reconnect_wait_s=60)
    assert builds == ["zcflow", "zcflow"]  # at the start, and again once the server answered
    started = [a.split("/")[2] for argv in remote.commands for a in argv if a.endswith("/zcflow")]
    assert started[0] == "hostnet-native.1" and set(started[1:]) == {"hostnet-native.2"}, started


def test_a_host_that_stays_unreachable_stops_the_sweep_saying_so(tmp_path, ssh_sweep):
    from hostnet.hosts import HostUnreachable
    tb, remote = ssh_sweep
    remote.drop_after(0.1, when=lambda argv: argv == ["cat", "/proc/stat"])  # down for good
    with pytest.raises(HostUnreachable) as err:
        sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False, reconnect_wait_s=0)
    msg = str(err.value)
    assert msg.startswith("sweep c stopped at run 1 of 2 (0 ran, 0 already done, 1 failed): lab: unreachable")
    assert f"stay journaled in {tb.journal.path}; `hostnet restore` puts them back once lab answers again" in msg
    runs = store.list_runs(tmp_path / "runs", "c")
    assert len(runs) == 1 and store.load_manifest(runs[0])["status"] == "failed"
    assert len(tb.journal.entries()) == 1  # nothing lost: still journaled


def test_the_campaign_lock_is_never_taken_through_a_symlink(tmp_path, ssh_sweep):
    tb, _ = ssh_sweep
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    cdir = tmp_path / "runs" / "c"
    cdir.mkdir(parents=True)
    (cdir / store.campaign.LOCK_FILE).symlink_to(target)
    with pytest.raises(store.CampaignLocked, match=r"\.sweep\.lock: cannot open the campaign's lock .*symlink"):
        sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    assert target.read_text() == "keep me\n"


def test_a_second_sweep_on_a_campaign_is_refused_and_leaves_the_first_ones_run_alone(tmp_path, ssh_sweep):
    tb, _ = ssh_sweep
    cdir = tmp_path / "runs" / "c"
    cdir.mkdir(parents=True)
    in_progress = cdir / f"{sweep.point_id({'config': 'tsogro'}, sweep.fingerprint(tb, VERSIONS), 'single-flow')}" \
                         "-r0.partial"
    in_progress.mkdir()
    import multiprocessing
    ready, release = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold_lock, args=(cdir, ready, release))
    holder.start()
    try:
        assert ready.wait(10)
        with pytest.raises(store.CampaignLocked, match=rf"campaign c is being swept by pid {holder.pid} on "):
            sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
        assert in_progress.is_dir()
    finally:
        release.set()
        holder.join(10)
    with store.Campaign.at(cdir).lock():  # free once the holder ended
        pass


def _hold_lock(cdir, ready, release):
    with store.Campaign.at(cdir).lock():
        ready.set()
        release.wait(10)


VERSIONS = {"lab": {"kernel": "6.12.0", "perf": "perf 6.12"}}


def test_an_empty_or_unreadable_manifest_is_an_incomplete_run_that_resume_redoes(tmp_path, ssh_sweep, monkeypatch):
    tb, _ = ssh_sweep
    cdir = tmp_path / "runs" / "c"
    ids = [f"{sweep.point_id({'config': 'tsogro'}, sweep.fingerprint(tb, VERSIONS), 'single-flow')}-r{k}"
           for k in range(2)]
    for run_id, text in zip(ids, ("", "{\"schema\": 2, \"sta"), strict=True):  # zero-length; torn
        (cdir / run_id).mkdir(parents=True)
        (cdir / run_id / "manifest.json").write_text(text)
    assert [store.run_status(cdir / i) for i in ids] == [store.INCOMPLETE, store.INCOMPLETE]
    with pytest.warns(UserWarning, match=r"manifest.json is empty or unreadable \(JSONDecodeError: .*\); the run is "
                                         r"left out"):
        assert store.list_runs(tmp_path / "runs", "c") == []  # analysis never reads them, and says so

    def start_point(tb, req, before_window=None):
        rd = store.Campaign(req.runs_dir, req.campaign).new_run(req.run_id)
        rd.manifest.update(experiment="single-flow", repetition=req.repetition)
        return SimpleNamespace(finish=lambda: rd.finish("ok"))
    monkeypatch.setattr(sweep, "start_point", start_point)
    out = sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    assert (out["ran"], out["failed"]) == (2, 0)
    assert [r.name for r in store.list_runs(tmp_path / "runs", "c")] == ids
    kept = sorted(p.name.split(".")[1].rsplit("-", 1)[0] for p in cdir.iterdir() if ".incomplete-" in p.name)
    assert kept == ["incomplete", "incomplete"]  # the broken attempts are kept for the record


def test_a_campaign_recorded_on_another_kernel_or_receive_path_is_refused_before_any_run(tmp_path, ssh_sweep):
    """A resume or top-up would judge runs of two testbeds together; sweep.json's fingerprint says
    which testbed a campaign was recorded on (older ones: the receive path from the runs' manifests)."""
    tb, remote = ssh_sweep
    cdir = tmp_path / "runs" / "c"
    cdir.mkdir(parents=True)
    here = sweep.fingerprint(tb, VERSIONS)
    assert here["rx_steering"] == "nic" and here["kernels"] == ["6.12.0"]
    for recorded, differs in (({**here, "kernels": ["6.18.44"]}, "kernels ['6.18.44'] there, ['6.12.0'] here"),
                              ({**here, "rx_steering": "rps"}, "rx_steering rps there, nic here"),
                              ({**here, "tools": ["perf: perf 6.1"]}, "tools ['perf: perf 6.1'] there, "
                                                                      "['perf: perf 6.12'] here")):
        (cdir / "sweep.json").write_text(json.dumps({"fingerprint": recorded}))
        with pytest.raises(sweep.IncomparableTestbed, match=rf"campaign c was recorded on another testbed "
                                                            rf"\({re.escape(differs)}\).*record a new campaign"):
            sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    assert not [argv for argv in remote.commands if argv[:2] == ["sh", "-c"]]  # no setting written
    # a sweep.json from before rx_steering was fingerprinted: the runs' manifests name the receive path
    old = {k: v for k, v in here.items() if k not in ("rx_steering", "tools")}
    (cdir / "sweep.json").write_text(json.dumps({"fingerprint": old}))
    run = store.Campaign(tmp_path / "runs", "c").new_run("abc-r0")
    run.manifest.update(experiment="single-flow", testbed={"kind": "ssh", "rx_steering": "napi-thread"})
    run.finish("ok")
    where = store.Campaign.at(cdir)
    assert sweep.recorded_fingerprint(where)["rx_steering"] == "napi-thread"
    assert sweep.incomparable(sweep.recorded_fingerprint(where), here) == ["rx_steering napi-thread there, nic here"]
    # a torn sweep.json (a kill mid-write): the manifests still say which testbed, and a resume goes on
    (cdir / "sweep.json").write_text('{"spec": {"experi')
    assert sweep.recorded_fingerprint(where) == {"rx_steering": "napi-thread"}  # that run's manifest: no versions
    # ... and ids stay what they were before the receive path joined the fingerprint
    assert sweep.point_id({"config": "tsogro"}, here, "single-flow") == \
        sweep.point_id({"config": "tsogro"}, old, "single-flow")
    assert sweep.incomparable(None, here) == [] and sweep.incomparable(here, here) == []


@pytest.mark.parametrize("text,msg", [
    # issue 19: each of these was a TypeError or was accepted
    ("repetitions: '3'\n", r"repetitions: '3' is not a whole number"),
    ("grid: {flows: 4}\n", r"grid\.flows: 4 is not a non-empty list of values"),
    ("grid: 4\n", r"grid: 4 is not a mapping"),
    ("- experiment: incast\n", r"\(top level\): \[.*\] is not a mapping of sweep settings"),
    ("perf_freq_hz: -1\n", r"perf_freq_hz: -1 is not a sampling rate"),
    ("configs: tsogro\n", r"configs: 'tsogro' is not a non-empty list of config names"),
    ("grid: {flows: [1, two]}\n", r"grid\.flows\.1: 'two' is not a whole number from 1 to 1,000,000"),
    ("grid: {loss_rate: [2]}\n", r"grid\.loss_rate\.0: 2 is not a fraction from 0 to 1"),
    ("experiment: mixed\ngrid: {long_flow: [true]}\n", r"grid\.long_flow\.0: True is not 0 or 1"),
    ("duration: 2.5\n", r"duration: 2\.5 is not a whole number of seconds"),
    ("rpc_tool: ping\n", r"rpc_tool: 'ping' is not auto, netperf or sockperf"),
    # issue 33: accepted, or refused late (after a testbed was built), or not on one line
    ("repetitions: 3.0\n", r"repetitions: 3\.0 is not a whole number from 1 to 1000"),
    ("duration: 1000000000000\n", r"duration: 1000000000000 is not a whole number of seconds from 1 to 86,400"),
    ("label: \"lab\\n\"\n", r"label: 'lab\\n' is not a label"),
    ("grid: {congestion_control: [\"cubic\\n\"]}\n", r"grid\.congestion_control\.0: 'cubic\\n' is not"),
    ("configs: [tsogro]\nconfigs: [all-opts]\n", r"line 2: key .configs. appears twice in one mapping"),
    ("", r"empty; a sweep spec names at least its configs"),
    ("grid: {rx_buffer_kb: [" + ", ".join(str(i) for i in range(200, 320)) + "], rpc_size: ["
     + ", ".join(str(i) for i in range(1, 121)) + "]}\n", r"14,400 points \(configs x grid\); a sweep takes at most"),
    ("label: " + "x" * 5000 + "\n", r"label: 'x+\.\.\.x+' is not a label"),
    ("grid: {flows: [1, 2, 1]}\n", r"grid\.flows lists 1 more than once"),
    ("configs: [tsogro, all-opts, tsogro]\n", r"configs lists \"tsogro\" more than once"),
    ("experiment: udp-loss\ngrid: {udp_rate_gbps: [8, 8.0]}\n", r"grid\.udp_rate_gbps lists 8 more than once"),
])
def test_sweep_yaml_is_checked_against_the_schema(tmp_path, text, msg):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(sweep.SweepError, match=msg) as exc:
        SweepSpec.from_yaml(path)
    assert str(exc.value).startswith(f"{path}: ")
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 400  # one problem, one line


def test_sweep_spec_from_python_is_checked_too():
    import numpy as np
    with pytest.raises(sweep.SweepError, match="repetitions: '3'"):
        SweepSpec(repetitions="3")
    with pytest.raises(sweep.SweepError, match=r"grid\.flows\.1: .*2.* is not a whole"):  # would break json.dumps later
        SweepSpec(workload="incast", grid={"flows": [1, np.int64(2)]})
    spec = SweepSpec(workload="incast", configs=("tsogro",), grid={"flows": (1, 2)}, repetitions=2)
    assert [p["flows"] for p in spec.points()] == [1, 2]
    from conftest import REPO  # every committed sweep file passes the schema
    for path in sorted((REPO / "sweeps").glob("*.yaml")):
        assert SweepSpec.from_yaml(path).repetitions >= 1, path


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("experiment: incast\nconfigs: [tsogro\n")
    with pytest.raises(sweep.SweepError, match=f'in "{path}", line 2'):
        sweep.SweepSpec.from_yaml(path)


def test_a_points_finish_overlaps_the_next_points_setup_and_ends_before_its_window():
    """sweep._Finisher: point k finishes in the background while point k+1 sets up and warms up;
    the next point's before_window waits for it, so no finishing work falls in a window. A finish
    that fails counts as a failed point; without overlap (SSH) each finishes at once."""
    import threading
    from hostnet.measure.runner import RunFailed
    events = []

    class Run:
        def __init__(self, k, fail=False):
            self.k, self.fail = k, fail

        def finish(self):
            events.append((f"finish {self.k}", threading.current_thread().name.startswith("hostnet-finish")))
            if self.fail:
                raise RunFailed("perf report printed nothing")

    done = {"ran": 0, "failed": 0}
    with sweep._Finisher(True, done) as fin:
        fin.add(Run(0), {"config": "tsogro"}, 0)
        fin.settle()  # what point 1 calls as its window is about to open
        events.append(("window 1", False))
        fin.add(Run(1, fail=True), {"config": "tsogro"}, 1)
    assert events == [("finish 0", True), ("window 1", False), ("finish 1", True)]
    assert done == {"ran": 1, "failed": 1}
    events.clear()
    done = {"ran": 0, "failed": 0}
    with sweep._Finisher(False, done) as fin:
        fin.add(Run(0), {}, 0)
        events.append(("next point", False))
    assert events == [("finish 0", False), ("next point", False)] and done["ran"] == 1


def test_only_local_testbeds_overlap_a_points_finish(tmp_path, ssh_sweep):
    tb, _ = ssh_sweep
    assert not sweep.overlapping(tb)
    assert sweep.overlapping(from_layout(EmbeddedLayout("unit")))


def runs_recorded(monkeypatch) -> list[tuple[str, bool]]:
    """The sweep's runs as (run tag, profiled), each finished ok at once instead of run."""
    calls = []

    def start_point(tb, req, before_window=None):
        calls.append((req.run_id.rsplit("-", 1)[1], req.probing.profile))
        rd = store.Campaign(req.runs_dir, req.campaign).new_run(req.run_id)
        rd.manifest.update(experiment="single-flow", repetition=req.repetition)
        return SimpleNamespace(finish=lambda: rd.finish("ok"))
    monkeypatch.setattr(sweep, "start_point", start_point)
    return calls


def test_unprofiled_repetitions_are_runs_of_their_own_shuffled_in_with_the_profiled(tmp_path, ssh_sweep,
                                                                                    monkeypatch):
    tb, _ = ssh_sweep
    calls = runs_recorded(monkeypatch)
    spec = SweepSpec(configs=["tsogro"], repetitions=2, unprofiled_repetitions=2, duration=1, warmup=0, seed=3)
    out = sweep.run_sweep(tb, spec, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    assert out["ran"] == 4
    assert sorted(calls) == [("r0", True), ("r1", True), ("u0", False), ("u1", False)]
    order = json.loads((tmp_path / "runs" / "c" / "sweep.json").read_text())["order"]
    assert [o.rsplit("-", 1)[1] for o in order] == [c for c, _ in calls]
    # a spec without them keeps the order (and run names) it always had
    assert SweepSpec(repetitions=2).unprofiled_repetitions == 0


def test_a_rehearsal_testbed_runs_no_unprofiled_runs_and_its_plan_says_so(tmp_path, ssh_sweep, monkeypatch):
    """perf's cost on emulated NICs measures nothing, and each run costs minutes under TCG."""
    tb, _ = ssh_sweep
    calls = runs_recorded(monkeypatch)
    monkeypatch.setattr(tb, "rehearsal", "emulated NIC under TCG")
    spec = SweepSpec(configs=["tsogro"], repetitions=1, unprofiled_repetitions=1, duration=1, warmup=0)
    assert sweep.run_sweep(tb, spec, runs_dir=tmp_path / "runs", campaign="c", progress=False)["ran"] == 1
    assert calls == [("r0", True)]
    plan = json.loads((tmp_path / "runs" / "c" / "sweep.json").read_text())
    assert plan["spec"]["unprofiled_repetitions"] == 0 and len(plan["order"]) == 1


def test_a_plain_resume_keeps_the_top_up_records_in_sweep_json(tmp_path, ssh_sweep, monkeypatch):
    """#33 (suspected in review, confirmed): rerunning a sweep rewrote sweep.json with its plan only,
    dropping what earlier top-ups had recorded there."""
    tb, _ = ssh_sweep

    def start_point(tb, req, before_window=None):
        rd = store.Campaign(req.runs_dir, req.campaign).new_run(req.run_id)
        rd.manifest.update(experiment="single-flow", repetition=req.repetition)
        return SimpleNamespace(finish=lambda: rd.finish("ok"))
    monkeypatch.setattr(sweep, "start_point", start_point)
    sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    path = tmp_path / "runs" / "c" / "sweep.json"
    plan = json.loads(path.read_text())
    records = {"top_ups": [{"ran": 1, "failed": 0}], "decisive_top_ups": [{"rounds": 1, "stopped": "decided"}]}
    path.write_text(json.dumps({**plan, **records}))
    out = sweep.run_sweep(tb, SMALL, runs_dir=tmp_path / "runs", campaign="c", progress=False)
    assert (out["ran"], out["skipped"]) == (0, 2)
    again = json.loads(path.read_text())
    assert {k: again[k] for k in records} == records and again["order"] == plan["order"]


def test_send_and_recv_mode_make_a_zero_copy_point_at_the_mtu_asked():
    from hostnet.derive.workloads import ZeroCopyFlows
    spec = SweepSpec(configs=["all-opts"], grid={"mtu": [61492], "send_mode": ["copy", "zerocopy"],
                                                 "recv_mode": ["mmap"]})
    [copy, zc] = spec.points()
    assert sweep.point_config(zc).mtu == 61492 and sweep.point_config(zc).tso  # all-opts, MTU overridden
    w = point_workload(spec, zc, "iperf3", {"zcflow": (("sender", "/b/z"), ("receiver", "/b/z"))})
    assert isinstance(w, ZeroCopyFlows) and (w.send_mode, w.recv_mode) == ("zerocopy", "mmap")
    assert w.binary("receiver") == "/b/z"
    assert point_workload(spec, copy, "iperf3").send_mode == "copy"
    assert "-M" not in w.server_argv(w.flows([("sender", [0])], [("receiver", [1])])[0], "198.18.0.2")
    at_9000 = SweepSpec(configs=["all-opts"], grid={"mtu": [9000], "mss": [4108], "recv_mode": ["mmap"]})
    w = point_workload(at_9000, at_9000.points()[0], "iperf3", {"zcflow": (("sender", "/b/z"), ("receiver", "/b/z"))})
    flow = w.flows([("sender", [0])], [("receiver", [1])])[0]
    assert w.server_argv(flow, "198.18.0.2")[-2:] == ["-M", "4108"] == w.client_argv(flow, "198.18.0.2")[-2:]
    with pytest.raises(sweep.SweepError, match=r"grid.mss.0: 100 is not a TCP maximum segment size from 536 to 65535"):
        SweepSpec(configs=["all-opts"], grid={"mss": [100]})
    with pytest.raises(sweep.SweepError, match="send_mode, recv_mode and mss choose how a bulk flow moves data"):
        SweepSpec(configs=["tsogro"], grid={"send_mode": ["sendfile"], "rpc_size": [4096]})
    with pytest.raises(sweep.SweepError, match=r"grid.send_mode.0: 'splice' is not one of copy, sendfile, zerocopy"):
        SweepSpec(configs=["tsogro"], grid={"send_mode": ["splice"]})
    with pytest.raises(sweep.SweepError, match="is not an MTU from 68 to 65535"):
        SweepSpec(configs=["tsogro"], grid={"mtu": [70000]})


def test_preflight_of_a_built_tool_asks_for_a_compiler_not_a_binary_on_path(monkeypatch):
    """zcflow is built on each host (native.ensure), so a host without it on PATH is fine, one
    without a C compiler is refused by name; its version is the source hash it is built from."""
    from conftest import FakeHost, servers_testbed
    from hostnet import native
    from hostnet.measure import runner
    ok = {t: (lambda argv, h: (0, "x 1.0\n", "")) for t in ("perf", "taskset", "uname", "sh", "cc")}
    bare = {t: f for t, f in ok.items() if t != "cc"}
    tb = servers_testbed(FakeHost("rx", handlers=bare))
    tb.endpoints["sender"].host.handlers.update(ok)
    monkeypatch.setattr(preflight.capabilities, "cpu_accounting", lambda text: SimpleNamespace(value="tick"))
    with pytest.raises(runner.PreflightError, match="rx: no C compiler .cc or gcc not found"):
        runner.preflight(tb, ("zcflow",))
    tb.endpoints["receiver"].host.handlers["cc"] = ok["cc"]
    versions = runner.preflight(tb, ("zcflow",))
    assert versions["rx"]["zcflow"] == native.binary_name("zcflow")


def test_a_time_budget_sweep_makes_one_microbenchmark_point_and_a_batching_point_per_size():
    from hostnet.measure.benches import Microbenchmarks, UdpBatch
    spec = sweep.declared("time-budget", grid={"batch": [1, 32], "micro_scale": [0.1]}, repetitions=1)
    points = spec.points()
    assert points == [{"config": "no-opts", "bench": "micro", "micro_scale": 0.1},
                      {"config": "no-opts", "bench": "udp-batch", "batch": 1, "payload_bytes": 18},
                      {"config": "no-opts", "bench": "udp-batch", "batch": 32, "payload_bytes": 18}]
    assert [spec.stored_for(p) for p in points] == ["time-budget-micro", "udp-batch", "udp-batch"]
    bins = {"microbench": (("receiver", "/b/m"),), "udpbatch": (("sender", "/b/u"), ("receiver", "/b/u"))}
    micro, b1, _ = (point_workload(spec, p, "udpbatch", bins) for p in points)
    assert micro == Microbenchmarks(scale=0.1, binaries=(("receiver", "/b/m"),))
    assert b1 == UdpBatch(1, 2, 1, binaries=bins["udpbatch"])
    with pytest.raises(sweep.SweepError, match="workload time-budget takes grid.bench"):
        SweepSpec(workload="time-budget", configs=["no-opts"], grid={"batch": [1]})
    with pytest.raises(sweep.SweepError, match="those keys belong to it alone"):
        SweepSpec(configs=["no-opts"], grid={"batch": [1]})
    with pytest.raises(sweep.SweepError, match="those keys belong to it alone"):
        SweepSpec(workload="time-budget", configs=["no-opts"], grid={"bench": ["micro"], "flows": [2]})


def test_ip_version_picks_each_bulk_flows_address_family_and_is_refused_where_not_wired():
    """iperf3 and zcflow take an IPv6 address as given; the RPC tools, iperf2 and mixed flows are
    driven over IPv4 only here, which a spec asking IPv6 of them is told before anything runs."""
    from hostnet.derive.workloads import LongFlows, ZeroCopyFlows
    spec = SweepSpec(configs=["all-opts"], grid={"big_tcp_bytes": [185000], "ip_version": [4, 6]})
    v4, v6 = (point_workload(spec, p, "iperf3") for p in spec.points())
    assert isinstance(v6, LongFlows) and (v4.ip_version, v6.ip_version) == (4, 6)
    assert v6.describe()["ip_version"] == 6
    zc = SweepSpec(configs=["all-opts"], grid={"recv_mode": ["mmap"], "ip_version": [6]})
    w = point_workload(zc, zc.points()[0], "iperf3")
    assert isinstance(w, ZeroCopyFlows) and w.ip_version == 6
    assert point_workload(SweepSpec(configs=["tsogro"]), {"config": "tsogro"}, "iperf3").ip_version is None
    with pytest.raises(sweep.SweepError, match="RpcFlows runs over IPv4, not IPv6"):
        SweepSpec(configs=["tsogro"], grid={"rpc_size": [4096], "ip_version": [6]})
    with pytest.raises(sweep.SweepError, match="UdpRate runs over IPv4, not IPv6"):
        SweepSpec(workload="udp-loss", configs=["tsogro"], grid={"udp_rate_gbps": [1], "ip_version": [6]})
    with pytest.raises(sweep.SweepError, match="mixed flows run over IPv4 only"):
        SweepSpec(workload="mixed", configs=["tsogro"], grid={"short_flows": [1], "ip_version": [6]})
    with pytest.raises(sweep.SweepError, match=r"grid.ip_version.0: 5 is not 4 or 6"):
        SweepSpec(configs=["tsogro"], grid={"ip_version": [5]})
    with pytest.raises(sweep.SweepError, match="those keys belong to it alone"):
        SweepSpec(workload="time-budget", configs=["tsogro"], grid={"bench": ["micro"], "ip_version": [6]})

    with pytest.raises(sweep.SweepError, match="IPv6 points need an MTU of at least 1280"):
        SweepSpec(configs=["tsogro"], grid={"ip_version": [4, 6], "mtu": [1000, 1500]})
    assert SweepSpec(configs=["tsogro"], grid={"ip_version": [4], "mtu": [1000]}).points()  # IPv4 alone may


def test_rate_mbps_paces_the_long_flows_of_a_point_and_is_refused_where_iperf3_does_not_move_them():
    spec = SweepSpec.of_configs(["tsogro"], rate_mbps=20, workload="single-flow", repetitions=1, duration=60,
                                warmup=5)
    [point] = spec.points()
    assert point["rate_mbps"] == 20 and point_workload(spec, point, "iperf3").rate_mbps == 20
    assert "rate_mbps" not in SweepSpec.of_configs(["tsogro"], workload="single-flow").grid
    with pytest.raises(sweep.SweepError, match="rate_mbps paces iperf3's long flows"):  # refused as the spec is built
        SweepSpec.of_configs(["tsogro"], rate_mbps=20, rpc_size=4096, workload="single-flow")
    with pytest.raises(sweep.SweepError, match="rate_mbps"):
        SweepSpec.from_dict({"experiment": "single-flow", "configs": ["tsogro"], "grid": {"rate_mbps": [0]}})


def _numa_host(nodes: dict[int, str], nic_node: str = "1"):
    from conftest import FakeHost
    listing = "".join(f"/sys/devices/system/node/node{n}\n" for n in nodes)
    return FakeHost("rx", files={**{f"/sys/devices/system/node/node{n}/cpulist": f"{c}\n" for n, c in nodes.items()},
                                 "/sys/class/net/enp37s0f1/device/numa_node": f"{nic_node}\n"},
                    handlers={"sh": lambda argv, h: (0, listing, "")})


def test_a_placement_point_runs_with_the_one_receivers_application_moved(tmp_path):
    """grid.placement (sweeps/numa.yaml): the receiver's NUMA layout read once at preflight, and each
    point's run on the testbed with the receiver's application on a core of the NIC's node or of
    another; a point without it runs on the testbed as it is."""
    from conftest import servers_testbed
    spec = sweep.declared("numa")
    tb = servers_testbed(_numa_host({0: "0-1", 1: "12-13"}))
    placements, problems = sweep.receiver_placements(tb, spec.points())
    assert placements == {"nic-local": [12], "nic-remote": [0]} and problems == []
    c = sweep._Campaign(spec, spec.points(), {}, "sockperf", {}, {}, store.Campaign(tmp_path, "c"), {}, placements)
    local, remote = (c.testbed_for(tb, p) for p in spec.points())
    assert local.endpoints["receiver"].cpus == [12] and remote.endpoints["receiver"].cpus == [0]
    assert tb.endpoints["receiver"].cpus == [12, 13] and remote.endpoints["sender"] is tb.endpoints["sender"]
    assert c.testbed_for(tb, {"config": "all-opts"}) is tb
    assert sweep.receiver_placements(tb, [{"config": "all-opts"}]) == ({}, [])


def test_a_placement_sweep_where_no_numa_node_is_nic_remote_is_refused_naming_why():
    from conftest import servers_testbed
    points = sweep.declared("numa").points()
    assert sweep.receiver_placements(servers_testbed(_numa_host({0: "0-3"}, nic_node="0")), points) == (
        {}, ["grid.placement: rx: one NUMA node (1 in /sys/devices/system/node): nothing is NIC-remote"])
    _, [problem] = sweep.receiver_placements(servers_testbed(_numa_host({0: "0-1", 1: "2-3"}, nic_node="-1")),
                                             points)
    assert "enp37s0f1 has no NIC reporting a NUMA node" in problem
