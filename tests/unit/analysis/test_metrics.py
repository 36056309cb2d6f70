"""hostnet.analysis.metrics: throughput per core, the leaf breakdown, foreign load, summaries and
confidence intervals."""
import math

import pandas as pd
import pytest

from conftest import fixture_text
from hostnet.analysis import metrics
from hostnet.parsers.perf_report import SymbolSamples
from hostnet.parsers import ParseError
from hostnet.parsers.procpids import parse_snapshot
from hostnet.taxonomy import load


def test_tpc_uses_the_busier_side():
    assert metrics.throughput_per_core(30.0, {"sender": 60.0, "receiver": 150.0}) == ("receiver", 20.0)
    side, tpc = metrics.throughput_per_core(10.0, {"sender": 0.0, "receiver": 0.0})
    assert math.isnan(tpc)


def test_breakdown_excludes_idle_and_foreign_processes():
    rows = [SymbolSamples(1, "iperf3", "_copy_to_iter", True, 60),
            SymbolSamples(1, "ksoftirqd/1", "tcp_v4_rcv", True, 30),
            SymbolSamples(1, "swapper", "pv_native_safe_halt", True, 500),
            SymbolSamples(1, "cc1", "clear_page_erms", True, 70),
            SymbolSamples(1, "iperf3", "main", False, 10),
            SymbolSamples(0, "iperf3", "_copy_from_iter", True, 999)]
    b = metrics.breakdown(rows, [1], load(), ["iperf3"])
    assert b["busy_samples"] == 100 and b["idle_samples"] == 500 and b["foreign_samples"] == 70
    assert b["pct"]["data_copy"] == pytest.approx(60.0)
    assert b["pct"]["tcp/ip"] == pytest.approx(30.0)
    assert b["pct"]["user"] == pytest.approx(10.0)
    assert b["top_symbols"][0][:2] == ("_copy_to_iter", "data_copy")


def test_foreign_load_from_captured_snapshots():
    before = parse_snapshot(fixture_text("pids_before.txt"))
    after = parse_snapshot(fixture_text("pids_after.txt"))
    everything = metrics.foreign_load(before, after, [], 100, 3.0)
    assert everything["foreign_cpu_pct"] >= 0
    all_pids = list(after)
    assert metrics.foreign_load(before, after, all_pids, 100, 3.0)["foreign_cpu_pct"] == 0


def test_foreign_load_flags_contamination():
    before = {10: ("cc1", 1, 0), 11: ("iperf3", 1, 0)}
    after = {10: ("cc1", 1, 150), 11: ("iperf3", 1, 500), 12: ("make", 1, 20)}
    out = metrics.foreign_load(before, after, [11], 100, 5.0)
    assert out["foreign_cpu_pct"] == pytest.approx(34.0)
    assert out["contaminated"] and out["top"][0][0] == "cc1"


def _tidy(values):
    rows = []
    for cfg, rep, v in values:
        rows.append({"run_id": f"{cfg}{rep}", "campaign": "c", "experiment": "single-flow", "config": cfg,
                     "repetition": rep, "side": "both", "metric": "tpc_gbps", "category": "", "value": v})
    return pd.DataFrame(rows)


def test_summarize_median_and_range():
    s = metrics.summarize(_tidy([("a", 0, 1.0), ("a", 1, 5.0), ("a", 2, 2.0)]))
    row = s.iloc[0]
    assert (row["median"], row["min"], row["max"], row["n"]) == (2.0, 1.0, 5.0, 3)


def test_descendants_of_our_processes_are_ours():
    before = {10: ("netserver", 1, 0), 11: ("netserver", 10, 0), 12: ("cc1", 1, 0)}
    after = {10: ("netserver", 1, 5), 11: ("netserver", 10, 300), 12: ("cc1", 1, 100), 13: ("sh", 11, 40)}
    out = metrics.foreign_load(before, after, [10], 100, 5.0)
    assert out["foreign_cpu_pct"] == pytest.approx(20.0) and out["top"][0][0] == "cc1"


def test_foreign_load_refuses_swapped_snapshots_and_counts_a_reused_pid_from_zero():
    before = parse_snapshot(fixture_text("pids_before.txt"))
    after = parse_snapshot(fixture_text("pids_after.txt"))
    with pytest.raises(ParseError, match=r"pids: CPU time went down between the snapshots \(swapped\?\)"):
        metrics.foreign_load(after, before, [], 100, 5.0)
    # pid 12 exited and a new process (another command) got its pid: its own 30 ticks, not 30 - 500
    out = metrics.foreign_load({12: ("cc1", 1, 500)}, {12: ("make", 1, 30)}, [], 100, 1.0)
    assert out["foreign_cpu_pct"] == pytest.approx(30.0) and out["top"] == [("make", pytest.approx(30.0))]


def test_confidence_interval_on_fixed_data():
    mean, half = metrics.confidence([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(metrics.confidence([5.0])[1])
    mean, half = metrics.confidence([10.0] * 40)
    assert (mean, half) == (10.0, 0.0)


def _runs(points):
    """Synthetic tidy rows and manifests: (run, config, Gbit/s, sender %, receiver %) per run."""
    rows, manifests = [], []
    for run, cfg, gbps, snd, rcv in points:
        base = {"run_id": run, "campaign": "c", "experiment": "single-flow", "config": cfg, "repetition": 0,
                "category": None, "flow": None}
        rows += [{**base, "side": "both", "metric": "throughput_gbps", "value": gbps},
                 {**base, "side": "both", "metric": "tpc_gbps", "value": gbps / max(snd, rcv) * 100},
                 {**base, "side": "sender", "metric": "cpu_util_pct", "value": snd},
                 {**base, "side": "receiver", "metric": "cpu_util_pct", "value": rcv},
                 {**base, "side": "sender", "metric": "cores_count", "value": 1},
                 {**base, "side": "receiver", "metric": "cores_count", "value": 1}]
        manifests.append({"run_id": run, "point": {"config": cfg}})
    return pd.DataFrame(rows), manifests


def test_side_tpc_chooses_one_bottleneck_per_point_from_medians():
    # run b is sender-bound on its own, but the point's median says receiver: every run uses it
    tidy, ms = _runs([("a", "x", 20.0, 80.0, 95.0), ("b", "x", 22.0, 99.0, 90.0), ("c", "x", 21.0, 85.0, 97.0),
                      ("d", "y", 10.0, 100.0, 50.0)])
    out = metrics.with_side_tpc(tidy, ms)
    tpc = out[out.metric == "tpc_gbps"].set_index(["run_id", "side"]).value
    assert tpc[("b", "both")] == pytest.approx(22.0 / 0.90) == tpc[("b", "receiver")]
    assert tpc[("b", "sender")] == pytest.approx(22.0 / 0.99)
    assert tpc[("d", "both")] == pytest.approx(10.0)
    assert metrics.bottlenecks(out, ms) == {'{"config": "x"}': "receiver", '{"config": "y"}': "sender"}
    assert metrics.bottlenecks(tidy, ms) == metrics.bottlenecks(out, ms)  # the choice, before or after
    assert len(out[(out.metric == "tpc_gbps") & (out.side == "both")]) == 4  # replaced, not added


def test_side_tpc_leaves_data_without_cpu_rows_alone():
    tidy, ms = _runs([("a", "x", 20.0, 80.0, 95.0)])
    part = tidy[tidy.metric != "cpu_util_pct"]
    assert metrics.with_side_tpc(part, ms).equals(part)


def test_a_campaign_takes_throughput_from_unprofiled_runs_only_once_every_point_has_three():
    """p has three runs without perf, q one. Switching p alone would compare p measured without perf
    against q measured under it, so neither switches: the profiled runs' numbers stand and the
    unprofiled runs are left out of them (they only measure perf's cost). Once q has three too,
    both take throughput and CPU from their unprofiled runs and breakdowns from the profiled ones."""
    import pandas as pd
    from hostnet.analysis.metrics import UNPROFILED_MIN_RUNS, perf_cost, perf_cost_summary, prefer_unprofiled
    assert UNPROFILED_MIN_RUNS == 3
    prof, off = {"perf": {"freq_hz": 999}}, {"perf": "off"}
    manifests = [{"run_id": "p-r0", "point": {"id": "p"}, "probes": prof},
                 *({"run_id": f"p-u{k}", "point": {"id": "p"}, "probes": off} for k in range(3)),
                 {"run_id": "q-r0", "point": {"id": "q"}, "probes": prof},
                 {"run_id": "q-u0", "point": {"id": "q"}, "probes": off}]
    rows = [("p-r0", "throughput_gbps", 24.0), ("p-r0", "cpu_util_pct", 99.0), ("p-r0", "breakdown_pct", 30.0),
            ("p-r0", "perf_busy_samples_count", 9000.0),
            *((f"p-u{k}", m, v) for k in range(3) for m, v in (("throughput_gbps", 26.0), ("cpu_util_pct", 97.0))),
            ("q-r0", "throughput_gbps", 20.0), ("q-r0", "breakdown_pct", 31.0), ("q-u0", "throughput_gbps", 25.0)]
    tidy = pd.DataFrame(rows, columns=["run_id", "metric", "value"]).assign(side="both")
    kept = set(map(tuple, prefer_unprofiled(tidy, manifests)[["run_id", "metric"]].values))
    assert kept == {("p-r0", m) for m in ("throughput_gbps", "cpu_util_pct", "breakdown_pct",
                                          "perf_busy_samples_count")} | {("q-r0", "throughput_gbps"),
                                                                         ("q-r0", "breakdown_pct")}
    more = [{"run_id": f"q-u{k}", "point": {"id": "q"}, "probes": off} for k in (1, 2)]
    every = pd.concat([tidy, pd.DataFrame([(f"q-u{k}", "throughput_gbps", 25.0) for k in (1, 2)],
                                          columns=["run_id", "metric", "value"]).assign(side="both")])
    kept = set(map(tuple, prefer_unprofiled(every, manifests + more)[["run_id", "metric"]].values))
    assert kept == {("p-r0", "breakdown_pct"), ("p-r0", "perf_busy_samples_count"), ("q-r0", "breakdown_pct"),
                    *((f"p-u{k}", m) for k in range(3) for m in ("throughput_gbps", "cpu_util_pct")),
                    *((f"q-u{k}", "throughput_gbps") for k in range(3))}
    # a point run only without perf (the time budget's benches, one repetition) keeps its runs
    bench = [{"run_id": "b-r0", "point": {"id": "b"}, "probes": off}]
    only = pd.DataFrame([("b-r0", "cost_ns", 141.0)], columns=["run_id", "metric", "value"]).assign(side="machine")
    assert prefer_unprofiled(only, bench).equals(only)
    # a campaign without unprofiled runs is left as it is
    plain = tidy[~tidy.run_id.str.contains("-u")]
    assert prefer_unprofiled(plain, [m for m in manifests if "-u" not in m["run_id"]]).equals(plain)
    # perf's cost per point: 1 - 24/26 and 1 - 20/25
    cost = perf_cost(tidy, manifests).set_index("point")
    assert cost.cost_pct.to_dict() == pytest.approx({"p": 100 * (1 - 24 / 26), "q": 20.0})
    assert cost.unprofiled_runs.to_dict() == {"p": 3, "q": 1}
    assert perf_cost_summary(cost.reset_index()) == {"points": 2, "mean_pct": 13.8, "ci_pct": 78.2,
                                                      "median_pct": 13.8, "min_pct": 7.7, "max_pct": 20.0}
    assert perf_cost(plain, manifests).empty and perf_cost_summary(perf_cost(plain, manifests)) == {}
