"""A flow's steadiness (metrics.steadiness_cv) counts whole seconds inside the measurement window:
iperf3 3.12's ~60 us report at the end of its warm-up, a rate of a few segments, flagged 292 of 744
stored runs unsteady on its own (docs/measurement.md). On a captured iperf3 report and a stored run."""
import json
import shutil

import pytest

from conftest import FIXTURES, REPO
from hostnet import store
from hostnet.analysis import metrics
from hostnet.derive import tidy
from hostnet.derive.patterns import Flow
from hostnet.derive.workloads import LongFlows
from hostnet.parsers.iperf3 import parse_iperf3

STUB = (FIXTURES / "iperf3_omit_stub.json").read_text()
# the run's window on iperf3's interval clock (seconds from the end of the warm-up), from its manifest
WINDOW = (0.0298, 4.599)


def _old_cv(rates):
    mean = sum(rates) / len(rates)
    return 100 * (sum((x - mean) ** 2 for x in rates) / (len(rates) - 1)) ** 0.5 / mean


def test_the_warm_up_stub_alone_made_the_flow_unsteady_and_whole_seconds_do_not():
    r = parse_iperf3(STUB, "iperf3_omit_stub.json")
    stub = r.intervals[0]
    assert stub[1] - stub[0] < 0.001 and all(e - s > 0.99 for s, e, _ in r.intervals[1:])
    assert _old_cv(r.interval_bps) > metrics.STEADY_CV_LIMIT_PCT  # the earlier rule: every interval
    whole = [bps for s, e, bps in r.intervals[1:]]
    assert metrics.steadiness_cv(r.intervals) == pytest.approx(_old_cv(whole))
    assert metrics.steadiness_cv(r.intervals) < metrics.STEADY_CV_LIMIT_PCT


def test_only_seconds_mostly_inside_the_window_count():
    r = parse_iperf3(STUB, "iperf3_omit_stub.json")
    # [4, 5] has 0.6 s in the window: out; [1, 2], [2, 3], [3, 4] in
    inside = [bps for s, e, bps in r.intervals if e - s > 0.5 and s >= 1 and e <= 4.01]
    assert metrics.steadiness_cv(r.intervals, WINDOW) == pytest.approx(_old_cv(inside))
    assert metrics.steadiness_cv(r.intervals, (0.0, 2.5)) is None  # one whole second: not judged
    out = LongFlows(5, 2).parse_client(STUB, "iperf3_omit_stub.json", window=(0.0, 2.5))
    assert "throughput_cv_pct" not in out and out["throughput_gbps"] > 0


def test_the_window_on_the_flow_clock_starts_at_the_end_of_the_flow_warm_up():
    m = {"window": {"start": 102.03, "end": 106.6, "flow_starts": {"0": {"sent": 99.99, "returned": 100.0}}}}
    flow = Flow(0, "sender", 0, "receiver", 1, 5201)
    assert tidy.flow_window(m, flow, 2) == pytest.approx((0.03, 4.6))
    assert tidy.flow_window({}, flow, 2) is None and tidy.flow_window(None, flow, 2) is None


def test_rederiving_a_stored_run_under_the_new_rule_clears_the_stub_flag(tmp_path):
    src = REPO / "data/runs/20261127-232153-single-flow-embedded/141ad8aee6ec-r2"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    m = json.loads((run / "manifest.json").read_text())
    m.pop("steady_rule", None)
    m["unsteady"] = True  # what the earlier rule said of this run
    (run / "manifest.json").write_text(json.dumps(m))
    assert tidy.rederive(run)
    after = store.load_manifest(run)
    assert after["unsteady"] is False and after["steady_rule"] == metrics.STEADY_RULE
    assert after["rederived"][-1]["steady_rule"] is None
    cv = store.read_tidy(run).query("metric == 'flow_throughput_cv_pct'").value
    assert len(cv) == 1 and cv.iloc[0] < metrics.STEADY_CV_LIMIT_PCT
    assert not tidy.rederive(run)
