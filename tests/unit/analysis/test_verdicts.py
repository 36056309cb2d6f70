"""The one verdict rule on synthetic data where the answer is known: decided, undecided (with what
would decide it), direction only, a premise missing; and the top-up loop on a fake runner."""
import math

import pandas as pd
import pytest
from scipy import stats

from hostnet.analysis import verdicts

UP = [10.0, 10.4, 9.8, 10.2, 9.9]
HIGHER = [12.0, 12.3, 11.8, 12.1, 12.2]
NOISY = [10.0, 13.0, 8.0, 12.5, 7.5]


def test_difference_is_welch_t_ci_of_b_minus_a():
    d = verdicts.difference(UP, HIGHER)
    ref = stats.ttest_ind(HIGHER, UP, equal_var=False).confidence_interval(verdicts.CONFIDENCE)
    assert d.diff == pytest.approx(sum(HIGHER) / 5 - sum(UP) / 5)
    assert (d.lo, d.hi) == pytest.approx((ref.low, ref.high))
    assert d.sign == "<" and verdicts.difference(HIGHER, UP).sign == ">"


def test_paired_difference_uses_the_runs_pairs_and_refuses_unequal_lengths():
    a, b = [10.0, 20.0, 30.0], [11.0, 21.2, 30.9]  # each run's b a little above its a: paired decides it
    assert verdicts.difference(a, b, paired=True).sign == "<"
    assert verdicts.difference(a, b).sign == "?"  # independent runs: the between-run spread hides it
    with pytest.raises(ValueError, match="paired"):
        verdicts.difference(a, b[:2], paired=True)


def test_one_run_is_never_a_decision():
    d = verdicts.difference([10.0], [50.0])
    assert d.sign == "?" and math.isinf(d.hi) and d.runs_to_decide() is None
    j = verdicts.direction(d, want="<", what="x", points=[{"config": "a"}])
    assert j.verdict == verdicts.INCONCLUSIVE and j.decide == "at least 3 clean runs per point"
    # nor are two: no arm decides with fewer than MIN_RUNS clean runs
    two = verdicts.difference([10.0, 11.0], [50.0, 51.0])
    assert two.sign == "?" and math.isinf(two.hi)


def test_undecided_says_how_many_runs_would_decide_and_which_points():
    d = verdicts.difference(UP, [x + 2.5 for x in NOISY])
    j = verdicts.direction(d, want="<", what="tpc a → b", points=[{"config": "a"}, {"config": "b"}])
    assert j.verdict == verdicts.INCONCLUSIVE
    assert j.decide == f"about {d.runs_to_decide()} clean runs per point (now 5)" and 5 < d.runs_to_decide() <= 30
    assert j.points == ({"config": "a"}, {"config": "b"}) and "to decide" in j.text
    tiny = verdicts.direction(verdicts.difference(UP, [x + 0.6 for x in NOISY]), want="<", what="x",
                              points=[{"config": "a"}])
    # no top-up within the design decides it: the profile (window, host) would have to change
    assert tiny.decide.startswith("not decided at this profile: it would take more than 30 clean runs per point")
    assert tiny.points == () and "to decide" not in tiny.text
    assert tiny.text.endswith("a longer window or a quieter host")


def test_a_spread_from_fewer_than_5_runs_may_not_rule_a_top_up_out():
    """At 3 runs a side the spread is too uncertain to say 'more than 30 runs': the points are
    topped up to 5 first; from 5 runs on the same projection stops the loop (no points)."""
    a, b = [10.0, 12.0, 14.0], [10.3, 12.4, 14.2]
    three = verdicts.direction(verdicts.difference(a, b), want="<", what="x", points=[{"config": "a"}])
    assert verdicts.difference(a, b).runs_to_decide() > verdicts.MAX_RUNS
    assert three.verdict == verdicts.INCONCLUSIVE and three.points == ({"config": "a"},)
    assert three.decide == ("5 clean runs per point before the spread can rule repetitions out "
                            "(now 3; at today's spread more than 30)")
    five = verdicts.direction(verdicts.difference([*a, 11.0, 13.0], [*b, 11.2, 13.3]), want="<", what="x",
                              points=[{"config": "a"}])
    assert five.points == () and five.decide.startswith(f"{verdicts.AT_PROFILE}: it would take more than 30 clean")
    near = verdicts.similar(verdicts.difference([100.0, 110, 90], [112.0, 125, 100]), margin_pct=15, what="x",
                            points=[{"config": "a"}])
    assert near.verdict == verdicts.INCONCLUSIVE and near.points == ({"config": "a"},)
    assert near.decide.startswith("5 clean runs per point before")


def test_ordered_steps_reproduced_not_reproduced_and_undecided():
    up = verdicts.ordered([("a", UP, {}), ("b", HIGHER, {}), ("c", [x + 3 for x in HIGHER], {})])
    assert up.verdict == verdicts.REPRODUCED and "a 10.06 < b 12.08 < c 15.08" in up.shows
    down = verdicts.ordered([("a", HIGHER, {}), ("b", UP, {})])
    assert down.verdict == verdicts.NOT_REPRODUCED and "> b" in down.shows
    flat = verdicts.ordered([("a", UP, {"config": "a"}), ("b", [x + 2.5 for x in NOISY], {"config": "b"})])
    assert flat.verdict == verdicts.INCONCLUSIVE and "≈ b" in flat.shows and flat.points


def test_sized_reproduced_in_direction_and_against_the_paper():
    before = [40.0, 41.0, 39.0, 40.5, 39.5]
    about = verdicts.sized(verdicts.difference(before, [23.0, 22.5, 23.5, 22.8, 23.2]), paper_pct=-43, what="tpc")
    assert about.verdict == verdicts.REPRODUCED  # -43 % inside the CI of the relative change
    much = verdicts.sized(verdicts.difference(before, [12.0, 11.5, 12.4, 11.8, 12.1]), paper_pct=-43, what="tpc")
    assert much.verdict == verdicts.IN_DIRECTION and "paper -43 %" in much.shows and "change -70 %" in much.shows
    up = verdicts.sized(verdicts.difference(before, [50.0, 51.0, 49.0, 50.5, 49.5]), paper_pct=-43, what="tpc")
    assert up.verdict == verdicts.NOT_REPRODUCED


def test_similar_needs_the_whole_interval_within_the_margin():
    same = verdicts.similar(verdicts.difference(UP, [x * 1.02 for x in UP]), margin_pct=15, what="tpc")
    assert same.verdict == verdicts.REPRODUCED
    apart = verdicts.similar(verdicts.difference(UP, [x * 1.5 for x in UP]), margin_pct=15, what="tpc")
    assert apart.verdict == verdicts.NOT_REPRODUCED
    wide = verdicts.similar(verdicts.difference(UP, NOISY), margin_pct=15, what="tpc", points=[{"x": 1}])
    assert wide.verdict == verdicts.INCONCLUSIVE and "clean runs per point" in wide.decide


def test_largest_is_a_paired_lead_over_the_runner_up():
    lead = verdicts.largest({"data_copy": [40, 42, 41], "tcp/ip": [20, 22, 21], "mm": [5, 5, 6]}, "data_copy",
                            what="receiver")
    assert lead.verdict == verdicts.REPRODUCED and "data_copy − tcp/ip" in lead.shows
    other = verdicts.largest({"data_copy": [20, 22, 21], "tcp/ip": [40, 42, 41]}, "data_copy", what="receiver")
    assert other.verdict == verdicts.NOT_REPRODUCED
    tie = verdicts.largest({"data_copy": [33, 29, 37], "tcp/ip": [28, 30, 29]}, "data_copy", what="x",
                           points=[{"flows": 1}])
    assert tie.verdict == verdicts.INCONCLUSIVE and tie.points == ({"flows": 1},)


def test_against_a_level_uses_the_one_sample_interval():
    d = verdicts.against_level([5.0, 6.0, 5.5, 5.2], 1.0)
    ref = stats.ttest_1samp([5.0, 6.0, 5.5, 5.2], 1.0).confidence_interval(verdicts.CONFIDENCE)
    assert (d.lo, d.hi) == pytest.approx((ref.low - 1.0, ref.high - 1.0)) and d.sign == "<" and d.n == 4


def test_combine_every_claim_must_hold_and_premises_stay_visible():
    r = verdicts.Judgement(verdicts.REPRODUCED, "a")
    i = verdicts.Judgement(verdicts.INCONCLUSIVE, "b", "n", ({"x": 1},))
    assert verdicts.combine([r, r]).verdict == verdicts.REPRODUCED
    assert verdicts.combine([r, verdicts.Judgement(verdicts.IN_DIRECTION, "c")]).verdict == verdicts.IN_DIRECTION
    assert verdicts.combine([r, i]).points == ({"x": 1},)
    assert verdicts.combine([i, verdicts.Judgement(verdicts.NOT_REPRODUCED, "d")]).verdict == verdicts.NOT_REPRODUCED
    gone = verdicts.combine([r, verdicts.not_testable("2 CPUs", "a third CPU")])
    assert gone.verdict == verdicts.NOT_TESTABLE and gone.decide == "a third CPU"
    with pytest.raises(ValueError, match="not a verdict"):
        verdicts.Judgement("probably", "x")


def test_table_rows_carry_the_top_up_points_of_undecided_findings():
    findings = pd.DataFrame({"id": ["F01", "F02", "F03"], "claim": ["a", "b", "c"]})
    decided = verdicts.collect(findings, {
        "F02": verdicts.Judgement(verdicts.INCONCLUSIVE, "x", "more", ({"config": "a"},)),
        "F01": verdicts.not_testable("veth", "a NIC"), "F03": verdicts.Judgement(verdicts.REPRODUCED, "y")})
    t = decided.table
    assert list(t.columns) == verdicts.COLUMNS and list(t.id) == ["F02", "F01", "F03"]
    assert decided.wanted == {"F02": [{"config": "a"}]}
    assert t.set_index("id").loc["F01", "this run shows"] == "veth; needs a NIC"
    # an extension, or another notebook's experiment, is shown undecided but asks for no runs: no tally takes it
    undecided = verdicts.Judgement(verdicts.INCONCLUSIVE, "x", "more", ({"config": "b"},))
    decided = verdicts.collect(findings, {"F01": undecided, "F02": undecided, "F03": undecided},
                               extensions={"F02": "for one flow"}, repeats={"F03": "notebook 03's"})
    t = decided.table
    assert list(t.id) == ["F01", "F02" + verdicts.EXTENSION, "F03" + verdicts.SAME_EXPERIMENT]
    assert set(t.verdict) == {verdicts.INCONCLUSIVE} and decided.wanted == {"F01": [{"config": "b"}]}


def test_verdicts_joined_keep_each_findings_points_once():
    a = verdicts.Verdicts(pd.DataFrame({"id": ["F17"]}), {"F17": [{"flows": 1}], "X": [{"flows": 2}]})
    b = verdicts.Verdicts(pd.DataFrame({"id": ["F28"]}), {"F28": [{"flows": 4}], "X": [{"flows": 2}, {"flows": 8}]})
    both = a.joined(b)
    assert list(both.table.id) == ["F17", "F28"] and list(both.table.index) == [0, 1]
    assert both.wanted == {"F17": [{"flows": 1}], "X": [{"flows": 2}, {"flows": 8}], "F28": [{"flows": 4}]}
    assert a.asking("flagged runs", [{"flows": 16}]).wanted["flagged runs"] == [{"flows": 16}]
    assert "flagged runs" not in a.wanted  # a value: asking makes another


def test_shares_by_run_pairs_runs_and_fills_missing_categories_with_zero():
    rows = [{"run_id": r, "metric": "breakdown_pct", "side": "receiver", "category": c, "value": v, "config": "x"}
            for r, c, v in (("r1", "data_copy", 40), ("r1", "tcp/ip", 20), ("r2", "data_copy", 42))]
    shares = verdicts.shares_by_run(pd.DataFrame(rows), "breakdown_pct", "receiver", ["data_copy", "tcp/ip", "mm"],
                                    config="x")
    assert shares == {"data_copy": [40, 42], "tcp/ip": [20, 0.0], "mm": [0.0, 0.0]}


def test_the_runs_asked_for_are_projected_with_the_t_quantile_they_would_have():
    """Two sides of 3 runs, sd 5 each, 6 apart: Welch's interval at the design's 98.2 % is ±15.7
    (t(4) = 3.86). With m runs a side it is t(2m - 2) x 5 x sqrt(2/m), below 6 first at m = 10.
    Keeping today's t(4) would have asked for more; a paired difference of 3 runs keeps t(2)."""
    d = verdicts.difference([30, 25, 35], [24, 19, 29])
    assert d.df == pytest.approx(4.0) and (d.hi - d.lo) / 2 == pytest.approx(15.74, abs=0.01)
    assert d.runs_to_decide() == 10
    paired = verdicts.difference([10, 12, 14], [13, 13, 19], paired=True)  # differences 3, 1, 5
    # mean 3, sd 2: t(df) x 2 / sqrt(m) at 98.2 % falls below 3 first at 6 runs
    assert paired.df == 2 and paired.runs_to_decide() == 6
    level = verdicts.against_level([1.5, 2.5, 2.0], 1.0)  # one-sample: df = n - 1
    assert level.df == 2 and level.runs_to_decide() is not None
    assert verdicts.difference([1, 1, 1], [2, 2, 2]).runs_to_decide() == 4  # exact: no spread, any n decides


def _table(verdict_by_id, shows="x", wanted=None) -> verdicts.Verdicts:
    return verdicts.Verdicts(pd.DataFrame([{"id": fid, "paper says": "claim", "this run shows": shows, "verdict": v}
                                           for fid, v in verdict_by_id.items()], columns=verdicts.COLUMNS),
                             wanted or {})


def test_two_accountings_that_agree_stand_and_opposite_decisions_depend_on_the_testbed():
    V = verdicts
    raw = _table({"F1": V.REPRODUCED, "F2": V.REPRODUCED, "F3": V.REPRODUCED, "F4": V.NOT_TESTABLE,
                  "F5": V.NOT_REPRODUCED})
    nic = _table({"F1": V.REPRODUCED, "F2": V.NOT_REPRODUCED, "F3": V.INCONCLUSIVE, "F4": V.NOT_TESTABLE,
                  "F5": V.IN_DIRECTION}, shows="y", wanted={"F3": [{"config": "no-opts"}]})
    merged = V.merge_accountings(raw, nic, {})
    out = merged.table.set_index("id")
    assert out.verdict.to_dict() == {"F1": V.REPRODUCED, "F2": V.DEPENDS, "F3": V.INCONCLUSIVE,
                                     "F4": V.NOT_TESTABLE, "F5": V.DEPENDS}
    assert out.loc["F2", "raw"] == V.REPRODUCED and out.loc["F2", "NIC-equivalent"] == V.NOT_REPRODUCED
    assert out.loc["F2", "this run shows"] == "raw: x | NIC-equivalent: y"  # both numbers
    assert merged.wanted == {"F3": [{"config": "no-opts"}]}  # undecided under one: topped up
    assert V.merged_verdict(V.REPRODUCED, V.IN_DIRECTION) == V.IN_DIRECTION


def test_the_ambiguous_line_alone_turning_a_verdict_is_said():
    V = verdicts
    raw, nic = _table({"F1": V.REPRODUCED}), _table({"F1": V.REPRODUCED})
    variants = {"nic-ambiguous-as-sched": _table({"F1": V.NOT_REPRODUCED}),
                "nic-ambiguous-removed": _table({"F1": V.REPRODUCED})}
    out = V.merge_accountings(raw, nic, variants).table.set_index("id")
    assert out.loc["F1", "verdict"] == V.REPRODUCED
    assert "ambiguous line alone turns it" in out.loc["F1", "sensitivity"]
    assert "as sched: not reproduced" in out.loc["F1", "sensitivity"]
    assert V.merge_accountings(raw, nic, {"nic-ambiguous-removed": _table({"F1": V.REPRODUCED})}
                               ).table.sensitivity.tolist() == [""]


def test_a_section_judged_without_a_ledger_says_both_accountings_are_the_raw_one():
    @verdicts.under_accountings
    def verdict_table(tidy, reference_dir):
        return _table({"F1": verdicts.REPRODUCED if len(tidy) else verdicts.INCONCLUSIVE})
    out = verdict_table(pd.DataFrame({"metric": ["cpu_util_pct"], "value": [1.0]}), None)
    assert out.verdict.tolist() == [verdicts.REPRODUCED] and out["NIC-equivalent"].tolist() == ["(no ledger: raw)"]


def test_combine_keeps_a_failing_part_only_at_the_familywise_level():
    """Eight claims, one decided against at the design's level but not at Holm's 1 − α/8: undecided,
    not 'not reproduced'; one that holds at the stricter level decides; a single claim needs no correction."""
    ok = verdicts.direction(verdicts.difference([1, 1.1, 0.9, 1.05], [5, 5.2, 4.9, 5.1]), want="<", what="ok")
    a = [10.0, 10.4, 9.7, 10.2]
    b = [x - 0.8 for x in (10.0, 10.3, 9.6, 10.3)]  # b below a: decided at 98.2 %, not at 0.0182/8
    weak = verdicts.difference(a, b)
    assert weak.sign == ">" and weak.decided_at(verdicts.familywise_level(8)) == "?"
    fail = verdicts.direction(weak, want="<", what="weak", points=[{"config": "x"}])
    assert fail.verdict == verdicts.NOT_REPRODUCED  # alone: the design's level
    many = verdicts.combine([ok] * 7 + [fail])
    assert many.verdict == verdicts.INCONCLUSIVE and "familywise" in many.decide and many.points == ({"config": "x"},)
    strong = verdicts.direction(verdicts.difference([10, 10.1, 9.9, 10.05], [1, 1.1, 0.9, 1.0]), want="<", what="s")
    decided = verdicts.combine([ok] * 7 + [fail, strong])
    assert decided.verdict == verdicts.NOT_REPRODUCED and "Holm" in decided.shows
    assert verdicts.combine([ok] * 8).verdict == verdicts.REPRODUCED  # all must hold: no correction needed


def test_unsteady_runs_are_counted_and_the_verdict_without_them_shown_where_it_changes():
    def rows(run, cv, value):
        return [{"run_id": run, "metric": "flow_throughput_cv_pct", "side": "flow", "category": None, "value": cv},
                {"run_id": run, "metric": "x", "side": "both", "category": None, "value": value}]

    @verdicts.under_accountings
    def verdict_table(tidy, reference_dir):
        xs = tidy[tidy.metric == "x"].value
        v = verdicts.REPRODUCED if len(xs) >= 3 and (xs > 0).all() else verdicts.INCONCLUSIVE
        return _table({"F1": v, "F2": verdicts.REPRODUCED} if len(xs) >= 4 else {"F1": v})
    t = pd.DataFrame([r for i, (cv, x) in enumerate([(5, 1), (5, 1), (5, 1), (40, 1), (40, 1)])
                      for r in rows(f"p-r{i}", cv, x)])
    out = verdict_table(t, None).set_index("id")
    assert (out["unsteady runs"] == "2 of 5").all()
    assert out.loc["F1", "steady runs only"] == ""  # three steady runs decide the same
    assert out.loc["F2", "steady runs only"].startswith("not judged")
    assert verdicts.unsteady_runs(t) == {"p-r3", "p-r4"}


def _profiled(samples: list[int], copy: list[float]) -> pd.DataFrame:
    """Runs of one point: each side's data copy share (the rest tcp/ip) and its busy sample count."""
    rows = []
    for i, (n, c) in enumerate(zip(samples, copy, strict=True)):
        run = f"r{i}"
        rows += [{"run_id": run, "side": "receiver", "metric": "breakdown_attributed_pct", "category": "data_copy",
                  "value": c},
                 {"run_id": run, "side": "receiver", "metric": "breakdown_attributed_pct", "category": "tcp/ip",
                  "value": 100 - c},
                 {"run_id": run, "side": "receiver", "metric": "perf_busy_samples_count", "category": "", "value": n}]
    return pd.DataFrame(rows)


def test_runs_under_the_sample_floor_take_no_part_in_a_verdict_on_shares():
    """Short flows at 99 Hz gave ~235 busy samples a run: a share's binomial error alone is then
    ±6 points. Such runs are left out and named; with none left there is no verdict and no top-up."""
    floor = verdicts.MIN_BUSY_SAMPLES
    t = _profiled([floor + 500, floor * 3, 235, floor + 1], [60.0, 61.0, 20.0, 59.0])
    shares = verdicts.shares_by_run(t, "breakdown_attributed_pct", "receiver", ["data_copy", "tcp/ip"])
    assert shares["data_copy"] == [60.0, 61.0, 59.0] and shares.undersampled == {"r2": 235.0}
    j = verdicts.largest(shares, "data_copy", what="x", points=[{"config": "a"}])
    assert j.verdict == verdicts.REPRODUCED and "1 run under the 1,000-sample floor left out: 235-235" in j.shows
    thin = verdicts.shares_by_run(_profiled([235, 212, 12], [60.0, 61.0, 59.0]), "breakdown_attributed_pct",
                                  "receiver", ["data_copy", "tcp/ip"])
    assert thin and not len(thin) and thin["data_copy"] == []
    j = verdicts.largest(thin, "data_copy", what="x", points=[{"config": "a"}])
    assert j.verdict == verdicts.INCONCLUSIVE and j.points == () and "a higher perf frequency" in j.decide
    assert "3 runs under the 1,000-sample floor left out: 12-235" in j.shows
