"""hostnet.measure.runner: the measurement-window check, and a point whose SSH link drops during the window
(a fake fabric connection, conftest.FakeRemote): it ends as a failed run directory with the reason,
never an escaping HostError, a .partial left behind or one connect timeout per process."""
import json
import re
import time

import pytest

from conftest import FakeRemote
from hostnet import store
from hostnet.measure import config as stackconfig, probing, runner
from hostnet.hosts import SshHost, SshOptions
from hostnet.knobs import KNOBS, Journal
from hostnet.measure.runner import RunFailed, WindowTooShort, check_window
from hostnet.testbed import Endpoint, Testbed
from hostnet.derive.workloads import LongFlows

RMEM = "net.core.rmem_max"
PRIOR, SET = "212992", "4194304"


def test_a_window_of_a_quarter_or_more_is_accepted():
    check_window(0.5, 2, 1)
    check_window(2.5, 3, 8)


def test_a_window_under_a_quarter_of_the_run_is_refused_with_the_reason():
    with pytest.raises(WindowTooShort, match=r"0\.00 s is under a quarter of the 2 s run: starting 8 flows"):
        check_window(0.0001, 2, 8)
    with pytest.raises(WindowTooShort):
        check_window(0.74, 3, 1)


def ssh_testbed(tmp_path, monkeypatch, remote: FakeRemote) -> Testbed:
    """Sender and receiver on one server reached over (fake) SSH; applying a point's config is one
    journaled sysctl, so a restore has something to put back."""
    remote.files[f"/proc/sys/{RMEM.replace('.', '/')}"] = PRIOR + "\n"
    remote.install(monkeypatch)
    # a fake link answers at once: a failed connection is tried again after 0.05 s, not 10 (ssh.py)
    host = SshHost("198.18.0.9", name="lab",
                   options=SshOptions(insecure_accept_unknown_keys=True, connect_timeout=0.05))
    eps = {role: Endpoint(role, host, "enp1s0", ip, [cpu], "lab")
           for role, ip, cpu in (("sender", "198.18.0.1", 0), ("receiver", "198.18.0.2", 1))}

    def apply(tb, cfg, workload, rd):
        tb.journal.set(host, KNOBS["sysctl"], RMEM, SET)
        rd.manifest["applied"] = {RMEM: SET}
    monkeypatch.setattr(runner, "_apply", apply)
    return Testbed("lab", "servers", eps, {"lab": host}, Journal(tmp_path / "state" / "lab.journal"))


VERSIONS = {"lab": {"kernel": "6.12.0", "perf": "perf 6.12"}}


def test_a_link_that_drops_during_the_window_fails_the_point_with_the_reason(tmp_path, monkeypatch):
    remote = FakeRemote({"/proc/sys/net/ipv4/tcp_congestion_control": "bbr\n"})
    tb = ssh_testbed(tmp_path, monkeypatch, remote)
    # /proc/stat is read as the window opens; the link drops 0.1 s into the 0.5 s window
    remote.drop_after(0.1, when=lambda argv: argv == ["cat", "/proc/stat"])
    with pytest.raises(RunFailed, match=r"lab: SSH link lost during sh") as err:
        runner.run_point(tb, runner.RunRequest(stackconfig.get_config("tsogro"), LongFlows(1, 0), tmp_path / "runs",
                                               "c", run_id="p-r0", versions=VERSIONS,
                                               probing=runner.Probing(profile=False)))
    assert "run directory: " in str(err.value)
    cdir = tmp_path / "runs" / "c"
    assert [p.name for p in cdir.iterdir()] == ["p-r0"]  # written and renamed: no .partial left
    m = json.loads((cdir / "p-r0" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["error"].startswith("HostUnreachable: lab: SSH link lost during sh")
    assert m["unreachable"] == ["lab: unreachable (No route to host)"]
    # the server's own default, which its sockets connect under, is recorded (not changed off the embedded testbed)
    assert m["congestion_default"] == {"sender": "bbr", "receiver": "bbr"}
    out = store.raw_text(cdir / "p-r0", "server0.output.txt")
    assert out.startswith("iperf3 -s") and "not stopped, output not read: lab: unreachable" in out
    # once the link is known dead no process is tried again: one reconnect, not one per process
    assert remote.refused == 1
    # the setting stays journaled, to be put back when the server answers
    assert [e["prior"] for e in tb.journal.entries()] == [PRIOR]


# -- flows that start together, and a window every flow covers (runner.FlowStarts) ------------------

def _starts(*brackets, host_clock=None):
    s = runner.FlowStarts()
    for i, (sent, returned) in enumerate(brackets):
        s.add(i, sent, returned, "h", host_clock[i] if host_clock else returned)
    return s


def test_a_window_inside_every_flows_lifetime_passes():
    s = _starts((100.0, 100.03), (100.0, 100.04))
    runner.check_coverage(s, opened=102.04, closed=105.9, total_s=6)  # flows end at 106 at the earliest


def test_a_flow_that_started_after_the_window_opened_fails_the_run_naming_it():
    s = _starts((100.0, 100.03), (100.0, 102.5))
    with pytest.raises(runner.WindowNotCovered, match=r"flow 1 started up to 0.460 s after the measurement window "
                                                     r"opened \(1 of 2 flows late\)"):
        runner.check_coverage(s, opened=102.04, closed=105.9, total_s=6)


def test_a_flow_that_may_have_ended_before_the_window_closed_fails_the_run_naming_it():
    s = _starts((99.5, 99.52), (100.0, 100.03))
    with pytest.raises(runner.WindowNotCovered, match=r"flow 0 may have ended 0.400 s before the measurement window "
                                                     r"closed"):
        runner.check_coverage(s, opened=102.04, closed=105.9, total_s=6)
    # the same bound, but flow 0's client was seen running after the close (a local host): covered
    runner.check_coverage(s, opened=102.04, closed=105.9, total_s=6, running_after_close={0})
    with pytest.raises(runner.WindowNotCovered, match="flow 0 may have ended"):
        runner.check_coverage(s, opened=102.04, closed=105.9, total_s=6, running_after_close={1})


def test_start_spread_is_each_hosts_own_clock_or_the_controllers_bracket_across_hosts():
    one = _starts((100.0, 100.2), (100.0, 100.2), host_clock=[50.001, 50.004])
    assert one.spread_s() == pytest.approx(0.003)  # one round trip: the remote's clock says 3 ms
    two = runner.FlowStarts()
    two.add(0, 100.0, 100.05, "a", 7.0)
    two.add(1, 100.0, 100.08, "b", 9.0)
    assert two.spread_s() == pytest.approx(0.08)  # two clocks: the controller's bracket bounds it
    assert two.describe()["clients_started"] == 100.0 and two.describe()["clients_all_started"] == 100.08


def test_ssh_starts_every_flow_of_a_host_in_one_round_trip(tmp_path, monkeypatch):
    remote = FakeRemote()
    tb = ssh_testbed(tmp_path, monkeypatch, remote)
    host = tb.endpoints["sender"].host
    procs = host.start_many([["iperf3", "-c", "198.18.0.2", "-p", str(5201 + i)] for i in range(24)])
    starts = [a for a in remote.commands if a[:2] == ["bash", "-c"]]
    assert len(starts) == 1 and len(procs) == 24 and len({p.pid for p, _ in procs}) == 24
    sep = starts[0][4]
    groups = " ".join(starts[0][5:]).split(sep)
    assert [g.split()[1:] for g in groups] == [["iperf3", "-c", "198.18.0.2", "-p", str(5201 + i)] for i in range(24)]
    assert all(g.split()[0].startswith("/tmp/hostnet-") for g in groups)


def test_the_start_many_script_starts_each_command_with_its_own_arguments_and_output(tmp_path):
    """The constant bash script SshHost.start_many sends, run here by a real bash: arguments with
    spaces and quotes stay whole, each command writes its own files, and the PIDs and start times
    come back in order."""
    from hostnet.hosts import LocalHost
    from hostnet.hosts.ssh import _START_MANY
    sep = "--hostnet-next-x--"
    bases = [str(tmp_path / f"c{i}") for i in range(3)]
    args = [bases[0], "printf", "%s|", "a b", "'q'", sep, bases[1], "sh", "-c", 'echo "$0"', "x;y", sep,
            bases[2], "printf", "%s", "three"]
    lines = LocalHost().run(["bash", "-c", _START_MANY, "bash", sep, *args]).stdout.split("\n")
    started = [ln.split() for ln in lines if ln]
    assert len(started) == 3 and all(p.isdigit() for p, _ in started)
    times = [float(t) for _, t in started]
    assert times == sorted(times) and times[-1] - times[0] < 1.0
    import time
    time.sleep(0.3)
    assert [open(b + ".out").read() for b in bases] == ["a b|'q'|", "x;y\n", "three"]


def test_the_previous_points_finish_is_awaited_before_the_flows_start(tmp_path, monkeypatch):
    """A live CI run (2026-11-28): the previous point's finish, awaited only before the window,
    slowed this point's client start by ~2 s on 2 cores, so the window of its 2 s flow opened as the
    flow ended (WindowNotCovered). The sweep's settle() now comes before any client starts."""
    remote = FakeRemote({"/proc/sys/net/ipv4/tcp_congestion_control": "bbr\n"})
    tb = ssh_testbed(tmp_path, monkeypatch, remote)
    at = []
    try:
        runner.start_point(tb, runner.RunRequest(stackconfig.get_config("tsogro"), LongFlows(1, 0),
                                                 tmp_path / "runs", "c", run_id="p-r0", versions=VERSIONS,
                                                 probing=runner.Probing(profile=False)),
                           before_window=lambda: at.append(len(remote.commands)))
    except RunFailed:
        pass  # the fake's clients print nothing: what matters is the order of the commands
    client = [i for i, argv in enumerate(remote.commands)  # iperf3 ... -c <receiver>, alone or in start_many's
              if any(a == "-c" and b == "198.18.0.2" for a, b in zip(argv, argv[1:], strict=False))]
    assert at and client, (at, remote.commands)
    assert at[0] <= client[0]  # settled before the first client command


@pytest.mark.parametrize("lifetime_s, covered", [(1.0, True), (0.0, False)])
def test_a_remote_client_seen_running_after_the_close_covers_it_and_only_flows_at_risk_are_looked_at(
        tmp_path, monkeypatch, lifetime_s, covered):
    """CI on 2026-12-01: the e1000e guests took 21-23 s to open a window, and an edge of 3x that left a
    90 s flow no window. The edge is now 1.5x, and over SSH, as locally, a client still running after
    the close covers it (one round trip: its /proc entry), whatever the bound says; one that ended
    fails the run."""
    remote = FakeRemote({"/proc/sys/net/ipv4/tcp_congestion_control": "bbr\n"})
    remote.lifetime_s = lifetime_s
    tb = ssh_testbed(tmp_path, monkeypatch, remote)

    def measure(tb, workload, starts, probes, ep_probes):  # closing took 2 s longer than the flows' bound
        closed = starts.first_sent + workload.total_s() + 2.0
        return {m: {} for m in probes}, {}, (starts.last_returned, starts.last_returned, closed - 1, closed), None
    monkeypatch.setattr(runner, "measure_window", measure)
    req = runner.RunRequest(stackconfig.get_config("tsogro"), LongFlows(1, 0), tmp_path / "runs", "c",
                            run_id="p-r0", versions=VERSIONS, probing=runner.Probing(profile=False))
    if covered:
        run = runner.start_point(tb, req)  # past the coverage check
        assert "window" in run.rd.manifest
        with pytest.raises(RunFailed):
            run.finish()  # the fake's clients print nothing; finishing releases the point
    else:
        with pytest.raises(RunFailed, match=r"flow 0 may have ended 2\.\d+ s before the measurement window closed"):
            runner.start_point(tb, req)
    from hostnet.hosts.ssh import _RUNNING
    assert any(a[:3] == ["sh", "-c", _RUNNING] for a in remote.commands)  # the client's /proc entry, looked at


def test_only_flows_the_bound_cannot_vouch_for_are_looked_at():
    s = _starts((99.5, 99.52), (100.0, 100.03), (101.0, 101.02))
    assert runner.may_have_ended(s, closed=106.2, total_s=6) == {0, 1}
    assert runner.may_have_ended(s, closed=105.6, total_s=6) == {0}
    assert runner.may_have_ended(s, closed=105.0, total_s=6) == set()


def test_a_testbed_too_slow_for_the_flows_gets_no_window_and_is_told_how_long_a_point_needs():
    """The NIC rehearsal's TCG guests took 21 s to open a window over SSH, and the runner closed it 3x
    that before the flows end: a 5 s flow left a window that ended before it began, reported only as
    a flow ending early. The window is still closed as before (a short one is flagged), and says why."""
    from types import SimpleNamespace
    now = time.time()
    tb = SimpleNamespace(closing_s=None, machines={}, endpoints={})
    starts = SimpleNamespace(first_sent=now - 100, last_returned=now - 100)
    workload = SimpleNamespace(warmup_s=0, duration_s=3, total_s=lambda: 5)
    _, _, (opened, start, end, closed), no_window = probing.measure_window(tb, workload, starts, {}, {})
    assert end - start < 0.1
    assert re.fullmatch(r"no measurement window: its probes took 0\.0 s to open and it must close 0\.4 s before the "
                        r"flows end, so flows of 5 s leave -9\d\.\d s; on this testbed give the point at least "
                        r"10\d s \(--duration\)", no_window), no_window
    starts.first_sent = time.time()  # a testbed fast enough for its flows gets no such note
    quick = SimpleNamespace(warmup_s=0, duration_s=1, total_s=lambda: 1)
    assert probing.measure_window(tb, quick, starts, {}, {})[3] is None


def test_remote_hosts_open_and_close_the_window_side_by_side_and_local_ones_in_turn(monkeypatch):
    """A window's edges over SSH cost one round trip a command (0.5-3 s to the NIC rehearsal's TCG
    guests): each host's machine probes, then its endpoints', run in a thread of their own."""
    import threading
    from types import SimpleNamespace
    active, most = [], []
    lock = threading.Lock()

    def step(machines, roles):
        with lock:
            active.append(1)
            most.append(len(active))
        time.sleep(0.2)
        with lock:
            active.pop()
        return {r: (machines, r) for r in roles}

    a, b = object(), object()
    tb = SimpleNamespace(machines={"sender": a, "receiver": b},
                         endpoints={"s": SimpleNamespace(host=a), "r": SimpleNamespace(host=b)})
    probes, eps = {"sender": [], "receiver": []}, {"s": None, "r": None}
    monkeypatch.setattr(probing, "all_local", lambda tb: False)
    out = probing.on_each_host(tb, probes, eps, step)
    assert out == {"s": (["sender"], "s"), "r": (["receiver"], "r")}  # each host's machine with its endpoint
    assert max(most) == 2
    most.clear()
    monkeypatch.setattr(probing, "all_local", lambda tb: True)
    assert probing.on_each_host(tb, probes, eps, step) == {"s": (["sender", "receiver"], "s"),
                                                           "r": (["sender", "receiver"], "r")}
    assert most == [1]

    def failing(machines, roles):
        if "receiver" in machines:
            raise RuntimeError("receiver: perf did not acknowledge 'enable'")
        return {}
    monkeypatch.setattr(probing, "all_local", lambda tb: False)
    with pytest.raises(RuntimeError, match="receiver: perf did not acknowledge"):
        probing.on_each_host(tb, probes, eps, failing)
