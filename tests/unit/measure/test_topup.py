"""hostnet.measure.topup: which sweep points a partial point names, one more repetition per point into the
same campaign (run_sweep replaced by a fake that writes manifests), the decision loop's record in
sweep.json, and the embedded testbed shape taken from a campaign's manifest."""
import json
from dataclasses import asdict

from types import SimpleNamespace

import pandas as pd
import pytest

from hostnet.measure.options import BUDGET_MINUTES
from hostnet.measure import topup
from hostnet.analysis import verdicts
from hostnet import store
from hostnet.store import SCHEMA_VERSION, TIDY_COLUMNS
from hostnet.measure.sweep import SweepSpec

SPEC = SweepSpec(workload="one-to-one", configs=["all-opts"], grid={"flows": [1, 2, 4]}, repetitions=2)


def campaign(tmp_path, spec=SPEC):
    cdir = tmp_path / "c"
    cdir.mkdir()
    (cdir / "sweep.json").write_text(json.dumps({"spec": asdict(spec), "order": ["original plan"]}))
    for p in spec.points():
        for rep in range(spec.repetitions):
            write_run(cdir, p, rep)
        for k in range(spec.unprofiled_repetitions):
            write_run(cdir, p, k, "u")
    return cdir


BUSY = set()  # flows values whose runs come out flagged for foreign load (a busy machine)


def write_run(cdir, point, rep, tag="r"):
    """tag "r": a profiled run; "u": one without perf (SweepSpec.unprofiled_repetitions)."""
    run = cdir / f"{point['config']}-{point.get('flows', 1)}-{tag}{rep}"
    run.mkdir()
    busy = point.get("flows") in BUSY
    (run / "manifest.json").write_text(json.dumps({"schema": SCHEMA_VERSION, "run_id": run.name,
                                                   "experiment": "one-to-one", "status": "ok",
                                                   "repetition": rep, "point": {"id": "x", **point},
                                                   "probes": {"perf": "off"} if tag == "u" else {},
                                                   "contaminated": busy}))
    (run / "tidy.csv").write_text(",".join(TIDY_COLUMNS) + "\n")  # an ok run has its table (store.damage)


@pytest.fixture
def fake_sweeps(monkeypatch):
    """run_sweep as the real one behaves for top-ups: skips repetitions already made, writes its own
    plan only when it is not a top-up round."""
    calls = []

    def run_sweep(tb, spec, *, runs_dir, campaign, progress=True, top_up=False):
        cdir = runs_dir / campaign
        if not top_up:
            (cdir / "sweep.json").write_text(json.dumps({"spec": asdict(spec)}))
        ran = 0
        for p in spec.points():
            for tag, count in (("r", spec.repetitions), ("u", spec.unprofiled_repetitions)):
                for rep in range(count):
                    if not (cdir / f"{p['config']}-{p.get('flows', 1)}-{tag}{rep}").exists():
                        write_run(cdir, p, rep, tag)
                        ran += 1
        calls.append(spec)
        return {"ran": ran, "failed": 0, "skipped": 0, "campaign_dir": str(cdir)}
    monkeypatch.setattr(topup, "run_sweep", run_sweep)
    return calls


def test_matching_selects_the_spec_points_a_partial_point_names():
    assert topup.matching(SPEC, [{"flows": 2}]) == [{"config": "all-opts", "flows": 2}]
    assert topup.matching(SPEC, [{"flows": "4"}, {"config": "all-opts", "flows": 1}]) == [
        {"config": "all-opts", "flows": 1}, {"config": "all-opts", "flows": 4}]
    assert topup.matching(SPEC, [{"flows": 8}]) == []


def test_a_verdict_naming_a_grid_value_as_a_float_still_finds_its_point():
    """Verdicts read grid values back from tidy tables (8 Gbit/s as 8.0): the sweep stored 8."""
    spec = SweepSpec(workload="udp-loss", configs=["no-opts"], grid={"udp_rate_gbps": [0.5, 8], "app_cpu": ["same"]})
    assert topup.matching(spec, [{"udp_rate_gbps": 8.0, "app_cpu": "same"}]) == [
        {"config": "no-opts", "udp_rate_gbps": 8, "app_cpu": "same"}]
    assert topup.matching(spec, [{"udp_rate_gbps": "0.5"}]) == [
        {"config": "no-opts", "udp_rate_gbps": 0.5, "app_cpu": "same"}]
    assert topup.matching(spec, [{"app_cpu": 8.0}]) == []  # a number never equals a word


def test_run_more_adds_one_repetition_per_point_and_keeps_the_campaigns_plan(tmp_path, fake_sweeps):
    cdir = campaign(tmp_path)
    made = topup.run_more(None, SPEC, [{"flows": 2}, {"flows": 4}], runs_dir=tmp_path, campaign="c")
    assert made == 2 and (cdir / "all-opts-2-r2").is_dir() and (cdir / "all-opts-4-r2").is_dir()
    assert not (cdir / "all-opts-1-r2").exists()
    assert [s.grid for s in fake_sweeps] == [{"flows": [2]}, {"flows": [4]}]  # one sweep per point: no product
    plan = json.loads((cdir / "sweep.json").read_text())
    assert plan["order"] == ["original plan"] and len(plan["top_ups"]) == 2
    topup.run_more(None, SPEC, [{"flows": 2}], runs_dir=tmp_path, campaign="c")
    assert (cdir / "all-opts-2-r3").is_dir()


def test_a_top_up_adds_unprofiled_runs_in_the_campaigns_proportion(tmp_path, fake_sweeps):
    """3 profiled and 1 unprofiled run planned per point: every third profiled run a top-up adds
    brings an unprofiled one with it, so perf's cost compares runs of the same stretch of time."""
    spec = SweepSpec(workload="one-to-one", configs=["all-opts"], grid={"flows": [1, 2]}, repetitions=3,
                     unprofiled_repetitions=1)
    cdir = campaign(tmp_path, spec)
    added = []
    for _ in range(6):
        before = {p.name for p in cdir.iterdir()} | {".sweep.lock"}  # the campaign's lock, held per round
        added.append(topup.run_more(None, spec, [{"flows": 2}], runs_dir=tmp_path, campaign="c"))
        assert {p.name for p in cdir.iterdir()} - before <= {f"all-opts-2-{t}" for t in
                                                              ("r3", "r4", "r5", "r6", "r7", "r8", "u1", "u2")}
    assert added == [1, 1, 2, 1, 1, 2]  # r3, r4, then r5 with u1 (6 profiled: 2 unprofiled), ...
    assert sorted(p.name for p in cdir.iterdir() if p.name.startswith("all-opts-2-u")) == [
        "all-opts-2-u0", "all-opts-2-u1", "all-opts-2-u2"]
    assert not (cdir / "all-opts-1-u1").exists()  # the point not topped up keeps its one
    assert [topup.unprofiled_runs_due(spec, n) for n in (2, 3, 5, 6, 9)] == [0, 1, 1, 2, 3]
    assert topup.unprofiled_runs_due(SPEC, 30) == 0  # a campaign without unprofiled runs gets none


def _kill_during_the_round(runs_dir):
    """In a forked child: run_more whose sweep writes its first run and then waits for kill -9."""
    import time

    def run_sweep(tb, spec, **kw):
        write_run(runs_dir / "c", spec.points()[0], spec.repetitions - 1)
        (runs_dir / "ready").touch()  # the run is on disk
        time.sleep(60)
    topup.run_sweep = run_sweep
    topup.run_more(None, SPEC, [{"flows": 2}], runs_dir=runs_dir, campaign="c")


def test_a_top_up_killed_during_its_round_keeps_the_plan_and_the_next_top_up_finishes_the_round(tmp_path,
                                                                                                fake_sweeps):
    """#45: run_sweep rewrote sweep.json with the round's one-point spec and run_more put the plan
    back only after the round, so kill -9 during any round left the campaign planned as one point
    (a copy of the BIG TCP campaign: 2x2 points and 5 repetitions became 1 point and 6). The round is
    now recorded under top_ups before its runs; the plan is never written."""
    import multiprocessing
    import os
    import signal
    import time
    cdir = campaign(tmp_path)
    plan = json.loads((cdir / "sweep.json").read_text())
    child = multiprocessing.get_context("fork").Process(target=_kill_during_the_round, args=(tmp_path,))
    child.start()
    deadline = time.monotonic() + 20
    while not (tmp_path / "ready").exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "ready").exists(), "the child never reached its round"
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    after = json.loads((cdir / "sweep.json").read_text())
    assert after["spec"] == plan["spec"] and after["order"] == ["original plan"]
    [record] = after["top_ups"]
    assert record["state"] == "running" and record["spec"]["grid"] == {"flows": [2]}
    assert topup.campaign_spec(tmp_path, "c") == SPEC  # what every later top-up reads
    # the next top-up finishes that round first (the fake sweep skips the run the child made)
    assert topup.fill(None, runs_dir=tmp_path, campaign="c", min_clean=1, rounds=1) == []
    [record] = json.loads((cdir / "sweep.json").read_text())["top_ups"]
    assert "state" not in record and record["resumed"] and (record["ran"], record["failed"]) == (0, 0)
    assert [s.grid for s in fake_sweeps] == [{"flows": [2]}]


def test_a_decisive_round_killed_during_its_runs_still_counts_its_look(tmp_path, fake_sweeps, monkeypatch):
    """A look is taken when a round is chosen: recorded before its runs, so a top-up stopped during
    them cannot give the campaign more looks than the design's LOOKS allow."""
    cdir = campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS), {"F09": [{"flows": 4}]})

    def stopped(*a, **kw):
        raise KeyboardInterrupt
    real = topup.run_sweep
    monkeypatch.setattr(topup, "run_sweep", stopped)
    with pytest.raises(KeyboardInterrupt):
        topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=10,
                     budget_minutes=BUDGET_MINUTES)
    [looked] = json.loads((cdir / "sweep.json").read_text())["decisive_top_ups"]
    assert looked["rounds"] == 1 and looked["state"] == "running" and looked["stopped"].startswith("interrupted")
    monkeypatch.setattr(topup, "run_sweep", real)
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=100,
                       budget_minutes=BUDGET_MINUTES)
    # the interrupted round is finished first; the design's looks less the one taken remain
    assert log.rounds == verdicts.LOOKS - 2 and log.stopped.startswith(f"the design's {verdicts.LOOKS} looks")
    assert json.loads((cdir / "sweep.json").read_text())["spec"] == asdict(SPEC)


def test_a_decisive_top_up_killed_in_a_later_round_keeps_the_runs_of_the_rounds_before(tmp_path, fake_sweeps,
                                                                                     monkeypatch):
    """The record said "runs": 0 until the whole top-up ended: one killed in its second round hid the
    runs its first had made."""
    cdir = campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):  # never decided
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS), {"F09": [{"flows": 4}]})
    real, calls = topup.run_sweep, []

    def second_round_killed(*a, **kw):  # a round is as many runs as the campaign planned: 2, one sweep each
        calls.append(1)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real(*a, **kw)
    monkeypatch.setattr(topup, "run_sweep", second_round_killed)
    with pytest.raises(KeyboardInterrupt):
        topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=10,
                     budget_minutes=BUDGET_MINUTES)
    [record] = json.loads((cdir / "sweep.json").read_text())["decisive_top_ups"]
    assert record["rounds"] == 2 and record["state"] == "running" and record["runs"] == 2


def test_decide_tops_up_until_the_judge_is_decided_and_records_it(tmp_path, fake_sweeps):
    cdir = campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):  # n=4 undecided until it has 4 runs
        runs = [p for p in (runs_dir / name).iterdir() if p.name.startswith("all-opts-4-")]
        wanted = {"F09": [{"flows": 4}]} if len(runs) < 4 else {}
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS), wanted)
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=10,
                       budget_minutes=BUDGET_MINUTES)
    # one round of as many runs as the campaign planned (2) decides it: one look more, not two
    assert log.runs == 2 and log.rounds == 1 and log.stopped.startswith("no verdict asks for more runs")
    record = json.loads((cdir / "sweep.json").read_text())["decisive_top_ups"][0]
    assert record["runs"] == 2 and record["budget"] == {"runs": 10, "minutes": BUDGET_MINUTES}
    assert record["per_round"][0] == {"findings": ["F09"], "points": [{"flows": 4}], "runs": 2}


def test_embedded_shape_follows_the_campaigns_testbed():
    m = {"testbed": {"kind": "embedded", "rx_steering": "napi-thread", "endpoints": {
        "sender": {"role": "sender", "cpus": [0]}, "sender2": {"role": "sender2", "cpus": [0]},
        "receiver": {"role": "receiver", "cpus": [1]}}}}
    assert topup.embedded_shape(m) == {"sender_cpus": (0,), "receiver_cpus": (1,), "n_senders": 2,
                                       "n_receivers": 1, "steering": "napi-thread"}
    old = {"testbed": {"kind": "embedded", "endpoints": m["testbed"]["endpoints"]}}
    assert topup.embedded_shape(old)["steering"] == "rps"  # recorded before the receive path was a property
    with pytest.raises(ValueError, match="servers"):
        topup.embedded_shape({"testbed": {"kind": "servers", "endpoints": {}}})


def test_a_zero_budget_judges_once_and_runs_nothing(tmp_path, fake_sweeps, monkeypatch):
    campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS), {"F09": [{"flows": 4}]})
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=0,
                       budget_minutes=BUDGET_MINUTES)
    assert log.runs == 0 and not fake_sweeps and log.stopped.startswith("budget: 0 runs")


def test_a_rehearsal_testbed_is_never_topped_up(tmp_path, fake_sweeps):
    """Its runs decide no verdict (flags.flagged), so no run is added to decide one, and nothing is judged."""
    campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):
        raise AssertionError("a rehearsal's campaign is not judged")
    log = topup.decide(SimpleNamespace(rehearsal="emulated NIC under TCG"), judge, runs_dir=tmp_path, campaign="c",
                       reference_dir="ref", budget_runs=10, budget_minutes=BUDGET_MINUTES)
    assert log.runs == 0 and not fake_sweeps and log.stopped == "not topped up: a rehearsal (emulated NIC under TCG)"
    # nor filled: its runs are all flagged, so every point would lack clean runs at every round
    assert topup.fill(SimpleNamespace(rehearsal="emulated NIC under TCG"), runs_dir=tmp_path, campaign="c",
                      min_clean=3, rounds=2) == [] and not fake_sweeps


def test_a_campaign_without_a_clean_run_is_not_judged_and_says_so(tmp_path, fake_sweeps):
    campaign(tmp_path)

    def judge(runs_dir, name, reference_dir):
        raise FileNotFoundError(f"campaign {name} under {runs_dir} has no usable one-to-one run")
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=5,
                       budget_minutes=1)
    assert log.runs == 0 and log.stopped.startswith("nothing to judge: campaign c under")


@pytest.fixture
def busy():
    yield BUSY
    BUSY.clear()


def test_points_whose_every_run_was_flagged_are_topped_up_though_every_verdict_is_decided(tmp_path, fake_sweeps,
                                                                                         busy):
    busy.add(4)
    campaign(tmp_path)  # n=4: both runs flagged for foreign load
    busy.clear()        # the machine quietens: the next run is clean

    def judge(runs_dir, name, reference_dir):
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS))  # decided, on the points that have clean runs
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=10,
                       budget_minutes=BUDGET_MINUTES)
    assert log.per_round == [{"findings": [topup.FLAGGED_RUNS], "points": [{"config": "all-opts", "flows": 4}],
                              "runs": 2}]
    assert log.stopped.startswith("no verdict asks for more runs")


def test_a_point_left_with_fewer_clean_runs_than_planned_is_topped_up(tmp_path, fake_sweeps, busy):
    """3 runs planned; a busy spell flagged two of n=4's: it is judged on one clean run, so it is
    run again until it has 3, though every verdict is decided. An unprofiled run does not count."""
    spec = SweepSpec(workload="one-to-one", configs=["all-opts"], grid={"flows": [1, 4]}, repetitions=3,
                     unprofiled_repetitions=1)
    cdir = campaign(tmp_path, spec)
    for rep in (0, 1):
        path = cdir / f"all-opts-4-r{rep}" / "manifest.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "contaminated": True}))
    manifests = [json.loads(p.read_text()) for p in sorted(cdir.glob("*/manifest.json"))]
    assert topup.short_of_clean_runs(manifests, 3) == [{"config": "all-opts", "flows": 4}]
    assert topup.short_of_clean_runs(manifests, 1) == []  # one clean run is left

    def judge(runs_dir, name, reference_dir):
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS))
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=10,
                       budget_minutes=BUDGET_MINUTES)
    assert log.rounds == 1 and log.per_round[0]["points"] == [{"config": "all-opts", "flows": 4}]
    # a round adds as many as were planned (3), with the unprofiled run they call for
    assert sorted(p.name for p in cdir.iterdir() if p.name.startswith("all-opts-4-")) == [
        "all-opts-4-r0", "all-opts-4-r1", "all-opts-4-r2", "all-opts-4-r3", "all-opts-4-r4", "all-opts-4-r5",
        "all-opts-4-u0", "all-opts-4-u1"]
    assert log.per_round[0]["findings"] == [topup.FLAGGED_RUNS] and log.runs == 4


def test_a_campaign_that_stays_flagged_is_topped_up_within_the_budget_and_says_why_it_stopped(tmp_path, fake_sweeps,
                                                                                              busy):
    from hostnet.sections import common
    busy.update({1, 2, 4})  # every run flagged, and every new one too

    def judge(runs_dir, name, reference_dir):
        raise common.NoCleanRun(f"campaign {name} has no clean one-to-one run: 6 of 6 flagged", [])
    campaign(tmp_path)
    log = topup.decide(None, judge, runs_dir=tmp_path, campaign="c", reference_dir="ref", budget_runs=7,
                       budget_minutes=BUDGET_MINUTES)
    assert log.runs == 6 and log.rounds == 1  # 3 points, 2 runs each; a second round would exceed 7 runs
    assert log.stopped == ("nothing to judge: campaign c has no clean one-to-one run: 6 of 6 flagged; "
                           "budget: 7 runs would be exceeded (6 made, 3 more asked)")
    manifests = [json.loads(p.read_text()) for p in sorted((tmp_path / "c").glob("*/manifest.json"))]
    assert topup.short_of_clean_runs(manifests, 2) == [{"config": "all-opts", "flows": n} for n in (1, 2, 4)]


def test_a_verdicts_numpy_points_are_recorded_as_plain_numbers():
    """pandas hands out numpy ints; the top-up's record of them in sweep.json must not fail after
    the runs are done (it once did, at the end of a BIG TCP campaign)."""
    import json

    import numpy as np
    assert json.loads(json.dumps({"points": [{"big_tcp_bytes": np.int64(65536)}, {"x": np.float64(0.5)}]},
                                 default=store.campaign.plain)) == {"points": [{"big_tcp_bytes": 65536}, {"x": 0.5}]}
    with pytest.raises(TypeError, match="ndarray is not JSON serializable"):
        json.dumps({"a": np.zeros(2)}, default=store.campaign.plain)


def test_points_whose_runs_were_all_flagged_or_too_short_lack_clean_runs():
    spec = SweepSpec(configs=["all-opts"], grid={"loss_rate": [0, 0.01]}, repetitions=2)
    manifests = [{"status": "ok", "contaminated": True, "point": {"id": "a", "config": "all-opts", "loss_rate": 0.0}},
                 {"status": "ok", "contaminated": False, "point": {"id": "b", "config": "all-opts", "loss_rate": 0.0}},
                 {"status": "ok", "contaminated": True, "point": {"id": "c", "config": "all-opts", "loss_rate": 0.01}},
                 {"status": "failed", "point": {"id": "c", "config": "all-opts", "loss_rate": 0.01}}]
    assert topup.lacking_points(spec, manifests, min_clean=1) == [{"config": "all-opts", "loss_rate": 0.01}]
    assert topup.lacking_points(spec, manifests[:2] + [{**manifests[2], "contaminated": False}], 1) == []
    assert len(topup.lacking_points(spec, manifests, min_clean=2)) == 2  # one clean run has no CI
    # a run whose window was too short is left out of analysis, so it does not count as clean either
    short = manifests[:2] + [{**manifests[2], "contaminated": False, "short_window": "window 0.4 s of 2 s"}]
    assert topup.lacking_points(spec, short, 1) == [{"config": "all-opts", "loss_rate": 0.01}]


def test_fill_repeats_only_the_points_without_enough_clean_runs_and_stops_after_its_rounds(tmp_path, fake_sweeps,
                                                                                          busy):
    busy.add(4)  # n=4 stays flagged however often it runs
    cdir = campaign(tmp_path)
    lacking = topup.fill(None, runs_dir=tmp_path, campaign="c", min_clean=1, rounds=2)
    assert [s.grid for s in fake_sweeps] == [{"flows": [4]}, {"flows": [4]}]
    assert (cdir / "all-opts-4-r3").is_dir() and not (cdir / "all-opts-4-r4").exists()
    assert lacking == [{"config": "all-opts", "flows": 4}]
    assert len(json.loads((cdir / "sweep.json").read_text())["top_ups"]) == 2
    fake_sweeps.clear()
    busy.clear()  # the machine is quiet again: one more round gives n=4 its clean run, and that is enough
    assert topup.fill(None, runs_dir=tmp_path, campaign="c", min_clean=1, rounds=2) == [] and len(fake_sweeps) == 1


def test_a_time_budget_campaign_is_topped_up_by_bench_and_batch_size(tmp_path, fake_sweeps):
    """Its two experiments (microbenchmarks, batching) live in one campaign and one sweep.json: a
    verdict naming a batch size reaches exactly that point, and the flagged microbenchmarks too."""
    spec = SweepSpec(workload="time-budget", configs=["no-opts"],
                     grid={"bench": ["micro", "udp-batch"], "batch": [1, 32]}, repetitions=1)
    assert spec.stored_names == {"time-budget-micro", "udp-batch"}
    cdir = tmp_path / "c"
    cdir.mkdir()
    (cdir / "sweep.json").write_text(json.dumps({"spec": asdict(spec)}))
    assert topup.matching(spec, [{"batch": 32}]) == [{"config": "no-opts", "bench": "udp-batch", "batch": 32}]
    assert topup.matching(spec, [{"bench": "micro"}]) == [{"config": "no-opts", "bench": "micro"}]
    micro = {"schema": SCHEMA_VERSION, "run_id": "m", "experiment": "time-budget-micro", "status": "ok",
             "repetition": 0, "point": {"id": "m", "config": "no-opts", "bench": "micro"}}
    (cdir / "m").mkdir()
    (cdir / "m" / "manifest.json").write_text(json.dumps(micro))
    (cdir / "m" / "tidy.csv").write_text(",".join(TIDY_COLUMNS) + "\n")
    lacking = topup.lacking_points(spec, topup.manifests_of(spec, tmp_path, "c"), min_clean=1)
    assert [p.get("batch") for p in lacking] == [1, 32]  # the micro run counts; neither batch size has a run


# --- the loop: judge, top up the points the verdicts want, until decided or the budget is spent ---
class FakeCampaign:
    """A judge and a runner over a fake campaign: a point is decided once it has `needed` runs."""

    def __init__(self, needed: int, start: int = 2):
        self.runs = {"a": start, "b": start}
        self.needed = needed

    def judge(self):
        lacking = [{"config": p} for p, n in self.runs.items() if n < self.needed]
        return verdicts.Verdicts(pd.DataFrame(columns=verdicts.COLUMNS), {"F02": lacking} if lacking else {})

    def run_more(self, points):
        for p in points:
            self.runs[p["config"]] += 1
        return len(points)


def test_top_up_stops_when_decided():
    c = FakeCampaign(needed=4)
    log = topup.top_up_until_decided(c.judge, c.run_more, budget_runs=100, budget_minutes=60)
    assert c.runs == {"a": 4, "b": 4} and log.rounds == 2 and log.runs == 4
    assert log.stopped.startswith("no verdict asks for more runs")


def test_top_up_stops_at_the_run_budget_and_at_the_time_budget():
    c = FakeCampaign(needed=50)
    log = topup.top_up_until_decided(c.judge, c.run_more, budget_runs=5, budget_minutes=60)
    assert log.runs == 4 and log.stopped.startswith("budget: 5 runs")
    ticks = iter(range(0, 10_000, 120))  # each look at the clock: 2 minutes later
    c = FakeCampaign(needed=50)
    log = topup.top_up_until_decided(c.judge, c.run_more, budget_runs=100, budget_minutes=5,
                                     clock=lambda: next(ticks))
    assert log.stopped == "budget: 5 minutes spent" and log.rounds == 2


def test_top_up_stops_when_no_run_can_be_made():
    c = FakeCampaign(needed=50)
    log = topup.top_up_until_decided(c.judge, lambda points: 0, budget_runs=100, budget_minutes=60)
    assert log.rounds == 1 and log.stopped == "no run could be made"
