"""hostnet.patterns: the tables and verdicts of the traffic-pattern notebooks, on small tidy frames."""
import math

import pandas as pd
import pytest

from conftest import REPO
from hostnet.sections import patterns
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

REF = REPO / "data" / "reference"


def tidy_frame(points: dict, cores=(1, 1)) -> pd.DataFrame:
    """points: {n: [(throughput, sender_cpu, receiver_cpu, {side: {category: pct}}), ...]} -> tidy rows;
    CPU is summed over the side's `cores` (sender, receiver), as the runner writes it."""
    rows = []
    for n, reps in points.items():
        for k, (gbps, snd, rcv, shares) in enumerate(reps):
            def add(side, metric, value, category="", run=f"n{n}-r{k}", n=n):
                rows.append({"run_id": run, "flows": n, "side": side, "metric": metric, "category": category,
                             "value": value})
            add("both", "throughput_gbps", gbps)
            add("both", "tpc_gbps", gbps / (max(snd, rcv) / 100))
            add("both", "flow_count", n)
            for side, cpu, c in (("sender", snd, cores[0]), ("receiver", rcv, cores[1])):
                add(side, "cpu_util_pct", cpu)
                add(side, "cores_count", c)
                for cat, pct in shares.get(side, {}).items():
                    add(side, "breakdown_attributed_pct", pct, cat)
    return pd.DataFrame(rows)


COPY_FIRST = {"sender": {"data_copy": 50, "tcp/ip": 30, "etc": 20},
              "receiver": {"data_copy": 60, "netdev": 30, "sched": 10}}
NETDEV_FIRST = {"sender": {"data_copy": 20, "netdev": 60, "etc": 20},
                "receiver": {"data_copy": 30, "netdev": 40, "sched": 30}}


def test_table_means_cis_and_bottleneck():
    t = patterns.table(tidy_frame({1: [(30, 80, 90, {}), (32, 80, 92, {}), (31, 82, 91, {})],
                                   4: [(20, 100, 95, {})]}))
    one, four = t.set_index("flows").loc[1], t.set_index("flows").loc[4]
    assert one.throughput_gbps == pytest.approx(31) and one.throughput_gbps_ci95 == pytest.approx(2.484, abs=1e-3)
    assert one.bottleneck == "receiver" and one.repetitions == 3 and one.flow_count == 1
    assert four.bottleneck == "sender" and math.isnan(four.tpc_gbps_ci95)  # one repetition: no CI
    assert four.tpc_gbps == pytest.approx(20)
    shown = patterns.display_table(t).set_index("n")
    assert shown.loc[1, "throughput (Gbit/s)"] == "31.0 ± 2.5" and shown.loc[4, "tpc (Gbit/s)"] == "20.0"


def test_breakdown_is_a_mean_per_side_and_n_in_category_order():
    bd = patterns.breakdown(tidy_frame({1: [(30, 80, 90, COPY_FIRST), (30, 80, 90, NETDEV_FIRST)]}))
    rcv = bd[bd.side == "receiver"].set_index("category").pct
    assert rcv["data_copy"] == 45 and rcv["netdev"] == 35
    assert list(bd.category[bd.side == "sender"]) == ["data_copy", "tcp/ip", "netdev", "etc"]
    wide = patterns.breakdown_table(bd)
    assert list(wide.columns) == ["side", "category", "n=1"]
    assert set(bd.metric) == {"breakdown_attributed_pct"}


def verdicts(points, pattern="incast", config="all-opts"):
    tidy = tidy_frame(points)
    return patterns.verdict_table(patterns.table(tidy), patterns.breakdown(tidy), pattern, REF,
                                  config).set_index("id")


def test_tpc_falling_beyond_the_cis_with_the_receiver_busier_and_copy_first_is_reproduced():
    v = verdicts({1: [(30, 80, 95, COPY_FIRST), (31, 81, 96, COPY_FIRST), (29, 80, 95, COPY_FIRST)],
                  8: [(15, 80, 99, COPY_FIRST), (16, 81, 99, COPY_FIRST), (15, 80, 98, COPY_FIRST)]})
    assert v.loc["F09", "verdict"] == REPRODUCED and "8 per receiver core" in v.loc["F09", "this run shows"]
    assert v.loc["F04", "verdict"] == REPRODUCED and "n=8: sender 80% < receiver 99%" in v.loc["F04", "this run shows"]
    assert v.loc["F05", "verdict"] == REPRODUCED


def test_tpc_rising_sender_busier_and_netdev_first_is_not_reproduced():
    v = verdicts({1: [(15, 99, 80, NETDEV_FIRST), (16, 99, 81, NETDEV_FIRST), (15, 98, 80, NETDEV_FIRST)],
                  8: [(30, 99, 80, COPY_FIRST), (31, 99, 81, COPY_FIRST), (29, 98, 80, COPY_FIRST)]})
    assert v.loc["F09", "verdict"] == NOT_REPRODUCED
    assert v.loc["F04", "verdict"] == NOT_REPRODUCED
    assert v.loc["F05", "verdict"] == NOT_REPRODUCED and "n=1 netdev 60%" in v.loc["F05", "this run shows"]


def test_changes_within_the_noise_are_inconclusive():
    # tpc falls 10 % but the repetitions spread wider; both sides saturated
    v = verdicts({1: [(30, 100, 100, COPY_FIRST), (20, 100, 99, COPY_FIRST), (40, 99, 100, COPY_FIRST)],
                  8: [(27, 100, 100, COPY_FIRST), (17, 100, 100, COPY_FIRST), (37, 100, 99, COPY_FIRST)]})
    assert v.loc["F09", "verdict"] == INCONCLUSIVE and "within the 95 % CIs" in v.loc["F09", "this run shows"]
    assert v.loc["F04", "verdict"] == INCONCLUSIVE


def test_a_single_clean_repetition_decides_nothing():
    v = verdicts({1: [(30, 80, 95, COPY_FIRST)], 8: [(10, 80, 99, COPY_FIRST)]})
    assert v.loc["F09", "verdict"] == INCONCLUSIVE and v.loc["F04", "verdict"] == INCONCLUSIVE


def test_bottleneck_is_judged_per_core():
    """4 sender cores at 60 % each (240 % summed) feeding one receiver core at 95 %: the receiver is the
    busier core, though the senders' summed CPU is larger."""
    tidy = tidy_frame({4: [(30, 240, 95, {}), (31, 244, 96, {}), (30, 236, 95, {})]}, cores=(4, 1))
    t = patterns.table(tidy).set_index("flows").loc[4]
    assert t.sender_cpu_per_core_pct == pytest.approx(60) and t.bottleneck == "receiver"
    v = patterns.verdict_table(patterns.table(tidy), patterns.breakdown(tidy), "incast", REF).set_index("id")
    assert v.loc["F04", "verdict"] == REPRODUCED and "n=4: sender 60% < receiver 95%" in v.loc["F04", "this run shows"]


def test_outcast_has_no_tpc_or_receiver_bottleneck_finding_and_f05_needs_all_opts():
    v = verdicts({1: [(30, 80, 95, COPY_FIRST)] * 2, 8: [(10, 80, 99, COPY_FIRST)] * 2}, "outcast", "tsogro")
    assert list(v.index) == ["F05"]
    assert v.loc["F05", "verdict"] == INCONCLUSIVE and "ran tsogro" in v.loc["F05", "this run shows"]


def test_breakdown_shift_names_the_largest_moves():
    shift = patterns.breakdown_shift(patterns.breakdown(tidy_frame(
        {1: [(30, 80, 95, COPY_FIRST)], 4: [(30, 80, 95, NETDEV_FIRST)]})), top=1)
    rcv = shift[shift.side == "receiver"].iloc[0]
    assert rcv.category == "data_copy" and rcv.change_points == -30 and rcv["n=1_pct"] == 60


def test_hosts_per_side_follow_the_pattern():
    assert patterns.hosts_per_side("incast", 4) == (4, 1)
    assert patterns.hosts_per_side("outcast", 4) == (1, 4)
    assert patterns.hosts_per_side("all-to-all", 16) == (9, 9)
    with pytest.raises(ValueError, match="one of"):
        patterns.collect("replay", "fan-in", runs_dir=REPO)
    with pytest.raises(ValueError, match="mode must be"):
        patterns.collect("live", "incast", runs_dir=REPO)


def test_run_mode_takes_a_testbed_file_or_the_name_of_one_that_is_up(tmp_path, state_dir):
    from hostnet.testbed.servers import TestbedFileError
    from hostnet.testbed import TestbedError
    with pytest.raises(TestbedFileError, match="nope.yaml: cannot read"):
        patterns.collect("run", "incast", runs_dir=tmp_path, testbed_name=str(tmp_path / "nope.yaml"))
    with pytest.raises(TestbedError, match="no testbed 'nosuchtb' is up"):
        patterns.collect("run", "incast", runs_dir=tmp_path, testbed_name="nosuchtb")
    assert not list(tmp_path.glob("*/sweep.json"))  # refused before a campaign began


@pytest.mark.parametrize("pattern", list(patterns.PATTERNS))
def test_recorded_campaign_keeps_a_clean_run_at_every_n(pattern):
    runs = REPO / "data" / "runs"
    campaign = f"20261123-{pattern}-embedded"
    tidy, manifests = patterns.load(runs, campaign, pattern)
    q = patterns.point_quality(manifests)
    assert list(q.flows) == list(patterns.PATTERNS[pattern].flows) and (q.clean >= 1).all(), q
    t = patterns.table(tidy)
    assert list(t.flows) == list(q.flows) and (t.tpc_gbps > 0).all()
    expect = [n * n if pattern == "all-to-all" else n for n in t.flows]
    assert list(t.flow_count) == expect
    assert not patterns.verdict_table(t, patterns.breakdown(tidy), pattern, REF).empty
