"""bench/: its pure parts (ratios, medians, order, mpstat parsing, the artifact arithmetic, the
result tables) and one short live smoke test of the quick mode. No timed assertions: the targets
are judged by `make bench`, not by the tests."""
import json
import math
import os

import pytest

from bench import artifact, live, results, stats
from bench.mpstat import parse_mpstat_average
from bench.sweep_overhead import phases
from conftest import fixture_text
from hostnet.parsers import ParseError


def test_alternating_order_rotates_and_covers_every_pair():
    order = stats.alternating(["A", "B", "C"], 3)
    assert order[:3] == [(0, "A"), (0, "B"), (0, "C")]
    assert [v for r, v in order if r == 1] == ["B", "C", "A"]
    assert [v for r, v in order if r == 2] == ["C", "A", "B"]
    assert sorted(order) == sorted((r, v) for r in range(3) for v in "ABC")


def test_paired_ratios_use_only_repetitions_both_ran():
    assert stats.paired_ratios({0: 9.0, 1: 10.0, 2: 4.0}, {0: 10.0, 1: 10.0}) == [0.9, 1.0]


def test_summarize_median_range_and_failed_repetitions():
    s = stats.summarize([1.0, 3.0, float("nan"), 2.0, 10.0])
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4)
    assert stats.summarize([]).n == 0 and math.isnan(stats.summarize([]).median)


def test_verdicts_against_targets():
    assert stats.verdict(0.99, ">=", 0.98) == "met"
    assert stats.verdict(0.97, ">=", 0.98) == "below target"
    assert stats.verdict(1.2, "<=", 1.15) == "below target"
    assert stats.verdict(float("nan"), "<=", 1.15) == "not measured"


def test_linear_fit_tells_linear_from_superlinear():
    lin = stats.linear_fit([1e5, 1e6, 1e7], [1.0, 10.0, 100.0])
    assert lin["per_item_growth"] == pytest.approx(1.0) and lin["slope"] == pytest.approx(1e-5)
    assert stats.linear_fit([1e5, 1e6], [1.0, 20.0])["per_item_growth"] == pytest.approx(2.0)


def test_mpstat_average_per_cpu_on_captured_output():
    # tests/fixtures/mpstat_P_ALL_1.txt: `mpstat -P ALL 1`, SIGINT after 3.5 s (sysstat 12.6, this VM)
    avg = parse_mpstat_average(fixture_text("mpstat_P_ALL_1.txt"))
    assert sorted(avg) == [0, 1]
    assert avg[0]["usr"] == 89.63 and avg[1]["soft"] == 0.99
    assert avg[0]["busy"] == pytest.approx(100 - 0.0 - 0.33)  # iowait is idle, as in /proc/stat
    assert avg[1]["busy"] == pytest.approx(100 - 0.0 - 0.99)


def test_mpstat_without_a_whole_interval_is_an_error():
    head = fixture_text("mpstat_P_ALL_1.txt").split("\n\n")[0]
    with pytest.raises(ParseError, match="no per-CPU Average"):
        parse_mpstat_average(head)
    with pytest.raises(ParseError, match="before its header"):
        parse_mpstat_average("Average:       0   1.0\n")


def test_artifact_overhead_from_its_readme_runtime():
    a = artifact.artifact_single_flow()
    assert a["measurement_s"] == 140  # 7 configurations x 20 s
    assert a["ratio"] == pytest.approx(360 / 140)
    assert a["per_point_overhead_s"] == pytest.approx(360 / 7 - 20)
    with pytest.raises(ValueError):
        artifact.overhead_ratio(6, 0, 20)


def _rows(values: dict[str, list[float]]) -> list[dict]:
    return [{"repetition": i, "variant": v, "throughput_gbps": x} for v, xs in values.items() for i, x in enumerate(xs)]


def test_fidelity_and_profiler_cost_are_paired_medians():
    rows = _rows({"hand": [10.0, 20.0, 10.0], "harness": [9.9, 19.0, 10.0], "perf99": [9.9, 19.0, 10.0],
                  "perf4000": [7.0, 15.0, 8.0], "default": [9.0, 19.0, 9.8]})
    fid = live.fidelity(rows)
    assert fid["value"] == pytest.approx(0.99) and fid["verdict"] == "met"
    cost = live.profiler_cost(rows)
    assert cost["curve"]["99"]["median"] == pytest.approx(1.0)
    assert cost["curve"]["4000"]["median"] == pytest.approx(15 / 19)
    assert cost["chosen_freq_hz"] == 99
    assert cost["value"] == pytest.approx(0.98) and cost["figure"].startswith("profiler cost")


def test_choose_frequency_is_the_highest_meeting_the_target():
    assert live.choose_frequency({99: 1.0, 499: 0.97, 999: 0.96, 4000: 0.8}, 0.95) == 999
    assert live.choose_frequency({99: 0.9}, 0.95) is None


def test_perf_sample_share_per_cpu_on_captured_report():
    share = live.perf_busy_pct(fixture_text("perf_report_all-opts.txt"), "6.18.44")
    assert set(share) == {0, 1}
    assert all(0 < v <= 100 for v in share.values())


def test_sweep_phases_from_manifest_timestamps():
    m = {"started": 100.0, "ended": 116.0, "window": {"clients_started": 101.5, "seconds": 9.3}}
    p = phases(m, 12.0)
    assert p == {"setup_s": 1.5, "traffic_s": 12.0, "after_s": 2.5, "window_s": 9.3, "point_wall_s": 16.0}


def test_summary_table_and_doc_block_keep_the_prose(tmp_path):
    res = {"name": "fidelity", "title": "Harness fidelity", "metric": "m", "unit": "ratio", "value": 0.99,
           "summary": {"median": 0.99, "min": 0.97, "max": 1.0, "n": 3}, "op": ">=", "target": 0.98,
           "verdict": "met", "figure": "harness fidelity = 0.99"}
    assert "| 1 | Harness fidelity | m | 0.990 (0.970–1.000, n=3) → **0.990** | >= 0.98 | met |" in results.table([res])
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\nintro\n{results.BEGIN}\nold\n{results.END}\n## Why\nprose\n")
    results.update_doc("new table\n", doc)
    text = doc.read_text()
    assert "old" not in text and "new table" in text and text.endswith("## Why\nprose\n")


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for the embedded testbed")
def test_quick_mode_runs_live(tmp_path, capsys):
    from bench.__main__ import main
    assert main(["--quick", "--only", "fidelity,profiler_cost,cpu_accounting", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("fidelity", "profiler_cost", "cpu_accounting"):
        res = json.loads((tmp_path / f"{name}.json").read_text())
        assert res["summary"]["n"] >= 1 and res["figure"] in out
        assert (tmp_path / f"{name}.csv").exists()
    assert "Harness fidelity" in (tmp_path / "summary.md").read_text()


def test_throughput_ratios_under_foreign_load_are_inconclusive():
    rows = _rows({"hand": [10.0, 10.0], "harness": [9.9, 10.0]})
    for r in rows:
        r["contaminated"] = r["variant"] == "harness"
    assert live.fidelity(rows)["verdict"].startswith("inconclusive: 2 of 2 runs under foreign load (met")
    rows[-1]["contaminated"] = False
    assert live.fidelity(rows)["verdict"] == "met"  # one of two flagged: not most
