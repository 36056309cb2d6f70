"""Top a campaign up: one mechanism (run_more: one more repetition of named points, through the
sweep) under two policies, for every experiment the sweep runs (the time budget's benches too).

fill(): until every point has a few runs free of foreign load (a bounded number of rounds).
decide(): until the verdicts are decided: more clean repetitions of exactly the points an
inconclusive verdict depends on (top_up_until_decided), each round as many as the campaign
planned, within a budget and within the sequential design's looks (verdicts.LOOKS, counted over
every decisive round the campaign has had).

Each section offers judge(runs_dir, campaign, reference_dir) -> Verdicts; its `wanted` names the
points. Points whose flagged runs (foreign load: a busy machine) left fewer clean runs
than planned are topped up too, within the same budget: they would be judged on too few. A round
adds unprofiled runs in the campaign's proportion (unprofiled_runs_due). The extra runs go into
the same campaign (run_sweep skips repetitions already made), and the campaign's sweep.json keeps
its plan plus a record of every round under "top_ups".

A kill at any moment leaves the plan intact: a round's one-point spec is recorded under "top_ups"
(state "running") before its runs start, never written over the plan, and the next fill() or
decide() finishes such a round first (finish_interrupted). A decisive round's look is recorded
before its runs too, so a killed top-up's looks still count against the design's LOOKS.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial

import pandas as pd

from .. import store
from .sweep import SweepSpec, run_sweep
from ..analysis.metrics import unprofiled
from ..analysis.verdicts import AT_PROFILE, LOOKS, MAX_RUNS, MIN_RUNS, Verdicts
from ..analysis import flags

log = logging.getLogger(__name__)


def campaign_spec(runs_dir, campaign: str) -> SweepSpec:
    return SweepSpec.from_dict(store.Campaign(runs_dir, campaign).plan()["spec"])


def same_value(a, b) -> bool:
    """Grid values as a sweep stored them and as a verdict names them: 8 and 8.0 and "8" are one point."""
    if str(a) == str(b):
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def matching(spec: SweepSpec, partial_points: list[dict]) -> list[dict]:
    """The spec's points that agree with any of the partial points on every key it names."""
    return [p for p in spec.points()
            if any(all(same_value(p.get(k), v) for k, v in want.items()) for want in partial_points)]


def manifests_of(spec: SweepSpec, runs_dir, campaign: str) -> list[dict]:
    """The campaign's manifests of the experiments spec's runs are stored as."""
    names = spec.stored_names
    return [m for m in store.load_manifests(runs_dir, campaign) if m.get("experiment") in names]


def run_more(tb, spec: SweepSpec, points: list[dict], *, runs_dir, campaign: str) -> int:
    """One more repetition of each point (one sweep per point, so no grid product adds others), and
    an unprofiled run wherever the point's profiled runs then call for one in the campaign's
    proportion (unprofiled_runs_due); returns the runs made. The campaign's own plan in sweep.json
    is kept; each round is recorded under "top_ups" before it runs and completed after it."""
    where = store.Campaign(runs_dir, campaign)
    manifests = manifests_of(spec, runs_dir, campaign)
    made = 0
    with where.lock():  # held across the rounds: no second top-up records rounds meanwhile
        before = len(where.plan().get("top_ups", []))  # each round's seed its own, across calls too
        for i, point in enumerate(matching(spec, points)):
            same = [m for m in manifests if _same(m.get("point", {}), point)]
            reps = max([spec.repetitions - 1, *(m.get("repetition", 0) for m in same if not unprofiled(m))]) + 2
            made_off = [m.get("repetition", 0) for m in same if unprofiled(m)]
            off = max(max(made_off, default=-1) + 1, unprofiled_runs_due(spec, reps))
            one = replace(spec, configs=[point["config"]], grid={k: [v] for k, v in point.items() if k != "config"},
                          repetitions=reps, unprofiled_repetitions=off, seed=spec.seed + 1000 + before + i)
            record = {"spec": asdict(one), "state": RUNNING}
            index = where.edit_plan(partial(_append, key="top_ups", record=record))
            made += _round(tb, one, where, index)
    return made


RUNNING = "running"  # a top-up record's state from before its runs start until they are done


def finish_interrupted(tb, *, runs_dir, campaign: str) -> int:
    """Finish the top-up rounds a kill (or a lost host) interrupted: each recorded one-point sweep
    runs again (run_sweep skips the repetitions it made and redoes the one it was making). Returns
    the runs made."""
    where = store.Campaign(runs_dir, campaign)
    made = 0
    with where.lock():
        for index, record in enumerate(where.plan().get("top_ups", [])):
            if record.get("state") == RUNNING:
                made += _round(tb, SweepSpec.from_dict(record["spec"]), where, index, resumed=True)
    return made


def _round(tb, one: SweepSpec, where: store.Campaign, index: int, resumed: bool = False) -> int:
    done = run_sweep(tb, one, runs_dir=where.runs_dir, campaign=where.name, progress=False, top_up=True)

    def completed(plan):
        record = plan["top_ups"][index]
        record.pop("state", None)
        record.update(ran=done["ran"], failed=done["failed"], **({"resumed": True} if resumed else {}))
    where.edit_plan(completed)
    return done["ran"] + done["failed"]


def _append(plan: dict, key: str, record: dict) -> int:
    plan.setdefault(key, []).append(record)
    return len(plan[key]) - 1


def unprofiled_runs_due(spec: SweepSpec, profiled_runs: int) -> int:
    """The unprofiled runs a point with this many profiled runs has in the campaign's proportion
    (spec.unprofiled_repetitions per spec.repetitions, rounded down): a top-up adding profiled runs
    adds these too, so perf's cost (metrics.perf_cost) compares runs of the same stretch of time,
    not the sweep's unprofiled run with profiled runs made minutes later."""
    return profiled_runs * spec.unprofiled_repetitions // max(1, spec.repetitions)


def _same(a: dict, b: dict) -> bool:
    strip = {k: v for k, v in a.items() if k != "id"}
    return strip.keys() == b.keys() and all(same_value(v, b[k]) for k, v in strip.items())


def _rehearsal(tb, why: str) -> str:
    """The testbed's rehearsal reason ("" for one that measures), logged as the reason no run is added."""
    reason = getattr(tb, "rehearsal", "")
    if reason:
        log.info("no runs added on a rehearsal testbed (%s): %s", reason, why)
    return reason


def decide(tb, judge, *, runs_dir, campaign: str, reference_dir, budget_runs: int,
           budget_minutes: float) -> TopUpLog:
    """_decide under the campaign's lock: no sweep or other top-up writes its sweep.json meanwhile.
    A rehearsal testbed's runs judge nothing (flags.flagged), so none is added to decide a verdict."""
    if rehearsal := _rehearsal(tb, "its runs decide no verdict"):
        return TopUpLog(stopped=f"not topped up: a rehearsal ({rehearsal})")
    with store.Campaign(runs_dir, campaign).lock():
        return _decide(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=reference_dir,
                       budget_runs=budget_runs, budget_minutes=budget_minutes)


def _decide(tb, judge, *, runs_dir, campaign: str, reference_dir, budget_runs: int,
            budget_minutes: float) -> TopUpLog:
    """Top the campaign up on testbed tb until judge's verdicts are decided or the budget is spent
    (a live section's: LiveOptions.top_up in options.py; `hostnet top-up` names its own); the log
    (rounds, runs, why it stopped) is written to the campaign's sweep.json."""
    spec = campaign_spec(runs_dir, campaign)
    unjudged = []

    def judged() -> Verdicts:
        try:
            decided = judge(runs_dir, campaign, reference_dir)
            unjudged.clear()
        except FileNotFoundError as exc:  # no clean run at all yet: only the flagged points say what to add
            unjudged.append(str(exc))
            decided = Verdicts(pd.DataFrame())
        flagged = short_of_clean_runs(manifests_of(spec, runs_dir, campaign), min(MIN_RUNS, spec.repetitions))
        # a point whose runs were flagged (foreign load) is judged on too few: run it again
        return decided.asking(FLAGGED_RUNS, flagged) if flagged else decided
    where = store.Campaign(runs_dir, campaign)
    finish_interrupted(tb, runs_dir=runs_dir, campaign=campaign)
    # each earlier decisive round was a look at the verdicts: the design's looks are per campaign
    taken = sum(r.get("rounds", 0) for r in where.plan().get("decisive_top_ups", []))
    budget = {"runs": budget_runs, "minutes": budget_minutes}
    index = where.edit_plan(lambda plan: _append(plan, "decisive_top_ups", {
        "rounds": 0, "runs": 0, "state": RUNNING, "budget": budget,
        "stopped": "interrupted: the top-up was stopped during a round (its looks count)"}))

    def looked(points):  # recorded before the round's runs: a kill during them still counts the look
        where.edit_plan(lambda plan: plan["decisive_top_ups"][index].update(
            rounds=plan["decisive_top_ups"][index]["rounds"] + 1))
    def more(points) -> int:  # each round's runs counted as it ends: a kill in a later one keeps them
        made = run_more(tb, spec, points, runs_dir=runs_dir, campaign=campaign)
        where.edit_plan(lambda plan: plan["decisive_top_ups"][index].update(
            runs=plan["decisive_top_ups"][index]["runs"] + made))
        return made
    log = top_up_until_decided(judged, more,
                               budget_runs=budget_runs, budget_minutes=budget_minutes, rounds_taken=taken,
                               step=spec.repetitions, before_round=looked)
    if unjudged:
        log.stopped = f"nothing to judge: {unjudged[-1]}; {log.stopped}"
    where.edit_plan(lambda plan: plan["decisive_top_ups"].__setitem__(index, {
        "rounds": log.rounds, "runs": log.runs, "seconds": round(log.seconds), "stopped": log.stopped,
        "budget": budget, "per_round": log.per_round}))
    return log


@dataclass
class TopUpLog:
    rounds: int = 0
    runs: int = 0
    seconds: float = 0.0
    stopped: str = ""
    per_round: list[dict] = field(default_factory=list)


def top_up_until_decided(judge: Callable[[], Verdicts], run_more: Callable[[list[dict]], int], *,
                         budget_runs: int, budget_minutes: float, rounds_taken: int = 0, step: int = 1,
                         clock=time.monotonic, before_round: Callable[[list[dict]], None] = lambda points: None
                         ) -> TopUpLog:
    """Judge, then run `step` more clean repetitions of every point an inconclusive verdict needs
    (run_more(points) runs one of each and returns how many runs it made), until no verdict asks
    for more, the sequential design's LOOKS looks are taken (rounds_taken: the campaign's decisive
    rounds before this call; each round is one more look), or the budget (runs, or minutes of wall
    time) is spent. before_round(points) is told of each look before its runs (topup records it).
    Returns what it did and why it stopped."""
    log, start = TopUpLog(), clock()
    while True:
        wanted = judge().wanted
        points = list({repr(sorted(p.items())): p for pts in wanted.values() for p in pts}.values())
        if not points:
            log.stopped = (f"no verdict asks for more runs (each is decided, or {AT_PROFILE}: over {MAX_RUNS} runs "
                           "per point, or too few samples per run)")
            break
        if rounds_taken + log.rounds >= LOOKS - 1:
            log.stopped = (f"the design's {LOOKS} looks are taken (the planned runs and {LOOKS - 1} top-up rounds): "
                           f"a verdict still undecided is {AT_PROFILE}")
            break
        if log.runs + len(points) > budget_runs:
            log.stopped = f"budget: {budget_runs} runs would be exceeded ({log.runs} made, {len(points)} more asked)"
            break
        if (clock() - start) / 60 >= budget_minutes:
            log.stopped = f"budget: {budget_minutes:g} minutes spent"
            break
        before_round(points)
        made = 0
        for _ in range(max(1, min(step, (budget_runs - log.runs) // len(points)))):  # as many as the budget allows
            made += run_more(points)
        log.rounds += 1
        log.runs += made
        log.per_round.append({"findings": sorted(wanted), "points": points, "runs": made})
        if made == 0:
            log.stopped = "no run could be made"
            break
    log.seconds = clock() - start
    return log


def lacking_points(spec: SweepSpec, manifests: list[dict], min_clean: int) -> list[dict]:
    """The spec's points with fewer than min_clean successful runs free of foreign load (8 and 8.0
    one value, as same_value reads them)."""
    clean = [m.get("point", {}) for m in manifests if flags.usable(m)]
    return [p for p in spec.points() if sum(_same(c, p) for c in clean) < min(min_clean, spec.repetitions)]


def fill(tb, *, runs_dir, campaign: str, min_clean: int, rounds: int) -> list[dict]:
    """Another repetition of every point with fewer than min_clean runs free of foreign load (nor
    failed), up to `rounds` times (run_more, recorded in sweep.json under "top_ups"); flagged runs
    stay in the campaign (notebooks count them). Returns the points still lacking. On a rehearsal
    testbed none: its every run is flagged, so every point would lack clean runs forever."""
    if _rehearsal(tb, "no run of it is clean"):
        return []
    with store.Campaign(runs_dir, campaign).lock():
        return _fill(tb, runs_dir=runs_dir, campaign=campaign, min_clean=min_clean, rounds=rounds)


def _fill(tb, *, runs_dir, campaign: str, min_clean: int, rounds: int) -> list[dict]:
    spec = campaign_spec(runs_dir, campaign)
    finish_interrupted(tb, runs_dir=runs_dir, campaign=campaign)
    lacking = lacking_points(spec, manifests_of(spec, runs_dir, campaign), min_clean)
    for _ in range(rounds):
        if not lacking:
            break
        run_more(tb, spec, lacking, runs_dir=runs_dir, campaign=campaign)
        lacking = lacking_points(spec, manifests_of(spec, runs_dir, campaign), min_clean)
    return lacking


FLAGGED_RUNS = "flagged runs"  # what a top-up round names for points whose flagged runs left too few clean ones


def short_of_clean_runs(manifests: list[dict], wanted: int) -> list[dict]:
    """The points (without their id) that have flagged runs and fewer than `wanted` clean ones
    (profiled ones where the point has any: an unprofiled run gives no breakdown): runs left out of
    analysis (foreign load, a short window) leave the point judged on fewer than planned. Points
    that only failed are not among them: running those again would fail again. (fill's
    lacking_points is the other policy: it brings a fresh sweep's every point, failed ones too, to
    a few usable runs of any kind.)"""
    by_point: dict[str, tuple[dict, list[dict]]] = {}
    for m in manifests:
        point = {k: v for k, v in m.get("point", {}).items() if k != "id"}
        by_point.setdefault(repr(sorted(point.items())), (point, []))[1].append(m)
    short = []
    for point, ms in by_point.values():
        profiled = [m for m in ms if not unprofiled(m)] or ms
        if any(m["status"] == "ok" and flags.flagged(m) for m in profiled) and \
                sum(flags.usable(m) for m in profiled) < wanted:
            short.append(point)
    return short


def embedded_shape(manifest: dict) -> dict:
    """The embedded testbed a campaign's runs were made on (CPUs, endpoint counts, receive path), as
    testbed.embedded's keyword arguments: top-ups must be made on the same kind of testbed."""
    tb = manifest["testbed"]
    if tb["kind"] != "embedded":
        raise ValueError(f"campaign ran on a {tb['kind']} testbed: top it up with `--testbed FILE` naming it")
    eps = tb["endpoints"].values()
    senders = [e for e in eps if e["role"].startswith("sender")]
    receivers = [e for e in eps if e["role"].startswith("receiver")]
    return {"sender_cpus": tuple(senders[0]["cpus"]), "receiver_cpus": tuple(receivers[0]["cpus"]),
            "n_senders": len(senders), "n_receivers": len(receivers),
            "steering": tb.get("rx_steering", "rps")}
