"""Pure helpers: alternation order, paired ratios, medians and ranges, target checks."""
from __future__ import annotations

import operator
import statistics
from dataclasses import dataclass

OPS = {">=": operator.ge, "<=": operator.le}


def alternating(variants: list[str], repetitions: int) -> list[tuple[int, str]]:
    """(repetition, variant) in ABAB... order, rotated by one each repetition so no variant
    always runs first (drift and warm caches fall on every variant alike)."""
    out = []
    for rep in range(repetitions):
        k = rep % len(variants)
        out += [(rep, v) for v in variants[k:] + variants[:k]]
    return out


@dataclass(frozen=True)
class Summary:
    median: float
    lo: float
    hi: float
    n: int

    def as_dict(self) -> dict:
        return {"median": self.median, "min": self.lo, "max": self.hi, "n": self.n}

    def text(self, fmt: str = "{:.3f}") -> str:
        return f"{fmt.format(self.median)} ({fmt.format(self.lo)}–{fmt.format(self.hi)}, n={self.n})"


def summarize(values) -> Summary:
    vals = [float(v) for v in values if v == v]  # NaN (a failed repetition) is left out
    if not vals:
        return Summary(float("nan"), float("nan"), float("nan"), 0)
    return Summary(statistics.median(vals), min(vals), max(vals), len(vals))


def paired_ratios(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """A/B per repetition, over the repetitions where both ran (pairs cancel slow drift)."""
    return [a[r] / b[r] for r in sorted(set(a) & set(b)) if b[r]]


def meets(value: float, op: str, target: float) -> bool | None:
    """None when there is no value to judge."""
    if value != value:
        return None
    return OPS[op](value, target)


def verdict(value: float, op: str, target: float) -> str:
    ok = meets(value, op, target)
    return "not measured" if ok is None else ("met" if ok else "below target")


def linear_fit(xs: list[float], ys: list[float]) -> dict:
    """Least squares y = a + b*x and the worst ratio of per-item cost between sizes,
    (y/x at the largest) / (y/x at the smallest): ~1 when linear, >1 when superlinear."""
    n = len(xs)
    if n < 2:
        return {"slope": float("nan"), "intercept": float("nan"), "per_item_growth": float("nan")}
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else float("nan")
    pairs = sorted(zip(xs, ys, strict=True))
    growth = (pairs[-1][1] / pairs[-1][0]) / (pairs[0][1] / pairs[0][0]) if pairs[0][1] else float("nan")
    return {"slope": slope, "intercept": my - slope * mx, "per_item_growth": growth}


def ratio_interval(ratios: list[float], confidence: float = 0.95) -> dict:
    """The geometric mean of paired ratios with its t-interval (on log ratios), and how many pairs
    would put the interval's half-width at 2 % at this spread (the resolution issue 18 asks for)."""
    import math

    from scipy import stats as st
    logs = [math.log(r) for r in ratios if r > 0]
    n = len(logs)
    if n < 2:
        return {"geomean": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": n,
                "sd_log": float("nan"), "pairs_for_2pct": None}
    mean = sum(logs) / n
    sd = statistics.stdev(logs)
    half = st.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    need = math.ceil((st.norm.ppf(0.5 + confidence / 2) * sd / math.log(1.02)) ** 2)
    return {"geomean": math.exp(mean), "lo": math.exp(mean - half), "hi": math.exp(mean + half), "n": n,
            "sd_log": sd, "pairs_for_2pct": need}
