"""hostnet.analysis.compare: two stored sweeps, point by point, by the verdict rule (the runs the
notebooks count; Welch's interval of B - A at the verdicts' level), with run counts and flagged runs left out."""
import json

import pandas as pd
import pytest
from scipy import stats

from hostnet.analysis import compare
from hostnet.analysis.verdicts import CONFIDENCE
from hostnet import store


def _campaign(runs_dir, name, tpcs, flagged=()):
    for rep, tpc in enumerate(tpcs):
        rd = store.Campaign(runs_dir, name).new_run(f"p-r{rep}")
        rd.manifest.update(experiment="single-flow", config={"name": "tsogro"},
                           point={"id": "p", "config": "tsogro", "rx_buffer_kb": 400}, contaminated=rep in flagged)
        rows = [{"run_id": f"p-r{rep}", "campaign": name, "experiment": "single-flow", "config": "tsogro",
                 "repetition": rep, "side": "both", "metric": "tpc_gbps", "category": "", "flow": "", "value": tpc}]
        rd.finish("ok", pd.DataFrame(rows))


def test_compare_two_stored_sweeps_by_the_verdict_rule_leaving_flagged_runs_out(tmp_path):
    _campaign(tmp_path, "a", [10.0, 11.0, 12.0, 99.0], flagged=(3,))  # the 99 was under foreign load
    _campaign(tmp_path, "b", [20.0, 21.5, 22.0])
    m = compare.compare(tmp_path, "a", "b")
    row = m.rows[m.rows.metric == "tpc_gbps"].iloc[0]
    assert row.point == "config=tsogro, rx_buffer_kb=400" and (row.n_a, row.n_b) == (3, 3)
    assert (row.mean_a, row.mean_b) == (11.0, pytest.approx(21.1666, abs=1e-3)) and row.differs
    welch = stats.ttest_ind([20.0, 21.5, 22.0], [10.0, 11.0, 12.0], equal_var=False).confidence_interval(CONFIDENCE)
    assert (row.delta_lo, row.delta_hi) == (pytest.approx(welch.low), pytest.approx(welch.high))
    assert m.a == {"campaign": "a", "runs": 3, "flagged": 1}
    text = compare.format_comparison(m)
    assert "A: a: 3 usable runs, 1 flagged runs left out" in text and "(n=3 )" in text and text.rstrip().endswith("*")
    with pytest.raises(FileNotFoundError):
        compare.compare(tmp_path, "a", "missing")


def test_too_few_runs_leave_the_difference_undecided(tmp_path):
    _campaign(tmp_path, "a", [10.0])
    _campaign(tmp_path, "b", [20.0, 21.0])
    row = compare.compare(tmp_path, "a", "b").rows.iloc[0]
    assert row.delta == 10.5 and not row.differs
    assert "[undecided: too few runs]" in compare.format_comparison(compare.compare(tmp_path, "a", "b"))


def test_the_cli_writes_csv_and_json(tmp_path, capsys):
    from hostnet import cli
    _campaign(tmp_path, "a", [10.0, 11.0, 12.0])
    _campaign(tmp_path, "b", [20.0, 21.0, 22.0])
    assert cli.main(["compare", "a", "b", "--runs-dir", str(tmp_path), "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ",".join(compare.COLUMNS) and len(lines) == 2
    assert cli.main(["compare", "a", "b", "--runs-dir", str(tmp_path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["b"]["runs"] == 3 and got["rows"][0]["delta"] == 10.0 and got["rows"][0]["differs"] is True


def test_throughput_comes_from_runs_without_perf_only_when_both_campaigns_have_them(tmp_path):
    """A with 3 unprofiled runs at its point, B with none: both sides use their profiled runs, so
    B - A never carries perf's cost on one side only."""
    def campaign(name, profiled, unprofiled=()):
        for rep, tpc in enumerate([*profiled, *unprofiled]):
            rd = store.Campaign(tmp_path, name).new_run(f"p-r{rep}")
            rd.manifest.update(experiment="single-flow", config={"name": "tsogro"},
                               point={"id": "p", "config": "tsogro"},
                               probes={"perf": "off" if rep >= len(profiled) else {"event": "cpu-clock"}})
            rd.finish("ok", pd.DataFrame([{"run_id": f"p-r{rep}", "campaign": name, "experiment": "single-flow",
                                           "config": "tsogro", "repetition": rep, "side": "both",
                                           "metric": "tpc_gbps", "category": "", "flow": "", "value": tpc}]))
    campaign("a", [10.0, 11.0, 12.0], unprofiled=[20.0, 21.0, 22.0])
    campaign("b", [10.0, 11.0, 12.0])
    m = compare.compare(tmp_path, "a", "b")
    assert m.rows.iloc[0].mean_a == 11.0 and not m.rows.iloc[0].differs  # A's perf-off 21 would have differed
    assert m.numbers_from == "runs with perf"
    campaign("c", [10.0, 11.0, 12.0], unprofiled=[20.0, 21.0, 22.0])
    both = compare.compare(tmp_path, "a", "c")
    assert both.rows.iloc[0].mean_a == 21.0 and both.numbers_from == "runs without perf"
