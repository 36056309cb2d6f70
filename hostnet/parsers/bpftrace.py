"""bpftrace map output (printed on exit): hist, lhist, stats, count."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BUCKET = re.compile(r"^\[(?P<lo>-?[\d]+[KMGT]?)(?:, (?P<hi>[\d]+[KMGT]?|\.\.\.))?[)\]]\s+(?P<n>\d+)\s*\|")
_STATS = re.compile(r"^count (\d+), average (-?\d+), total (-?\d+)$")


def _num(text: str) -> int:
    m = re.fullmatch(r"(-?\d+)([KMGT]?)", text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * _SUFFIX[m.group(2)]


@dataclass(frozen=True)
class Histogram:
    """Buckets [lo, hi) with counts; hi is None for the open-ended last bucket."""

    buckets: tuple[tuple[int, int | None, int], ...]

    @property
    def total(self) -> int:
        return sum(n for _, _, n in self.buckets)

    def quantile(self, q: float) -> float | None:
        """The lower edge of the bucket holding quantile q (resolution = bucket width)."""
        total = self.total
        if not total:
            return None
        seen = 0
        for lo, _, n in self.buckets:
            seen += n
            if seen >= q * total:
                return float(lo)
        return float(self.buckets[-1][0])

    def mean(self) -> float | None:
        """Mean of bucket midpoints (open buckets count at their lower edge)."""
        total = self.total
        if not total:
            return None
        return sum(n * (lo if hi is None else (lo + hi) / 2) for lo, hi, n in self.buckets) / total


def parse_bpftrace_maps(text: str, source: str = "bpftrace.txt") -> dict:
    """-> {map name: Histogram | {"count", "average", "total"} | int}."""
    maps: dict = {}
    current, buckets = None, []

    def close():
        if current is not None and buckets:
            maps[current] = Histogram(tuple(buckets))

    for n, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if line.startswith("@"):
            close()
            name, _, rest = line.partition(":")
            current, buckets = name[1:], []
            rest = rest.strip()
            if not rest:
                continue
            stats = _STATS.match(rest)
            if stats:
                maps[current] = dict(zip(("count", "average", "total"), map(int, stats.groups()), strict=True))
            elif re.fullmatch(r"-?\d+", rest):
                maps[current] = int(rest)
            else:
                raise ParseError(source, f"unrecognised value for @{current}: {rest!r}", n)
            current = None
        elif current is not None and line.startswith("["):
            m = _BUCKET.match(line)
            if not m:
                raise ParseError(source, f"bad histogram bucket {line!r}", n)
            try:
                lo = _num(m.group("lo"))
                hi = None if m.group("hi") == "..." else (_num(m.group("hi")) if m.group("hi") else lo + 1)
            except ValueError as exc:
                raise ParseError(source, f"bad number in {line!r}", n) from exc
            buckets.append((lo, hi, int(m.group("n"))))
    close()
    return maps


def subtract_maps(after: dict, before: dict) -> dict:
    """Maps over a window: the final dump minus a SIGUSR1 dump taken when the window opened."""
    out = {}
    for name, a in after.items():
        b = before.get(name)
        if isinstance(a, Histogram):
            prior = {(lo, hi): n for lo, hi, n in b.buckets} if isinstance(b, Histogram) else {}
            out[name] = Histogram(tuple((lo, hi, n - prior.get((lo, hi), 0)) for lo, hi, n in a.buckets))
        elif isinstance(a, dict):
            b = b if isinstance(b, dict) else {"count": 0, "total": 0}
            count, total = a["count"] - b["count"], a["total"] - b["total"]
            out[name] = {"count": count, "total": total, "average": total // count if count else 0}
        else:
            out[name] = a - (b if isinstance(b, int) else 0)
    return out
