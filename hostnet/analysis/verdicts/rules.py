"""A Judgement (verdict, what the data show, what would decide it and which points need runs) and
the rules that make one from intervals: ordered, direction, sized, similar, largest; combine
with Holm's correction over a finding's parts; not_testable."""
from __future__ import annotations


from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .data import MIN_BUSY_SAMPLES, Shares
from .intervals import Difference, difference
from .vocabulary import (
    AT_PROFILE, CONFIDENCE, INCONCLUSIVE, IN_DIRECTION, LEVEL, MAX_RUNS, MIN_RUNS, MIN_RUNS_TO_GIVE_UP,
    NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VOCABULARY)


@dataclass(frozen=True)
class Judgement:
    """A verdict, what the data show, and for an undecided one what would decide it and which
    points (partial sweep points, e.g. {"config": "tsogro"}) need more clean runs."""
    verdict: str
    shows: str
    decide: str = ""
    points: tuple[dict, ...] = field(default=())
    # for a not-reproduced verdict: whether it still holds at a stricter confidence level (combine's
    # familywise correction asks); None: not known, taken as holding
    holds: Callable[[float], bool] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.verdict not in VOCABULARY:
            raise ValueError(f"{self.verdict!r} is not a verdict; one of {', '.join(VOCABULARY)}")

    @property
    def text(self) -> str:
        if not self.decide:
            return self.shows
        return f"{self.shows}; {self.decide}" if self.decide.startswith(AT_PROFILE) else \
            f"{self.shows}; to decide: {self.decide}"


def _more_runs(diffs: Sequence[Difference], points: Sequence[dict]) -> tuple[str, tuple[dict, ...]]:
    """What would decide the undecided differences, and their points (none when more than MAX_RUNS
    clean runs per point would be needed: a top-up would spend its budget without deciding)."""
    wanted = [d.runs_to_decide() for d in diffs]
    if any(w is None for w in wanted):
        need = f"at least {MIN_RUNS} clean runs per point"
    elif max(wanted) > MAX_RUNS and min(d.n for d in diffs) < MIN_RUNS_TO_GIVE_UP:
        need = _spread_first(min(d.n for d in diffs))
    elif max(wanted) > MAX_RUNS:  # no top-up: repetitions within reason would not decide it
        n = min(d.n for d in diffs)
        return (f"{AT_PROFILE}: it would take more than {MAX_RUNS} clean runs per point (the difference is small "
                f"against the run-to-run spread of {n} runs); a longer window or a quieter host"), ()
    else:
        need = f"about {max(wanted)} clean runs per point (now {min(d.n for d in diffs)})"
    return need, tuple(p for p in points if p)


def _spread_first(n: int) -> str:
    return (f"{MIN_RUNS_TO_GIVE_UP} clean runs per point before the spread can rule repetitions out (now {n}; "
            f"at today's spread more than {MAX_RUNS})")


def ordered(steps: Sequence[tuple[str, Sequence[float], dict]], *, unit: str = "", fmt: str = ".2f") -> Judgement:
    """The claim 'each step is above the previous one': steps are (label, clean-run values, point)."""
    if len(steps) < 2:
        raise ValueError("an ordering needs at least two steps")
    diffs = [difference(a[1], b[1]) for a, b in zip(steps, steps[1:], strict=False)]
    shows = f"{steps[0][0]} {np.mean(steps[0][1]):{fmt}}" + "".join(
        f" {d.sign if d.sign != '?' else '≈'} {s[0]} {d.mean_b:{fmt}}" for d, s in zip(diffs, steps[1:], strict=True))
    shows += f"{' ' + unit if unit else ''} (means; ≈: the {LEVEL} CI of the step's difference contains 0); steps: "
    shows += "; ".join(f"{s[0]}: {d.diff:+{fmt}} [{d.lo:+{fmt}}, {d.hi:+{fmt}}]"
                       for d, s in zip(diffs, steps[1:], strict=True))
    failing = [d for d in diffs if d.sign == ">"]
    strict = familywise_level(len(diffs))
    if any(d.decided_at(strict) == ">" for d in failing):  # a union of steps: Holm's first step
        return Judgement(NOT_REPRODUCED, shows + _holm_note(len(diffs)), points=tuple(
            p for a, b in zip(steps, steps[1:], strict=False) for p in (a[2], b[2]) if p),
            holds=lambda c: any(d.decided_at(familywise_level(len(diffs), c)) == ">" for d in failing))
    if failing:
        points = [p for d, (a, b) in zip(diffs, zip(steps, steps[1:], strict=False), strict=True) if d in failing
                  for p in (a[2], b[2])]
        need, pts = _more_runs(failing, points)
        return Judgement(INCONCLUSIVE, shows + f"; a step falls at {LEVEL} but not at the familywise level"
                         f"{_holm_note(len(diffs))}", need, pts)
    if all(d.sign == "<" for d in diffs):
        return Judgement(REPRODUCED, shows)
    open_ = [(d, pair) for d, pair in zip(diffs, zip(steps, steps[1:], strict=False), strict=True) if d.sign == "?"]
    need, points = _more_runs([d for d, _ in open_], [p for _, pair in open_ for p in (pair[0][2], pair[1][2])])
    return Judgement(INCONCLUSIVE, shows, need, points)


def direction(d: Difference, *, want: str, what: str, points: Sequence[dict] = (), unit: str = "",
              fmt: str = ".1f") -> Judgement:
    """The claim 'b is above a' (want '<') or 'below a' (want '>')."""
    shows = f"{what}: {d.text(fmt, unit)}"
    if d.sign == want:
        return Judgement(REPRODUCED, shows)
    if d.sign != "?":
        return _against(shows, [d], points)
    return Judgement(INCONCLUSIVE, shows, *_more_runs([d], points))


def _against(shows: str, diffs: Sequence[Difference], points: Sequence[dict]) -> Judgement:
    """Not reproduced, decided by one of `diffs` (whose signs decide against the claim); it holds at a
    stricter level while one of them keeps its sign there."""
    return Judgement(NOT_REPRODUCED, shows, points=tuple(p for p in points if p),
                     holds=lambda c: any(d.decided_at(c) == d.sign for d in diffs))


def sized(d: Difference, *, paper_pct: float, what: str, points: Sequence[dict] = (), unit: str = "",
          fmt: str = ".1f") -> Judgement:
    """The claim 'b differs from a by about paper_pct %': the paper's value inside the CI of the
    relative change reproduces it; a decided change of the same sign but another size reproduces
    it in direction."""
    lo, hi = d.rel(d.lo), d.rel(d.hi)
    shows = (f"{what}: {d.text(fmt, unit)}; change {d.rel(d.diff):+.0f} % ({LEVEL} CI {lo:+.0f} … {hi:+.0f} %), "
             f"paper {paper_pct:+.0f} %")
    want = "<" if paper_pct > 0 else ">"
    if d.sign == "?":
        return Judgement(INCONCLUSIVE, shows, *_more_runs([d], points))
    if d.sign != want:
        return _against(shows, [d], points)
    if lo <= paper_pct <= hi:
        return Judgement(REPRODUCED, shows)
    return Judgement(IN_DIRECTION, shows + "; the direction is the paper's, the size is not")


def similar(d: Difference, *, margin_pct: float, what: str, points: Sequence[dict] = (), unit: str = "",
            fmt: str = ".1f") -> Judgement:
    """The claim 'a and b differ little': the CI of the relative change wholly inside ± margin_pct
    reproduces it, wholly outside does not."""
    lo, hi = d.rel(d.lo), d.rel(d.hi)
    shows = (f"{what}: {d.text(fmt, unit)}; change {d.rel(d.diff):+.0f} % ({LEVEL} CI {lo:+.0f} … {hi:+.0f} %), "
             f"'little' taken as within ±{margin_pct:.0f} %")
    if -margin_pct <= lo and hi <= margin_pct:
        return Judgement(REPRODUCED, shows)
    if lo > margin_pct or hi < -margin_pct:
        def outside(c: float) -> bool:
            lo_c, hi_c = (d.rel(x) for x in d.interval(c))
            return lo_c > margin_pct or hi_c < -margin_pct
        return Judgement(NOT_REPRODUCED, shows, points=tuple(p for p in points if p), holds=outside)
    if d.n < MIN_RUNS:
        return Judgement(INCONCLUSIVE, shows, f"at least {MIN_RUNS} clean runs per point", tuple(points))
    room = abs(margin_pct * d.mean_a / 100) - abs(d.diff)
    wanted = d.runs_for(room)
    if wanted > MAX_RUNS and d.n < MIN_RUNS_TO_GIVE_UP:
        return Judgement(INCONCLUSIVE, shows, _spread_first(d.n), tuple(points))
    if wanted > MAX_RUNS:  # as _more_runs: no top-up where repetitions within reason would not decide
        return Judgement(INCONCLUSIVE, shows, f"{AT_PROFILE}: it would take more than {MAX_RUNS} clean runs per "
                                              f"point (the change sits near the ±{margin_pct:.0f} % margin)")
    return Judgement(INCONCLUSIVE, shows, f"about {wanted} clean runs per point (now {d.n})", tuple(points))


def largest(shares: dict[str, Sequence[float]], want: str, *, what: str, points: Sequence[dict] = ()) -> Judgement:
    """The claim 'category `want` is the largest': shares maps category → per-run shares (%) of the
    same runs, in the same order; `want` must lead every other category by a paired CI above 0.
    Runs under the sample floor (shares_by_run) are named; with none left there is no verdict, and no
    top-up either: more runs at the same sampling would be as thin."""
    floor = shares.note() if isinstance(shares, Shares) else ""
    means = {c: float(np.mean(v)) for c, v in shares.items() if len(v)}
    if not means and floor:
        return Judgement(INCONCLUSIVE, f"{what}: no run with enough samples{floor}",
                         f"{AT_PROFILE}: it needs runs with at least {MIN_BUSY_SAMPLES:,} busy samples per side "
                         "(a higher perf frequency or a longer window)")
    shown = [c for c in means if means[c] > 0 or c == want]  # a layer without samples is no rival to name
    if want not in means:
        return Judgement(INCONCLUSIVE, f"{what}: no {want} samples", "a profile of this point")
    top = max(means, key=means.get)
    order = sorted(means, key=means.get, reverse=True)
    shows = f"{what}: " + ", ".join(f"{c} {means[c]:.0f} %" for c in [c for c in order if c in shown][:3]) + floor
    if top != want:
        d = difference(shares[want], shares[top], paired=True)  # > 0: top above want
        shows += f" ({top} − {want}: {d.diff:+.0f} points, {LEVEL} CI {d.lo:+.0f} … {d.hi:+.0f})"
        if d.sign == "<":
            return _against(shows, [d], points)
        return Judgement(INCONCLUSIVE, shows, *_more_runs([d], points))
    rival = order[1] if len(order) > 1 else None
    if rival is None:
        return Judgement(REPRODUCED, shows)
    d = difference(shares[rival], shares[want], paired=True)
    shows += f" ({want} − {rival}: {d.diff:+.0f} points, {LEVEL} CI {d.lo:+.0f} … {d.hi:+.0f})"
    if d.sign == "<":
        return Judgement(REPRODUCED, shows)
    return Judgement(INCONCLUSIVE, shows, *_more_runs([d], points))


def familywise_level(k: int, confidence: float = CONFIDENCE) -> float:
    """The confidence level one of k claims must reach for 'at least one of them fails' to keep the
    familywise error at 1 − confidence: Holm's first step (α/k), which is all a union needs."""
    return 1 - (1 - confidence) / max(k, 1)


def _holm_note(k: int) -> str:
    return f" (familywise over {k} claims: Holm, α = {1 - CONFIDENCE:.4f}/{k})" if k > 1 else ""


def combine(parts: Sequence[Judgement], joiner: str = "; ") -> Judgement:
    """A finding made of several claims (every side, every point): not reproduced if one is not at
    the familywise level (Holm over the parts: a part decided against at CONFIDENCE that does not hold at
    Holm's stricter level is undecided); reproduced if all are (an intersection-union test needs no correction);
    in direction if all are at least that; else inconclusive."""
    k = len(parts)
    failing = [p for p in parts if p.verdict == NOT_REPRODUCED]
    held = [p for p in failing if p.holds is None or p.holds(familywise_level(k))]
    if failing and not held:  # each fails at CONFIDENCE only: undecided under the familywise correction
        note = f"decided against at {LEVEL} but not at the familywise level{_holm_note(k)}"
        parts = [Judgement(INCONCLUSIVE, p.shows, f"more clean runs ({note})", p.points)
                 if p.verdict == NOT_REPRODUCED else p for p in parts]
    verdicts = [p.verdict for p in parts]
    shows = joiner.join(p.shows for p in parts)
    if NOT_TESTABLE in verdicts:
        return Judgement(NOT_TESTABLE, shows, "; ".join(p.decide for p in parts if p.decide))
    if held:
        return Judgement(NOT_REPRODUCED, shows + _holm_note(k), points=tuple(pt for p in held for pt in p.points),
                         holds=lambda c: any(p.holds is None or p.holds(familywise_level(k, c)) for p in held))
    if all(v == REPRODUCED for v in verdicts):
        return Judgement(REPRODUCED, shows)
    if all(v in (REPRODUCED, IN_DIRECTION) for v in verdicts):
        return Judgement(IN_DIRECTION, shows)
    open_ = [p for p in parts if p.verdict == INCONCLUSIVE]
    points = {_key(pt): pt for p in open_ for pt in p.points}  # each point once
    return Judgement(INCONCLUSIVE, shows, "; ".join(dict.fromkeys(p.decide for p in open_ if p.decide)),
                     tuple(points.values()))


def not_testable(shows: str, needs: str) -> Judgement:
    """A finding this testbed cannot test: what it shows, and what hardware or capability it needs."""
    return Judgement(NOT_TESTABLE, shows, needs)


def _key(point: dict) -> str:
    return repr(sorted(point.items()))
