"""One rule for every verdict: 'paper says / this run shows', judged the same way in every section.

The vocabulary is VOCABULARY. A comparison is decided by the confidence interval (at LEVEL, the
sequential design's per-look level: see CONFIDENCE) of the difference of two sets of clean runs
(Welch's t, or a paired t where both values come from the same runs), never by medians alone:

- a claimed direction (b above a) is *reproduced* when the interval lies above zero, *not
  reproduced* when it lies below, and *inconclusive* while it straddles zero;
- a claimed size ("about −43 %") is *reproduced* when the paper's value lies inside the interval
  of the relative change, *reproduced in direction* when the direction is decided but the size is
  not the paper's (both are given);
- a claimed absence of change ("changes little") is *reproduced* when the whole interval lies
  within ± the margin, *not reproduced* when it lies wholly outside it;
- a finding whose premise the testbed cannot establish is *not testable here*, with the reason.

On the embedded testbed every finding is judged twice (under_accountings): on the raw numbers and
on the NIC-equivalent ones (ledger.py: the emulation's own work billed where a NIC host would
have it). Where the two agree the verdict stands; where they decide opposite ways it *depends on
the testbed*, with both numbers; where one is undecided the finding stays *inconclusive* until
both decide. Where counting the ambiguous line (the NAPI threads' own scheduling) as sched, or
leaving it out, alone turns the NIC-equivalent verdict, the table says so.

An undecided judgement says what would decide it (the clean runs per point the interval's
half-width suggests) and which points need them, so a live campaign can be topped up
(measure/topup.py) until the verdict is decided, the design's looks are taken or a stated budget
is spent. A section's rules return a Verdicts value: the table a notebook shows and those points.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import ledger


def _stats():
    """scipy.stats, imported where a test runs: it takes 0.7 s, and the report reads this module's
    constants only."""
    from scipy import stats
    return stats


REPRODUCED = "reproduced"
IN_DIRECTION = "reproduced in direction"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
DEPENDS = "depends on the testbed"  # raw and NIC-equivalent accounting decide opposite ways
# the runs came from a rehearsal testbed (emulated NICs under TCG, analysis.flags): shown, never judged
REHEARSAL = "rehearsal"
VOCABULARY = (REPRODUCED, IN_DIRECTION, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE, DEPENDS, REHEARSAL)
# The sequential design, fixed before any campaign's first run: a campaign's verdicts are looked at
# no more than LOOKS times (its planned repetitions, then at most LOOKS - 1 decisive top-up rounds,
# each adding as many repetitions as were planned), and every look is judged at Pocock's constant
# nominal level for LOOKS equally spaced looks, so the chance that any look decides a true null
# stays at 5 % overall (Pocock 1977; two-sided nominal levels by number of looks). Judging each
# look at 95 % instead let 6 looks decide 12 % of null differences (tests/unit/analysis/
# test_sequential.py simulates both).
LOOKS = 4
POCOCK_NOMINAL = {1: 0.05, 2: 0.0294, 3: 0.0221, 4: 0.0182, 5: 0.0158, 6: 0.0142}
CONFIDENCE = 1 - POCOCK_NOMINAL[LOOKS]
LEVEL = f"{100 * CONFIDENCE:.1f} %"  # how the verdicts name it: "98.2 %"
METHOD = (f"{LEVEL} CI of the difference (Welch t; paired t for shares of the same runs), clean runs only: "
          f"Pocock's level for up to {LOOKS} looks (the planned runs and {LOOKS - 1} top-up rounds), 5 % overall")
# No arm decides with fewer clean runs than this: a spread from two runs is too uncertain to trust.
MIN_RUNS = 3
# The most clean runs per point a rule will ask for: beyond it the difference is too small to matter here.
MAX_RUNS = 30
# The fewest clean runs per point whose spread may rule a top-up out (a projection beyond MAX_RUNS):
# a spread estimated from 3 runs is itself uncertain by about a factor of 2 either way.
MIN_RUNS_TO_GIVE_UP = 5
# How an undecided verdict reads when no top-up within the design can decide it (more than MAX_RUNS
# clean runs per point, or too few samples per run): the campaign's profile (window, sampling) is
# what would have to change, so the verdict says so instead of asking for runs.
AT_PROFILE = "not decided at this profile"
COLUMNS = ["id", "paper says", "this run shows", "verdict"]
# what under_accountings adds: each accounting's own verdict, and what the ambiguous line does
ACCOUNTING_COLUMNS = ["raw", "NIC-equivalent", "sensitivity"]
# and how many runs were unsteady, with the verdict without them where it differs
STEADINESS_COLUMNS = ["unsteady runs", "steady runs only"]


@dataclass(frozen=True)
class Difference:
    """b − a over clean runs, with its confidence interval (lo, hi); a, b are the per-run values."""
    a: tuple[float, ...]
    b: tuple[float, ...]
    lo: float
    hi: float
    paired: bool = False
    df: float = math.inf  # the t test's degrees of freedom (inf: no test, e.g. an exact difference)

    @property
    def mean_a(self) -> float:
        return float(np.mean(self.a)) if self.a else math.nan

    @property
    def mean_b(self) -> float:
        return float(np.mean(self.b)) if self.b else math.nan

    @property
    def diff(self) -> float:
        return self.mean_b - self.mean_a

    @property
    def sign(self) -> str:
        """'<' when b is above a beyond the interval, '>' when below, '?' while undecided."""
        if self.lo > 0:
            return "<"
        if self.hi < 0:
            return ">"
        return "?"

    def rel(self, x: float) -> float:
        """x as a percentage of a's mean."""
        return 100.0 * x / self.mean_a if self.mean_a else math.nan

    @property
    def n(self) -> int:
        """Runs per side (a level compared against counts b's runs only)."""
        return len(self.b) if len(self.a) == 1 and len(self.b) > 1 else min(len(self.a), len(self.b))

    def interval(self, confidence: float) -> tuple[float, float]:
        """The same difference's interval at another confidence level (a familywise correction
        asks for a stricter one)."""
        if not math.isfinite(self.hi - self.lo) or self.lo == self.hi:
            return self.lo, self.hi
        if len(self.a) == 1 and not self.paired:  # against a level (against_level)
            ci = _stats().ttest_1samp(self.b, self.a[0]).confidence_interval(confidence)
            return float(ci.low) - self.a[0], float(ci.high) - self.a[0]
        stats = _stats()
        test = stats.ttest_rel(self.b, self.a) if self.paired else stats.ttest_ind(self.b, self.a, equal_var=False)
        ci = test.confidence_interval(confidence)
        return float(ci.low), float(ci.high)

    def decided_at(self, confidence: float) -> str:
        """The sign ('<', '>' or '?') of the interval at that confidence level."""
        lo, hi = self.interval(confidence)
        return "<" if lo > 0 else (">" if hi < 0 else "?")

    def runs_to_decide(self) -> int | None:
        """Clean runs per point at which the interval's half-width would shrink below |difference|;
        None below MIN_RUNS, which gives no interval to go by."""
        if self.n < 2 or not math.isfinite(self.hi - self.lo):
            return None
        return self.runs_for(abs(self.diff))

    def runs_for(self, target: float) -> int:
        """The fewest clean runs per point (above n) whose interval's half-width would be below
        target, MAX_RUNS + 1 beyond MAX_RUNS. The half-width is t(df) x spread / sqrt(n), and both
        factors shrink as runs are added: the t quantile too (4.30 at 3 paired runs, 2.09 at 20),
        so keeping today's quantile would overstate the runs needed up to ~5x at n = 3. The degrees
        of freedom grow in proportion to n - 1 (exactly so for paired and one-sample t; Welch's
        with the sides' spreads as they are)."""
        n, half = self.n, (self.hi - self.lo) / 2
        if target <= 0 or n < 2:
            return MAX_RUNS + 1
        quantile = (lambda df: _stats().t.ppf(0.5 + CONFIDENCE / 2, df)) if math.isfinite(self.df) else (
            lambda df: _stats().norm.ppf(0.5 + CONFIDENCE / 2))
        spread = half * math.sqrt(n) / quantile(self.df)
        for m in range(n + 1, MAX_RUNS + 1):
            if quantile(self.df * (m - 1) / (n - 1)) * spread / math.sqrt(m) < target:
                return m
        return MAX_RUNS + 1

    def text(self, fmt: str = ".1f", unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        n = self.n if len(self.a) == 1 else f"{len(self.a)}/{len(self.b)}"  # against a level: its runs only
        return (f"{self.mean_a:{fmt}} → {self.mean_b:{fmt}}{u} (difference {self.diff:+{fmt}}, {LEVEL} CI "
                f"{self.lo:+{fmt}} … {self.hi:+{fmt}}; n = {n})")


def _values(xs) -> tuple[float, ...]:
    return tuple(float(x) for x in xs if x is not None and not pd.isna(x))


def difference(a, b, paired: bool = False) -> Difference:
    """b − a with its CI at CONFIDENCE: Welch's t for independent runs, a paired t when a[i] and b[i] come
    from the same run. Fewer than MIN_RUNS runs on a side give an unbounded interval (undecided)."""
    a, b = _values(a), _values(b)
    if paired and len(a) != len(b):
        raise ValueError(f"a paired difference needs as many a as b values, not {len(a)} and {len(b)}")
    if min(len(a), len(b)) < MIN_RUNS:
        return Difference(a, b, -math.inf, math.inf, paired)
    scale = 1e-9 * max(1.0, float(np.max(np.abs([*a, *b]))))  # below this, spread is float rounding
    flat = np.ptp(np.subtract(b, a)) <= scale if paired else (np.ptp(a) <= scale and np.ptp(b) <= scale)
    if flat:  # no spread at all (counts, identical runs): the difference is exact
        lo = hi = float(np.mean(b) - np.mean(a))
        return Difference(a, b, lo, hi, paired)
    stats = _stats()
    test = stats.ttest_rel(b, a) if paired else stats.ttest_ind(b, a, equal_var=False)
    ci = test.confidence_interval(CONFIDENCE)
    return Difference(a, b, float(ci.low), float(ci.high), paired, float(test.df))


def against_level(values, level: float) -> Difference:
    """mean(values) − level with the one-sample t CI (a is the level itself, no spread): for claims
    about a level, e.g. 'still loses more than 1 %'."""
    b = _values(values)
    if len(b) < MIN_RUNS:
        return Difference((float(level),), b, -math.inf, math.inf)
    if np.ptp(b) == 0:
        return Difference((float(level),), b, b[0] - level, b[0] - level)
    test = _stats().ttest_1samp(b, level)
    ci = test.confidence_interval(CONFIDENCE)
    return Difference((float(level),), b, float(ci.low) - level, float(ci.high) - level, df=float(test.df))


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


def as_rehearsal(table: pd.DataFrame, why: str) -> pd.DataFrame:
    """A verdict table judged from a rehearsal's runs (`why`: the testbed's reason, e.g. emulated NICs
    under TCG), as it is shown: every verdict, and each accounting's, reads REHEARSAL; what the
    rules saw is kept behind `why`, as the code path's output and not as evidence; no top-up is asked."""
    out = table.copy()
    out["this run shows"] = [f"{why}; what the code path computed (not evidence): {shows}"
                             for shows in out["this run shows"]]
    for col in ("verdict", "raw", "NIC-equivalent"):
        if col in out.columns:
            out[col] = REHEARSAL
    for col in ("sensitivity", "steady runs only"):
        if col in out.columns:
            out[col] = ""
    return out


def row(fid: str, claim: str, j: Judgement) -> dict:
    shows = j.text if j.verdict != NOT_TESTABLE else (f"{j.shows}; needs {j.decide}" if j.decide else j.shows)
    return {"id": fid, "paper says": claim, "this run shows": shows, "verdict": j.verdict}


EXTENSION = " (extension)"  # an id's suffix: judged where the paper does not state it, kept out of counts


# an id's suffix: the same experiment as another notebook's (patterns on one core pair), shown, counted once
SAME_EXPERIMENT = " (same experiment)"


def is_extension(fid: str) -> bool:
    """Shown but not counted: an extension, or a repeat of an experiment counted elsewhere."""
    return fid.endswith((EXTENSION, SAME_EXPERIMENT))


@dataclass(frozen=True)
class Verdicts:
    """What a section's rules decided: the verdict table a notebook shows (COLUMNS, and the
    accounting and steadiness columns once under_accountings has judged it) and, per finding, the
    points an inconclusive counted verdict needs more clean runs of (what a top-up runs)."""
    table: pd.DataFrame
    wanted: dict[str, list[dict]] = field(default_factory=dict)

    def joined(self, *others: "Verdicts") -> "Verdicts":
        """These verdicts and others' as one (a campaign two notebooks judge, e.g. F17 and F28)."""
        return Verdicts(pd.concat([self.table, *(o.table for o in others)], ignore_index=True),
                        _union(self.wanted, *(o.wanted for o in others)))

    def asking(self, key: str, points: list[dict]) -> "Verdicts":
        """The same verdicts asking for more runs of `points` too, under `key` (a top-up's own reason)."""
        return Verdicts(self.table, {**self.wanted, key: points})


def collect(findings: pd.DataFrame, judged: dict[str, Judgement], extensions: dict[str, str] | None = None,
            repeats: dict[str, str] | None = None) -> Verdicts:
    """The verdict table (COLUMNS) in the order given, and the points an inconclusive counted verdict
    needs more clean runs of, per finding. extensions: findings judged beyond
    where the paper states them (fid -> where it does): their ids end in EXTENSION and their claim
    says so, so no overall count or summary takes them for the paper's. repeats: findings whose
    experiment here is another notebook's (fid -> which): their ids end in SAME_EXPERIMENT, counted there."""
    claims = findings.set_index("id").claim.to_dict()
    for suffix, named, text in ((EXTENSION, extensions, "Extension (the paper states it {})"),
                                (SAME_EXPERIMENT, repeats, "The same experiment as {} here, counted there")):
        for fid, where in (named or {}).items():
            if fid in judged:
                claims[fid + suffix] = f"{text.format(where)}: {claims[fid]}"
                judged = {(k + suffix if k == fid else k): v for k, v in judged.items()}
    out = pd.DataFrame([row(fid, claims[fid], j) for fid, j in judged.items()], columns=COLUMNS)
    # only counted findings ask for runs: an extension or another notebook's experiment would spend the
    # campaign's looks and budget on verdicts no tally takes (the pattern campaigns' F04/F05 extensions did)
    return Verdicts(out, {fid: list(j.points) for fid, j in judged.items() if j.verdict == INCONCLUSIVE and j.points
                          and not fid.endswith((EXTENSION, SAME_EXPERIMENT))})


def as_table(rules: Callable[..., Verdicts]) -> Callable[..., pd.DataFrame]:
    """A section's rules (returning Verdicts) as its verdict_table: called, the table a notebook
    shows; `.verdicts(...)`, the whole value (a section's judge, for the top-up)."""
    @functools.wraps(rules)
    def shown(*args, **kwargs) -> pd.DataFrame:
        return rules(*args, **kwargs).table
    shown.verdicts = rules
    return shown


def under_accountings(rules: Callable[..., Verdicts]) -> Callable[..., pd.DataFrame]:
    """A section's rules(…, tidy, …) (or …_tidy) judged under each accounting of ledger.py and
    merged (merge_accountings), then again without unsteady runs, shown where that changes a verdict.
    Where the tidy data has no ledger (real servers, or runs recorded before it) both accountings
    are the raw one and the table says so. Returned as_table: the table, and .verdicts for the value."""
    sig = inspect.signature(rules)
    name = next(p for p in sig.parameters if p == "tidy" or p.endswith("_tidy"))

    def accounted(args, kwargs, tidy: pd.DataFrame, variants: bool = True) -> Verdicts:
        """variants False: the merged verdicts only (the variants of the ambiguous line feed only the
        sensitivity column, so judging them again without the unsteady runs would be wasted)."""
        bound = sig.bind(*args, **kwargs)

        def under(accounting):
            bound.arguments[name] = ledger.view(tidy, accounting)
            return rules(*bound.args, **bound.kwargs)
        raw = under(ledger.RAW)
        if not ledger.has_ledger(tidy):
            return merge_accountings(raw)
        return merge_accountings(raw, under(ledger.NIC), {a: under(a) for a in (ledger.NIC_AS_SCHED,
                                                                                 ledger.NIC_WITHOUT) if variants})

    @functools.wraps(rules)
    def judged(*args, **kwargs) -> Verdicts:
        tidy = sig.bind(*args, **kwargs).arguments[name]
        decided = accounted(args, kwargs, tidy)
        out = decided.table
        unsteady = unsteady_runs(tidy)
        runs = tidy.run_id.nunique() if "run_id" in tidy.columns else 0
        out["unsteady runs"] = f"{len(unsteady)} of {runs}"
        out["steady runs only"] = "no steady run" if unsteady and runs == len(unsteady) else ""
        if unsteady and runs > len(unsteady):
            again = accounted(args, kwargs, tidy[~tidy.run_id.isin(unsteady)],
                              variants=False).table.set_index("id").verdict
            without = [again.get(f, "not judged (no steady run of its points)") for f in out["id"]]
            out["steady runs only"] = [w if w != v else "" for w, v in zip(without, out["verdict"], strict=True)]
        return decided
    return as_table(judged)


def unsteady_runs(tidy: pd.DataFrame) -> set[str]:
    """Runs a flow of which varied by more than analysis.STEADY_CV_LIMIT_PCT per second (what the
    manifest calls unsteady), read from the tidy rows."""
    from .metrics import STEADY_CV_LIMIT_PCT
    if not {"metric", "run_id"} <= set(tidy.columns):
        return set()
    cv = tidy[tidy.metric == "flow_throughput_cv_pct"]
    return set(cv[cv.value > STEADY_CV_LIMIT_PCT].run_id)


def merged_verdict(raw: str, nic: str) -> str:
    """One verdict from the two accountings' (docs/verdicts.md): the same stands; reproduced and
    in direction give in direction; an undecided one keeps the finding inconclusive; opposite
    decisions (or testable under one only) depend on the testbed."""
    if raw == nic:
        return raw
    pair = {raw, nic}
    if pair == {REPRODUCED, IN_DIRECTION}:
        return IN_DIRECTION
    if INCONCLUSIVE in pair and NOT_TESTABLE not in pair:
        return INCONCLUSIVE
    return DEPENDS


def merge_accountings(raw: Verdicts, nic: Verdicts | None = None,
                      variants: dict[str, Verdicts] | None = None) -> Verdicts:
    """The raw and NIC-equivalent verdict tables of the same findings as one (COLUMNS +
    ACCOUNTING_COLUMNS): merged_verdict, both texts where they differ, and a sensitivity line where
    a variant of the ambiguous line alone turns the NIC-equivalent verdict. nic None: the data have
    no ledger, so the raw table is both."""
    no_ledger = nic is None
    nic = raw if no_ledger else nic
    nic_by, var_by = nic.table.set_index("id"), {a: v.table.set_index("id") for a, v in (variants or {}).items()}
    rows = []
    for _, r in raw.table.iterrows():
        n = nic_by.loc[r["id"]] if r["id"] in nic_by.index else r
        shows = r["this run shows"]
        if n["this run shows"] != shows:
            shows = both_texts(shows, n["this run shows"])
        flips = [f"{ledger.LABELS[a]}: {t.loc[r['id'], 'verdict']}" for a, t in var_by.items()
                 if r["id"] in t.index and t.loc[r["id"], "verdict"] != n["verdict"]]
        rows.append({"id": r["id"], "paper says": r["paper says"], "this run shows": shows,
                     "verdict": merged_verdict(r["verdict"], n["verdict"]), "raw": r["verdict"],
                     "NIC-equivalent": "(no ledger: raw)" if no_ledger else n["verdict"],
                     "sensitivity": ("the ambiguous line alone turns it (" + "; ".join(flips) + ")") if flips else ""})
    out = pd.DataFrame(rows, columns=COLUMNS + ACCOUNTING_COLUMNS)
    undecided = set(out[out.verdict == INCONCLUSIVE].id)
    return Verdicts(out, {fid: pts for fid, pts in _union(raw.wanted, nic.wanted).items() if fid in undecided})


def clauses(text: str) -> list[str]:
    """A "this run shows" text cut at its "; " separators outside brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return [c for c in [*out, text[start:]] if c]


# How a merged text names its parts (evidence() reads them back)
ACCOUNTING_PARTS = ("raw", "NIC-equivalent", "both")


def both_texts(raw: str, nic: str) -> str:
    """The two accountings' texts as one, what they say alike said once ("both: ..."): F02's
    6-line note on the aRFS step was printed under each accounting."""
    a, b = clauses(raw), clauses(nic)
    shared = [c for c in a if c in b]
    own = ["; ".join(c for c in a if c not in shared), "; ".join(c for c in b if c not in shared)]
    parts = [f"{name}: {text}" for name, text in zip(ACCOUNTING_PARTS, [*own, "; ".join(shared)], strict=True)
             if text]
    return " | ".join(parts)


def evidence(shows: str) -> list[tuple[str, str]]:
    """A verdict's "this run shows" as (accounting, text) parts: raw, NIC-equivalent and both where
    the accountings differ (both_texts), else one part with no name."""
    parts = shows.split(" | ")
    named = [p.split(": ", 1) for p in parts]
    if len(parts) > 1 and all(len(n) == 2 and n[0] in ACCOUNTING_PARTS for n in named):
        return [(n[0], n[1]) for n in named]
    return [("", shows)]


def load_findings(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "findings.csv")


def clean_values(tidy: pd.DataFrame, metric: str, side: str, category: str = "", **point) -> list[float]:
    """Per-run values of one metric (one row per run) where the tidy columns match `point`."""
    rows = tidy[(tidy.metric == metric) & (tidy.side == side) & (tidy.category.fillna("") == category)]
    for key, value in point.items():
        rows = rows[rows[key] == value]
    return rows.sort_values("run_id").value.astype(float).tolist()


# A run's share of a layer is a count of its side's busy perf samples: below this many, its
# sampling error alone (a binomial half-width of up to ±3.1 points at 1,000 samples) is as large as
# the differences the share findings turn on, so the run takes no part in a verdict on shares.
MIN_BUSY_SAMPLES = 1000


class Shares(dict):
    """shares_by_run's result: category -> per-run shares, and the runs left out for too few busy
    samples (`undersampled`: their sample counts). True while any run was found, kept or not, so a
    caller judges it and the verdict says why it has nothing to go on."""

    def __init__(self, items=(), undersampled: dict[str, float] | None = None):
        super().__init__(items)
        self.undersampled = dict(undersampled or {})

    def __bool__(self) -> bool:
        return bool(len(self)) or bool(self.undersampled)

    def __missing__(self, category: str) -> list[float]:
        return []  # every run left out: no shares of any category

    def note(self) -> str:
        """What was left out, for a verdict's text ("" when nothing was)."""
        if not self.undersampled:
            return ""
        counts = sorted(self.undersampled.values())
        return (f" ({len(counts)} run{'s' if len(counts) > 1 else ''} under the {MIN_BUSY_SAMPLES:,}-sample floor "
                f"left out: {counts[0]:.0f}-{counts[-1]:.0f} busy samples)")


def shares_by_run(tidy: pd.DataFrame, metric: str, side: str, categories, **point) -> Shares:
    """Per category, the side's share in every run of the point (0 where a run had no such sample):
    the same runs in the same order for every category, as largest() pairs them. Runs whose side
    has fewer than MIN_BUSY_SAMPLES busy perf samples are left out (`Shares.undersampled`)."""
    # one pass over the whole frame, the rest over the point's rows (this runs for every point, side
    # and accounting of a verdict table)
    sel = tidy.loc[tidy.metric.isin((metric, "perf_busy_samples_count")) & (tidy.side == side),
                   ["run_id", "metric", "category", "value", *point]]  # the columns read below, no others
    for key, value in point.items():
        sel = sel[sel[key] == value]
    rows, counts = sel[sel.metric == metric], sel[sel.metric == "perf_busy_samples_count"]
    if rows.empty:
        return Shares()
    per_run = counts.groupby("run_id").value.sum()
    few = {r: float(n) for r, n in per_run.items() if n < MIN_BUSY_SAMPLES}
    rows = rows[~rows.run_id.isin(few)]
    if rows.empty:
        return Shares(undersampled=few)
    wide = rows.groupby(["run_id", "category"]).value.sum().unstack("category").sort_index()
    return Shares({c: (wide[c].fillna(0.0).tolist() if c in wide else [0.0] * len(wide)) for c in categories}, few)


def _union(*wanted: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Points wanted per finding, from several asks, each point once."""
    out: dict[str, list[dict]] = {}
    for ask in wanted:
        for fid, pts in ask.items():
            out[fid] = list({_key(p): p for p in [*out.get(fid, []), *pts]}.values())
    return out


def _key(point: dict) -> str:
    return repr(sorted(point.items()))
