"""bpftrace map output (printed on exit): hist, lhist, stats, count."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError, require_complete

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BUCKET = re.compile(r"^\[(?P<lo>-?[\d]+[KMGT]?)(?:, (?P<hi>[\d]+[KMGT]?|\.\.\.))?[)\]]\s+(?P<n>\d+)\s*\|")
_STATS = re.compile(r"^count (\d+), average (-?\d+), total (-?\d+)$")
_INT = re.compile(r"-?\d+")


def _num(text: str) -> int:
    """A bucket edge as _BUCKET matched it (-?digits, then K, M, G or T or nothing): a bucket line
    has two, and matching them again cost a third of the parse."""
    if text[-1] in "KMGT":
        return int(text[:-1]) * _SUFFIX[text[-1]]
    return int(text)


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


_ATTACHING = re.compile(r"^Attaching \d+ probes?\.\.\.$")


def parse_bpftrace_maps(text: str, source: str = "bpftrace.txt") -> dict:
    """-> {map name: Histogram | {"count", "average", "total"} | int}.

    bpftrace's own errors, lines that are not part of a map dump, a histogram cut short (bpftrace
    ends each with an empty line) and a dump without any map raise: a window's latency is never
    computed from nothing."""
    err = re.search(r"^ERROR: (.*)$", text, re.M)
    if err:
        raise ParseError(source, f"bpftrace error: {err.group(1).strip()}", text[:err.start()].count("\n") + 1)
    require_complete(text, source)
    maps: dict = {}
    hist = _HistReader(source)
    for n, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if hist.open and (not line or line.startswith("[")):
            hist.add(line, n)
        elif line.startswith("@"):
            if hist.open:
                raise ParseError(source, f"histogram @{hist.name} has no empty line after it: cut short?", n)
            name, value = _map_line(line, source, n)
            if name in maps:
                raise ParseError(source, f"@{name} appears twice", n)
            if value is None:
                hist.start(name)
            else:
                maps[name] = value
        elif line and not _ATTACHING.match(line):
            raise ParseError(source, f"not part of a bpftrace map dump: {line[:80]!r}", n)
        if hist.done:
            maps.update(hist.take())
    if hist.open:
        raise ParseError(source, f"histogram @{hist.name} has no empty line after it: cut short?")
    if not maps:
        raise ParseError(source, "no map in the output (bpftrace printed none: did it attach?)")
    return maps


def _map_line(line: str, source: str, n: int) -> tuple[str, dict | int | None]:
    """"@name: value" -> (name, stats dict or count); None for a histogram's header line."""
    name, _, rest = line.partition(":")
    name, rest = name[1:], rest.strip()
    if not rest:
        return name, None
    if stats := _STATS.match(rest):
        count, average, total = map(int, stats.groups())
        # bpftrace's average is total / count (C division): a damaged digit in either breaks it
        if count < 0 or (count and average != _c_div(total, count)) or (not count and (average or total)):
            raise ParseError(source, f"@{name}: average {average} is not total {total} / count {count}", n)
        return name, {"count": count, "average": average, "total": total}
    if _INT.fullmatch(rest):
        return name, int(rest)
    raise ParseError(source, f"unrecognised value for @{name}: {rest!r}", n)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


class _HistReader:
    """Bucket lines after a "@name:" header, up to the empty line that ends them."""

    def __init__(self, source: str):
        self.source, self.name, self.open, self.buckets, self.done = source, None, False, [], None

    def start(self, name: str) -> None:
        self.name, self.open, self.buckets = name, True, []

    def add(self, line: str, n: int) -> None:
        if not line:
            self.open = False
            if self.buckets:  # a header with no buckets is a map with no entries: left out
                self.done = {self.name: Histogram(tuple(self.buckets))}
            return
        m = _BUCKET.match(line)
        if not m:
            raise ParseError(self.source, f"bad histogram bucket {line!r}", n)
        low, high, count = m.group("lo", "hi", "n")
        try:
            lo = _num(low)
            hi = None if high == "..." else (_num(high) if high else lo + 1)
        except ValueError as exc:
            raise ParseError(self.source, f"bad number in {line!r}", n) from exc
        if (hi is not None and hi <= lo) or (self.buckets and lo < self.buckets[-1][0]):
            raise ParseError(self.source, f"the bucket from {low} is out of order", n)
        self.buckets.append((lo, hi, int(count)))

    def take(self) -> dict:
        done, self.done = self.done or {}, None
        return done


def subtract_maps(after: dict, before: dict, source: str = "bpftrace maps") -> dict:
    """Maps over a window: the final dump minus a SIGUSR1 dump taken when the window opened. A
    histogram or stats map may be missing before (it had no entries yet), never after; none of
    their counts may go down (the dumps are swapped, or from two bpftrace runs)."""
    # keyed scratch maps (@ts[skb]) come and go; a histogram or stats map only grows
    gone = sorted(name for name, b in before.items() if name not in after and not isinstance(b, int))
    if gone:
        raise ParseError(source, f"@{', @'.join(gone)} in the opening dump but not in the final one")
    out = {name: _subtract(name, a, before.get(name), source) for name, a in after.items()}
    for name, value in out.items():  # (plain values may be settings, as rx_prof's are: not checked)
        counts = ([n for _, _, n in value.buckets] if isinstance(value, Histogram)
                  else [value["count"]] if isinstance(value, dict) else [])
        if min(counts, default=0) < 0:
            raise ParseError(source, f"@{name} went down over the window (dumps swapped?)")
    return out


def _subtract(name: str, a, b, source: str):
    if b is not None and type(a) is not type(b):
        raise ParseError(source, f"@{name} is a {type(b).__name__} when the window opens, a {type(a).__name__} after")
    if isinstance(a, Histogram):
        prior = {(lo, hi): n for lo, hi, n in b.buckets} if b is not None else {}
        if not set(prior) <= {(lo, hi) for lo, hi, _ in a.buckets}:
            raise ParseError(source, f"@{name}: a bucket of the opening dump is gone from the final one")
        return Histogram(tuple((lo, hi, n - prior.get((lo, hi), 0)) for lo, hi, n in a.buckets))
    if isinstance(a, dict):
        b = b if b is not None else {"count": 0, "total": 0}
        count, total = a["count"] - b["count"], a["total"] - b["total"]
        return {"count": count, "total": total, "average": total // count if count else 0}
    return a - (b if b is not None else 0)
