"""The confidence interval of a difference of clean runs (Welch, paired, or against a level) at
the design's level, and the runs that would decide it."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .vocabulary import CONFIDENCE, LEVEL, MAX_RUNS, MIN_RUNS


def _stats():
    """scipy.stats, imported where a test runs: it takes 0.7 s, and the report reads this module's
    constants only."""
    from scipy import stats  # lazy: 0.7 s, for the tests only (the report reads the constants)
    return stats


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
