"""The time budget's benches (hostnet.measure.benches) through the runner, on fake hosts: the CPU
clock from /proc/cpuinfo, a host without perf (recorded unsupported, hostnet's own
microbenchmarks still run), and a batching point whose receiver dies (a failed run directory
with the tool's argv and output)."""
import pandas as pd
import pytest

from conftest import FakeHost, RecordingJournal, fixture_text
from hostnet import store
from hostnet.measure import benches, config as stackconfig, runner
from hostnet.measure.benches import Microbenchmarks, UdpBatch, cpu_clock_mhz
from hostnet.testbed import Endpoint, Testbed


def test_cpu_clock_from_cpuinfo():
    assert cpu_clock_mhz("processor\t: 0\ncpu MHz\t\t: 2596.098\n\nprocessor\t: 1\ncpu MHz\t\t: 2600.000\n") \
        == pytest.approx(2598.049)
    assert cpu_clock_mhz("processor\t: 0\n") is None


class _Proc:
    """A process that exits at once with an error, as a udpbatch that cannot bind does."""
    pid = 4242

    def __init__(self, argv):
        self.argv, self.closed = argv, False

    def poll(self):
        return 1

    def stdout(self):
        return ""

    def stderr(self):
        return "udpbatch: bind: Address already in use\n"

    def stop(self, *a):
        return 1

    def close(self):
        self.closed = True


class _StartingHost(FakeHost):
    def start(self, argv, **kw):
        self.started = _Proc(argv)
        return self.started


def _testbed(host) -> Testbed:
    eps = {"sender": Endpoint("sender", host, "veth0", "198.18.0.1", [0], "m"),
           "receiver": Endpoint("receiver", host, "veth1", "198.18.0.2", [1], "m")}
    return Testbed("fake", "servers", eps, {"m": host}, RecordingJournal())


def _request(tmp_path, workload, experiment):
    return runner.RunRequest(stackconfig.get_config("no-opts"), workload, tmp_path, "c", experiment=experiment,
                             run_id="p-r0", versions={"m": {"kernel": "6.1.0-test", "perf": "unsupported"}})


@pytest.fixture
def no_apply(monkeypatch):
    """The point's config is applied through the journaled knobs, tested elsewhere: here nothing."""
    monkeypatch.setattr(stackconfig, "apply", lambda tb, cfg: {})


def test_a_host_without_perf_records_it_unsupported_and_still_measures(tmp_path, no_apply):
    def microbench(argv, h):
        return 0, f"microbench bench={argv[1]} iterations={argv[3]} total_ns=5000000 ns_per_op=5.000\n", ""

    host = FakeHost(name="noperf", files={"/proc/cpuinfo": "processor\t: 0\n"}, handlers={
        "sh": lambda argv, h: (0, fixture_text("pids_before.txt"), ""),  # the load probe's process snapshot
        "getconf": lambda argv, h: (0, "100\n", ""), "/x/microbench": microbench})
    workload = Microbenchmarks(binaries=(("receiver", "/x/microbench"),))
    run = runner.run_point(_testbed(host), _request(tmp_path, workload, benches.MICRO_EXPERIMENT))
    m = store.load_manifest(run)
    assert m["status"] == "ok" and m["experiment"] == "time-budget-micro"
    assert m["unsupported"]["syscall_perf"] == "perf is not installed"
    assert {"memcpy_64KB", "memcpy_1MB", "memcpy_64MB", "cpu_clock"} <= set(m["unsupported"])
    assert m["placement"] == {"machine": "m", "cpu": 1} and m["workload"]["kind"] == "microbench"
    assert m["window"]["seconds"] >= 0 and m["contaminated"] is False
    tidy = pd.read_csv(run / "tidy.csv")
    assert set(tidy[tidy.metric == "cost_ns"].category) == set(benches.MICROBENCHES)
    assert tidy.metric.iloc[-1] == "foreign_cpu_pct"  # the window's row comes last, as it always has
    assert not any(c[0] == "taskset" for c in host.commands)  # perf was never run
    assert ["/x/microbench", "atomic", "--iterations", "30000000", "--cpu", "1"] in host.commands
    assert {"pids_before.txt", "clk_tck.txt", "microbench_atomic.txt"} <= set(store.raw_names(run))


def test_a_batching_point_whose_receiver_dies_leaves_a_failed_run_with_its_argv_and_output(tmp_path, no_apply):
    snmp = "Udp: InDatagrams RcvbufErrors\nUdp: 0 0\n"
    host = _StartingHost(name="m", files={"/proc/net/snmp": snmp}, handlers={
        "ss": lambda argv, h: (0, "", "")})
    workload = UdpBatch(32, 2, 1, binaries=(("sender", "/x/udpbatch"), ("receiver", "/x/udpbatch")))
    with pytest.raises(runner.RunFailed, match="udpbatch recv exited at start: udpbatch: bind"):
        runner.run_point(_testbed(host), _request(tmp_path, workload, benches.BATCH_EXPERIMENT))
    run = tmp_path / "c" / "p-r0"
    m = store.load_manifest(run)
    assert m["status"] == "failed" and m["experiment"] == "udp-batch"
    assert m["workload"] == {"kind": "udp_batch", "tool": "udpbatch", "duration_s": 2, "warmup_s": 1,
                             "frame_bytes": 64}
    out = store.raw_text(run, "udpbatch0.output.txt")
    assert out.startswith("/x/udpbatch recv --bind 198.18.0.2 --port 9300 --batch 32") and "Address already" in out
    assert host.started.closed  # nothing it started outlives the run
