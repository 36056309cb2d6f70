"""The top-up loop's sequential design (verdicts.LOOKS looks at Pocock's level): simulated on null
data, where any decided verdict is a false positive, the loop decides no more than 5 % of them;
judging every look at 95 % (the loop before the design) decides far more."""
import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from hostnet.analysis import verdicts
from hostnet.measure import topup

POINT = {"config": "b"}
NO_TABLE = pd.DataFrame()  # the loop reads only what the verdicts want; one table, not one per look


def _false_positive_rate(confidence: float, looks: int, *, first: int, step: int, trials: int, seed: int) -> float:
    """The share of null campaigns (a and b from one normal distribution) that the real top-up loop
    ends with a decided verdict, when each look is judged at `confidence` and at most `looks` looks
    are taken: the planned `first` runs per point, then rounds adding `step` runs per point."""
    rng = np.random.default_rng(seed)
    decided = 0
    for _ in range(trials):
        runs = {"a": list(rng.normal(10, 1, first)), "b": list(rng.normal(10, 1, first))}

        def judge(runs=runs):
            lo, hi = _welch(runs["a"], runs["b"], confidence)
            return verdicts.Verdicts(NO_TABLE, {"F": [POINT]} if lo <= 0 <= hi else {})

        def run_more(points, runs=runs):
            for side in runs:
                runs[side].append(rng.normal(10, 1))
            return len(points)

        topup.top_up_until_decided(judge, run_more, budget_runs=10_000, budget_minutes=1e9,
                                   rounds_taken=verdicts.LOOKS - looks, step=step, clock=lambda: 0.0)
        decided += not judge().wanted
    return decided / trials


def _welch(a, b, confidence: float) -> tuple[float, float]:
    """b − a's Welch t interval (scipy's ttest_ind(...).confidence_interval, ~100x faster: the t
    quantile from the special function itself, not through stats.t's checks)."""
    a, b = np.asarray(a), np.asarray(b)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = special.stdtrit(df, 0.5 + confidence / 2) * np.sqrt(va + vb)
    d = b.mean() - a.mean()
    return d - half, d + half


def test_the_fast_welch_interval_is_scipy_s():
    a, b = [1.0, 2.5, 2.0, 3.1], [2.2, 4.0, 3.3]
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.9)
    assert _welch(a, b, 0.9) == (pytest.approx(ci.low), pytest.approx(ci.high))


@pytest.mark.parametrize("first, step", [(3, 3), (5, 5), (3, 1)])
def test_the_design_keeps_the_false_positive_rate_at_5_percent(first, step):
    """The design as hostnet runs it: rounds of as many runs as were planned (equal increments, the
    looks Pocock's level is computed for), and rounds of one run (a budget that allows no more)."""
    rate = _false_positive_rate(verdicts.CONFIDENCE, verdicts.LOOKS, first=first, step=step, trials=2000, seed=first)
    # 2000 trials: a true 5 % lands within 1.0 point with 95 % probability
    assert rate <= 0.05 + 0.010, rate


def test_looking_at_95_percent_after_every_round_decides_far_more_than_5_percent():
    """The loop before the design: each look at 95 %, six rounds of one run (BIG TCP's campaign)."""
    rate = _false_positive_rate(0.95, 7, first=5, step=1, trials=2000, seed=7)
    assert rate > 0.09, rate


def test_the_loop_stops_when_the_design_s_looks_are_taken():
    rounds = []
    log = topup.top_up_until_decided(lambda: verdicts.Verdicts(pd.DataFrame(), {"F": [POINT]}),
                                     lambda p: rounds.append(p) or 1,
                                     budget_runs=100, budget_minutes=60, rounds_taken=1, clock=lambda: 0.0)
    assert log.rounds == verdicts.LOOKS - 2 == len(rounds)
    assert f"{verdicts.LOOKS} looks are taken" in log.stopped and log.stopped.endswith(verdicts.AT_PROFILE)


def test_the_level_is_pocock_s_for_the_design_s_looks():
    assert verdicts.CONFIDENCE == pytest.approx(1 - 0.0182)
    assert verdicts.LEVEL == "98.2 %"
