"""Running the time-budget experiments (hostnet.sections.time_budget.run): the CPU clock from
/proc/cpuinfo, and a host without perf (recorded unsupported, hostnet's own microbenchmarks still run)."""
import json

import pandas as pd
import pytest

from conftest import FakeHost, fixture_text
from hostnet.measure.options import LiveOptions
from hostnet import store
from hostnet.sections.time_budget import run as time_budget_run
from hostnet.sections.time_budget.run import cpu_clock_mhz


def test_cpu_clock_from_cpuinfo():
    assert cpu_clock_mhz("processor\t: 0\ncpu MHz\t\t: 2596.098\n\nprocessor\t: 1\ncpu MHz\t\t: 2600.000\n") \
        == pytest.approx(2598.049)
    assert cpu_clock_mhz("processor\t: 0\n") is None


class _Testbed:
    def describe(self):
        return {"kind": "fake"}


def test_a_host_without_perf_records_it_unsupported_and_still_measures(tmp_path):
    """No perf: the versions say unsupported, the perf benches are recorded unsupported, hostnet's
    own microbenchmarks still give costs (and batch_run's tool_versions no longer raises)."""
    def microbench(argv, h):
        return 0, f"microbench bench={argv[1]} iterations={argv[3]} total_ns=5000000 ns_per_op=5.000\n", ""

    host = FakeHost(name="noperf", files={"/proc/cpuinfo": "processor\t: 0\n"}, handlers={
        "uname": lambda argv, h: (0, "6.1.0-test\n", ""), "cc": lambda argv, h: (0, "cc (Debian) 12.2.0\n", ""),
        "sh": lambda argv, h: (0, fixture_text("pids_before.txt"), ""),  # the load probe's process snapshot
        "getconf": lambda argv, h: (0, "100\n", ""), "/x/microbench": microbench})
    versions = time_budget_run.tool_versions(host)["local"]
    assert versions["perf"].startswith("unsupported") and versions["cc"] == "cc (Debian) 12.2.0"
    run = time_budget_run.micro_run(host, _Testbed(), "/x/microbench", runs_dir=tmp_path, campaign="c", repetition=0)
    m = store.load_manifest(run)
    assert m["status"] == "ok" and m["versions"]["local"]["perf"].startswith("unsupported")
    assert m["unsupported"]["syscall_perf"] == "perf is not installed"
    assert {"memcpy_64KB", "memcpy_1MB", "memcpy_64MB", "cpu_clock"} <= set(m["unsupported"])
    tidy = pd.read_csv(run / "tidy.csv")
    assert set(tidy[tidy.metric == "cost_ns"].category) == set(time_budget_run.MICROBENCHES)
    assert not any(c[0] == "taskset" for c in host.commands)  # perf was never run


def test_top_up_repeats_the_batch_sizes_f19_names_until_decided_and_records_it(tmp_path, monkeypatch):
    """The decisive top-up on a fake batching point and a fake judge: two undecided rounds naming
    batch 1 and 32, then decided; repetitions continue after those already made; the log is written."""
    import hostnet.sections.time_budget as tb_section

    (tmp_path / "c").mkdir()
    made = []
    answers = iter([{"F19": [{"batch": 1}, {"batch": 32}]}, {"F19": [{"batch": 32}]}, {}])

    def judge(runs_dir, campaign, reference_dir):
        out = pd.DataFrame({"id": ["F19"]})
        out.attrs["top_up"] = next(answers)
        return out
    monkeypatch.setattr(tb_section, "judge", judge)
    log = time_budget_run.top_up(tmp_path, "c", lambda b, rep: made.append((b, rep)), first_repetition=8,
                                 live=LiveOptions(top_up_runs=10))
    assert made == [(1, 8), (32, 8), (32, 9)]
    assert (log.rounds, log.runs) == (2, 3) and log.stopped.startswith("no verdict asks")
    record = json.loads((tmp_path / "c" / time_budget_run.TOP_UPS_FILE).read_text())
    assert record[-1]["runs"] == 3 and record[-1]["budget"]["runs"] == 10


def test_top_up_stops_at_the_budget(tmp_path, monkeypatch):
    import hostnet.sections.time_budget as tb_section

    (tmp_path / "c").mkdir()

    def judge(runs_dir, campaign, reference_dir):  # never decided
        out = pd.DataFrame({"id": ["F19"]})
        out.attrs["top_up"] = {"F19": [{"batch": 1}, {"batch": 32}]}
        return out
    monkeypatch.setattr(tb_section, "judge", judge)
    made = []
    log = time_budget_run.top_up(tmp_path, "c", lambda b, rep: made.append(b), first_repetition=3,
                                 live=LiveOptions(top_up_runs=5))
    assert len(made) == 4 and log.stopped.startswith("budget: 5 runs")
