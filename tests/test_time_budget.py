"""Time budget (notebook 13): budget arithmetic, perf bench and native-tool parsers, the C tools'
argument errors, and the section's tables and verdicts on the recorded campaign."""
import subprocess

import pandas as pd
import pytest

from conftest import REPO, FakeHost, fixture_text
from hostnet import budget, native, store, time_budget, time_budget_run
from hostnet.parsers import ParseError
from hostnet.parsers.native import parse_microbench, parse_udpbatch
from hostnet.parsers.perfbench import parse_memcpy, parse_syscall_basic
from hostnet.time_budget_run import cpu_clock_mhz, recv_argv, send_argv
from hostnet.verdicts import INCONCLUSIVE, NOT_TESTABLE, REPRODUCED

RUNS, REF = REPO / "data" / "runs", REPO / "data" / "reference"
CAMPAIGN = "20261123-time-budget-embedded"


# --- arithmetic, hand-checked against the talk ---------------------------------------------
def test_wire_size_adds_preamble_and_gap():
    assert budget.wire_bytes(64) == 84
    assert budget.wire_bytes(budget.frame_for_mtu(1500)) == 1538
    with pytest.raises(ValueError, match="at least 64"):
        budget.wire_bytes(60)


@pytest.mark.parametrize("frame, rate, ns", [(1518, 100, 123.04), (1518, 40, 307.6), (1518, 10, 1230.4),
                                             (64, 10, 67.2), (64, 100, 6.72), (9018, 400, 180.76)])
def test_interval_hand_checked(frame, rate, ns):
    assert budget.interval_ns(frame, rate) == pytest.approx(ns)


def test_packet_rate_and_cycles():
    assert budget.packets_per_s(64, 10) / 1e6 == pytest.approx(14.88, abs=0.005)
    assert budget.cycles(67.2, 3000) == pytest.approx(201.6)
    assert budget.copy_bound_gbps(1.0) == pytest.approx(8.589934592)
    with pytest.raises(ValueError):
        budget.interval_ns(64, 0)


def test_table_covers_every_rate_and_frame():
    t = budget.table(clock_mhz=2600)
    assert len(t) == len(budget.RATES_GBPS) * len(budget.FRAME_BYTES)
    row = t[(t.rate_gbps == 100) & (t.frame_bytes == 1518)].iloc[0]
    assert row.interval_ns == pytest.approx(123.04) and row.cycles == pytest.approx(123.04 * 2.6)
    assert "cycles" not in budget.table().columns


# --- parsers on captured output -------------------------------------------------------------
def test_perf_bench_syscall():
    r = parse_syscall_basic(fixture_text("perf_bench_syscall_basic.txt"))
    assert r.calls == 1_000_000 and r.usec_per_op == pytest.approx(0.146702) and r.ops_per_s == 6816539


def test_perf_bench_memcpy_every_function_in_bytes():
    rs = parse_memcpy(fixture_text("perf_bench_memcpy_all.txt"))
    assert [r.function for r in rs] == ["default", "x86-64-unrolled", "x86-64-movsq", "x86-64-movsb"]
    assert rs[0].size == "1MB" and rs[0].bytes_per_s == pytest.approx(36.712876 * 2**30)
    assert parse_memcpy(fixture_text("perf_bench_memcpy_64KB.txt"))[0].size == "64KB"


def test_perf_bench_errors():
    with pytest.raises(ParseError, match="Unknown benchmark: 'nosuch'"):
        parse_syscall_basic(fixture_text("perf_bench_unknown.txt"))
    with pytest.raises(ParseError, match="no bandwidth"):
        parse_memcpy(fixture_text("perf_bench_syscall_basic.txt"))
    with pytest.raises(ParseError, match="usecs/op"):
        parse_syscall_basic(fixture_text("perf_bench_memcpy_all.txt"))


def test_udpbatch_output():
    s = parse_udpbatch(fixture_text("udpbatch_send_b32.txt"))
    assert (s.role, s.batch, s.size, s.calls) == ("send", 32, 18, 3064)
    assert s.pps == pytest.approx(97996 * 1e9 / 1301085414)
    assert s.ns_per_packet == pytest.approx(1301085414 / 97996)
    r = parse_udpbatch(fixture_text("udpbatch_recv_b1.txt"))
    assert r.role == "recv" and r.calls == r.packets and r.cpu_ns_per_packet == pytest.approx(180427695 / 99167)


@pytest.mark.parametrize("name, match", [("udpbatch_bad_batch.txt", "found 0.*--batch must be"),
                                         ("udpbatch_recv_no_packet.txt", "no packet within")])
def test_udpbatch_errors_are_named(name, match):
    with pytest.raises(ParseError, match=match):
        parse_udpbatch(fixture_text(name))


def test_udpbatch_rejects_incomplete_line():
    with pytest.raises(ParseError, match="lacks window_ns, cpu_ns"):
        parse_udpbatch("udpbatch role=send batch=1 size=18 packets=5 calls=5 errors=0\n")


def test_microbench_output():
    r = parse_microbench(fixture_text("microbench_skballoc.txt"))
    assert (r.bench, r.iterations, r.ns_per_op) == ("skballoc", 1_200_000, pytest.approx(303.781))
    with pytest.raises(ParseError, match="non-numeric"):
        parse_microbench("microbench bench=atomic iterations=x total_ns=1 ns_per_op=1\n")


def test_cpu_clock_from_cpuinfo():
    assert cpu_clock_mhz("processor\t: 0\ncpu MHz\t\t: 2596.098\n\nprocessor\t: 1\ncpu MHz\t\t: 2600.000\n") \
        == pytest.approx(2598.049)
    assert cpu_clock_mhz("processor\t: 0\n") is None


# --- the C tools ----------------------------------------------------------------------------
def test_no_compiler_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(native.NativeBuildError, match="no C compiler .cc or gcc not found.*install gcc"):
        native.ensure("udpbatch", FakeHost(name="bare", handlers={"test": lambda argv, h: (1, "", "")}))
    with pytest.raises(native.NativeBuildError, match="unknown native tool"):
        native.binary_name("nosuch")


def test_remote_build_goes_through_the_host_into_a_fresh_private_dir():
    """Nothing found on the remote host is trusted: each ensure() builds in a new mktemp -d
    directory (0700, the login user's), even when a binary of the same name exists elsewhere."""
    name = native.binary_name("udpbatch")
    dirs = iter(["/tmp/hostnet-native.aaaa1111", "/tmp/hostnet-native.bbbb2222"])
    compiled = []

    def cc(argv, host):
        compiled.append(argv)
        return 0, "", ""

    host = FakeHost(name="remote", files={f"/tmp/hostnet-native.{d}/{name}.c": "" for d in ("aaaa1111", "bbbb2222")},
                    handlers={"mktemp": lambda argv, h: (0, next(dirs) + "\n", ""), "cc": cc,
                              "test": lambda argv, h: (0, "", "")})  # "a binary is already there"
    first, second = native.ensure("udpbatch", host), native.ensure("udpbatch", host)
    assert (first, second) == (f"/tmp/hostnet-native.aaaa1111/{name}", f"/tmp/hostnet-native.bbbb2222/{name}")
    assert host.files[f"{first}.c"] == native.source("udpbatch")
    assert compiled == [native.compile_argv("cc", f"{p}.c", p) for p in (first, second)]
    assert [c[0] for c in host.commands] == ["mktemp", "cc", "mktemp", "cc"]
    assert host.commands[0] == ["mktemp", "-d", native.REMOTE_TEMPLATE]
    odd = FakeHost(name="odd", handlers={"mktemp": lambda argv, h: (0, "\n", ""), "cc": cc})
    with pytest.raises(native.NativeBuildError, match="mktemp -d gave"):
        native.ensure("udpbatch", odd)


@pytest.fixture(scope="module")
def tools():
    try:
        return {t: native.ensure(t) for t in native.TOOLS}
    except native.NativeBuildError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("args, message", [
    ([], "missing role"),
    (["listen"], "role must be send or recv: listen"),
    (["send", "--port", "9"], "--dst is required"),
    (["send", "--dst", "198.18.0.2", "--port", "9", "--batch", "0", "--size", "18", "--seconds", "1"],
     "--batch must be an integer in 1..1024: 0"),
    (["send", "--dst", "198.18.0.2", "--port", "70000"], "--port must be an integer in 1..65535"),
    (["recv", "--bind", "198.18.0.2", "--port", "9", "--batch", "4", "--seconds", "soon"], "--seconds must be"),
    (["recv", "--bind", "198.18.0.2", "--size", "5"], "unknown option: --size"),
    (["send", "--dst", "not-an-ip", "--port", "9", "--batch", "1", "--size", "18", "--seconds", "1"],
     "not an IPv4 address"),
])
def test_udpbatch_argument_errors(tools, args, message):
    p = subprocess.run([tools["udpbatch"], *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and message in p.stderr and "usage: udpbatch" in p.stderr


def test_microbench_runs_and_refuses_unknown(tools):
    p = subprocess.run([tools["microbench"], "atomic", "--iterations", "100000"], capture_output=True, text=True)
    r = parse_microbench(p.stdout)
    assert r.bench == "atomic" and r.iterations == 100_000 and r.ns_per_op > 0
    p = subprocess.run([tools["microbench"], "nosuch"], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown benchmark: nosuch" in p.stderr


def test_malloc256_times_the_iterations_it_reports(tools):
    """It frees in rounds of 256: 1000 asked runs 1024, and ns_per_op divides by 1024."""
    p = subprocess.run([tools["microbench"], "malloc256", "--iterations", "1000"], capture_output=True, text=True)
    r = parse_microbench(p.stdout)
    assert r.iterations == 1024 and r.ns_per_op == pytest.approx(r.total_ns / 1024, abs=1e-3)


def test_udpbatch_over_loopback(tools):
    """Loopback only: one short exchange, parsed as the notebook would."""
    recv = subprocess.Popen(recv_argv(tools["udpbatch"], "127.0.0.1", 8, 0.3, 0.1, 0, port=39300),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_bound(39300)
        send = subprocess.run(send_argv(tools["udpbatch"], "127.0.0.1", 8, 18, 0.3, 0.1, 0, port=39300),
                              capture_output=True, text=True, timeout=10)
        out, err = recv.communicate(timeout=10)
    finally:
        recv.kill()
    s, r = parse_udpbatch(send.stdout), parse_udpbatch(out)
    assert s.batch == r.batch == 8 and r.size == 18 and s.packets > 0 and r.packets > 0
    assert s.calls * 8 >= s.packets


def _wait_bound(port: int, timeout: float = 5.0) -> None:
    """Until a UDP socket is bound to the port on this machine (/proc/net/udp, hex port)."""
    import time
    deadline = time.monotonic() + timeout
    needle = f":{port:04X} "
    while needle not in open("/proc/net/udp").read():
        assert time.monotonic() < deadline, f"nothing bound to UDP port {port}"
        time.sleep(0.02)


# --- the section on the recorded campaign -----------------------------------------------------
@pytest.fixture(scope="module")
def recorded():
    micro, batch, manifests, only_flagged = time_budget.load(RUNS, CAMPAIGN)
    assert only_flagged == []
    return micro, batch, manifests


def test_recorded_campaign_tables(recorded):
    micro, batch, _ = recorded
    costs, summary = time_budget.cost_table(micro), time_budget.batch_table(batch)
    assert {"syscall_perf", "atomic", "spinlock", "malloc", "skballoc"} <= set(costs.cost)
    assert (costs.min_ns <= costs.median_ns).all() and (costs.median_ns <= costs.max_ns).all()
    assert set(summary.side) == {"sender", "receiver"}
    assert summary[summary.batch == 1].speedup.tolist() == [1.0, 1.0]
    assert set(time_budget.copy_table(micro).buffer) == {"64KB", "1MB", "64MB"}
    mhz, source = time_budget.clock_mhz(micro)
    assert source == "proc_cpuinfo" and 500 < mhz < 6000


def test_recorded_campaign_verdicts(recorded):
    micro, batch, _ = recorded
    mhz, _ = time_budget.clock_mhz(micro)
    v = time_budget.verdict_table(time_budget.cost_table(micro), time_budget.batch_table(batch), mhz, REF)
    assert v.id.tolist() == ["F18", "F19", "F20"]
    v = v.set_index("id")
    # as docs/time-budget.md reports them
    assert v.verdict.to_dict() == {"F18": REPRODUCED, "F19": INCONCLUSIVE, "F20": NOT_TESTABLE}
    assert "123.04 ns" in v.loc["F18", "this run shows"]
    assert "fewer than two clean runs" in v.loc["F19", "this run shows"]
    assert "Context only" in v.loc["F20", "this run shows"] and "32 ns" in v.loc["F20", "this run shows"]


def test_flatten_point_and_speedup():
    s = pd.DataFrame({"side": ["sender"] * 4, "batch": [1, 2, 4, 8], "pps_median": [100.0, 180.0, 240.0, 250.0]})
    s["speedup"] = s.pps_median / 100
    assert time_budget.flattens_at(s) == 4  # 240 >= 0.9 * 250
    assert time_budget.speedup(s, 8) == 2.5
    assert time_budget.flattens_at(s, "receiver") is None


def _f18_with(quantity, printed, mhz=2600.0):
    ref = time_budget.talk_numbers(REF)
    ref.loc[ref.quantity == quantity, "value"] = printed
    return time_budget._f18(time_budget.load_findings(REF).set_index("id"), ref, mhz)


def test_f18_fails_against_wrong_reference():
    assert _f18_with("interval_1538B_100G_ns", "120.0")["verdict"] == "not reproduced"


def test_f18_tolerance_is_half_of_each_printed_digit():
    """14.88 Mpps is printed to 0.01: 14.90 is off by more than 0.005 and must fail, though it is
    within the 0.05 of one-decimal quantities such as 67.2 ns."""
    assert [time_budget.half_last_digit(t) for t in ("14.88", "123.0", "815", 67.2)] == [0.005, 0.05, 0.5, 0.05]
    assert _f18_with("mpps_84B_10G", "14.88")["verdict"] == "reproduced"
    assert _f18_with("mpps_84B_10G", "14.90")["verdict"] == "not reproduced"
    assert _f18_with("interval_84B_10G_ns", "67.3")["verdict"] == "not reproduced"


def test_no_cpu_clock_leaves_cycles_out():
    """arm64 /proc/cpuinfo has no 'cpu MHz': no cycles anywhere, said to be unsupported."""
    micro = pd.DataFrame({"metric": ["cost_ns"], "category": ["atomic"], "value": [5.0]})
    mhz, source = time_budget.clock_mhz(micro)
    assert mhz is None and source.startswith("unsupported")
    table = time_budget.budget_table(mhz)
    assert "cycles" not in table.columns
    assert time_budget.budget_pivot(table, "cycles").iloc[0, 0].startswith("unsupported")
    assert len(time_budget.budget_pivot(table, "interval_ns")) == len(budget.FRAME_BYTES)
    f18 = _f18_with("mpps_84B_10G", "14.88", mhz=None)
    assert f18["verdict"] == "reproduced" and "cycles at this host's clock: unsupported" in f18["this run shows"]


def _f19_inputs():
    """Sender CPU per packet clearly lower at batch 32 than at 1 (ranges apart, 3 runs each)."""
    costs = pd.DataFrame([{"cost": "syscall_perf", "median_ns": 100.0, "min_ns": 95.0, "max_ns": 105.0}])
    batches = pd.DataFrame([
        {"side": "sender", "batch": 1, "cpu_ns_per_pkt": 1000.0, "cpu_ns_min": 990.0, "cpu_ns_max": 1010.0,
         "pps_median": 1e6, "speedup": 1.0, "repetitions": 3},
        {"side": "sender", "batch": 32, "cpu_ns_per_pkt": 900.0, "cpu_ns_min": 890.0, "cpu_ns_max": 910.0,
         "pps_median": 1.1e6, "speedup": 1.1, "repetitions": 3}])
    return costs, batches


def test_f19_on_flagged_runs_is_inconclusive_and_says_so():
    costs, batches = _f19_inputs()
    clean = time_budget.verdict_table(costs, batches, 2600.0, REF).set_index("id").loc["F19"]
    assert clean.verdict == REPRODUCED
    flagged = time_budget.verdict_table(costs, batches, 2600.0, REF, flagged=[time_budget.BATCH_EXPERIMENT])
    row = flagged.set_index("id").loc["F19"]
    assert row.verdict == INCONCLUSIVE and "flagged for foreign load" in row["this run shows"]
    micro_only = time_budget.verdict_table(costs, batches, 2600.0, REF, flagged=[time_budget.MICRO_EXPERIMENT])
    row = micro_only.set_index("id").loc["F19"]
    assert row.verdict == REPRODUCED and "system-call cost comes from runs flagged" in row["this run shows"]


def test_f20_is_not_testable_with_a_user_space_stand_in():
    costs = pd.DataFrame([{"cost": "skballoc", "median_ns": 20.0, "min_ns": 19.0, "max_ns": 21.0}])
    row = time_budget.verdict_table(costs, pd.DataFrame(), 2600.0, REF).set_index("id").loc["F20"]
    assert row.verdict == NOT_TESTABLE and "Context only" in row["this run shows"] and "20 ns" in row["this run shows"]


class _Testbed:
    def describe(self):
        return {"kind": "fake"}


def test_a_host_without_perf_records_it_unsupported_and_still_measures(tmp_path):
    """No perf: the versions say unsupported, the perf benches are recorded unsupported, hostnet's
    own microbenchmarks still give costs (and batch_run's _versions no longer raises)."""
    def microbench(argv, h):
        return 0, f"microbench bench={argv[1]} iterations={argv[3]} total_ns=5000000 ns_per_op=5.000\n", ""

    host = FakeHost(name="noperf", files={"/proc/cpuinfo": "processor\t: 0\n"}, handlers={
        "uname": lambda argv, h: (0, "6.1.0-test\n", ""), "cc": lambda argv, h: (0, "cc (Debian) 12.2.0\n", ""),
        "sh": lambda argv, h: (0, "", ""), "getconf": lambda argv, h: (0, "100\n", ""), "/x/microbench": microbench})
    versions = time_budget_run._versions(host)["local"]
    assert versions["perf"].startswith("unsupported") and versions["cc"] == "cc (Debian) 12.2.0"
    run = time_budget_run.micro_run(host, _Testbed(), "/x/microbench", runs_dir=tmp_path, campaign="c", repetition=0)
    m = store.load_manifest(run)
    assert m["status"] == "ok" and m["versions"]["local"]["perf"].startswith("unsupported")
    assert m["unsupported"]["syscall_perf"] == "perf is not installed"
    assert {"memcpy_64KB", "memcpy_1MB", "memcpy_64MB", "cpu_clock"} <= set(m["unsupported"])
    tidy = pd.read_csv(run / "tidy.csv")
    assert set(tidy[tidy.metric == "cost_ns"].category) == set(time_budget_run.MICROBENCHES)
    assert not any(c[0] == "taskset" for c in host.commands)  # perf was never run


def test_all_flagged_experiment_is_shown_and_named(tmp_path):
    """A quick live run on a busy machine: every micro run flagged -> shown anyway, and named."""
    import json
    import shutil
    src = RUNS / CAMPAIGN
    for run in src.iterdir():
        shutil.copytree(run, tmp_path / "c" / run.name)
    for run in (tmp_path / "c").iterdir():
        m = json.loads((run / "manifest.json").read_text())
        if m["experiment"] == "time-budget-micro":
            m["contaminated"] = True
            (run / "manifest.json").write_text(json.dumps(m))
    micro, batch, _, only_flagged = time_budget.load(tmp_path, "c")
    assert only_flagged == ["time-budget-micro"] and not micro.empty and not batch.empty
    v = time_budget.verdict_table(time_budget.cost_table(micro), time_budget.batch_table(batch),
                                  time_budget.clock_mhz(micro)[0], REF, flagged=only_flagged).set_index("id")
    assert "system-call cost comes from runs flagged" in v.loc["F19", "this run shows"]
