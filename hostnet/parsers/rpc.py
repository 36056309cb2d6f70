"""RPC ping-pong tools: netperf TCP_RR (omni output selectors) and sockperf ping-pong."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError, require_complete

# The selectors hostnet asks netperf for (-o), in this order.
NETPERF_FIELDS = ("THROUGHPUT", "THROUGHPUT_UNITS", "MEAN_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY",
                  "REQUEST_SIZE", "RESPONSE_SIZE")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class RpcResult:
    transactions_per_s: float
    mean_usec: float
    p50_usec: float | None
    p90_usec: float | None
    p99_usec: float | None
    request_bytes: int
    response_bytes: int
    latency_kind: str  # "transaction" (netperf: one request+response) or "round trip" (sockperf)


def parse_netperf(text: str, source: str = "netperf.txt") -> RpcResult:
    """`netperf -t TCP_RR -P 0 -- -o <NETPERF_FIELDS>`: one CSV line."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        raise ParseError(source, "empty output (did netperf run?)")
    parts = lines[-1].split(",")
    if len(parts) != len(NETPERF_FIELDS):
        raise ParseError(source, f"netperf error: {' '.join(lines)[:300]}", len(lines))
    require_complete(text, source)  # a cut inside the last field would still parse
    row = dict(zip(NETPERF_FIELDS, parts, strict=True))
    if row["THROUGHPUT_UNITS"] != "Trans/s":
        raise ParseError(source, f"expected Trans/s, got {row['THROUGHPUT_UNITS']!r} (not a TCP_RR test?)")
    try:
        r = RpcResult(float(row["THROUGHPUT"]), float(row["MEAN_LATENCY"]), float(row["P50_LATENCY"]),
                      float(row["P90_LATENCY"]), float(row["P99_LATENCY"]), int(row["REQUEST_SIZE"]),
                      int(row["RESPONSE_SIZE"]), "transaction")
    except ValueError as exc:
        raise ParseError(source, f"bad number in {lines[-1]!r}", len(lines)) from exc
    _check_rpc(r, source, len(lines))
    return r


def _check_rpc(r: RpcResult, source: str, line: int | None = None) -> None:
    """Rates, latencies and sizes positive; percentiles in order."""
    values = (r.transactions_per_s, r.mean_usec, r.request_bytes, r.response_bytes)
    if not all(0 < v < float("inf") for v in values):
        raise ParseError(source, f"{r.transactions_per_s} transactions/s of {r.request_bytes}/{r.response_bytes} "
                                 f"bytes at {r.mean_usec} usec is not a result", line)
    pcts = [p for p in (r.p50_usec, r.p90_usec, r.p99_usec) if p is not None]
    if any(not 0 <= p < float("inf") for p in pcts) or pcts != sorted(pcts):
        raise ParseError(source, f"percentiles out of order: p50 {r.p50_usec}, p90 {r.p90_usec}, p99 {r.p99_usec}",
                         line)


_VALID = re.compile(r"\[Valid Duration\] RunTime=(\d+(?:\.\d+)?) sec; SentMessages=(\d+); "
                    r"ReceivedMessages=(\d+)\s*$", re.M)
_AVG_RTT = re.compile(r"====> avg-rtt=(\d+(?:\.\d+)?) \(std-dev=\d+(?:\.\d+)?\)")
_ROUND_TRIP = re.compile(r"Summary: Round trip is (\d+(?:\.\d+)?) usec")
_OBSERVATIONS = re.compile(r"Total (\d+) observations")
_PERCENTILE = re.compile(r"---> percentile\s+(\d+(?:\.\d+)?)\s+=\s+(\d+(?:\.\d+)?)\s*$", re.M)
_MIN = re.compile(r"---> <MIN> observation =\s+(\d+(?:\.\d+)?)\s*$", re.M)


def parse_sockperf(text: str, size_bytes: int, source: str = "sockperf.txt") -> RpcResult:
    """`sockperf ping-pong --tcp ... --full-rtt` output (it exits 0 even when it fails).

    Without --full-rtt sockperf prints half the round trip (avg-latency=, "Latency is"): refused,
    as every latency hostnet keeps is a round trip. The statistics must be whole: the percentiles
    end with the <MIN> line, and the observations are the messages received."""
    text = _ANSI.sub("", text)
    err = re.search(r"sockperf: ERROR: (.*)", text)
    if err:
        raise ParseError(source, f"sockperf error: {err.group(1).strip()}", _line_of(text, err))
    if re.search(r"avg-latency=|Summary: Latency is", text):
        raise ParseError(source, "sockperf ran without --full-rtt: its avg-latency is half the round trip "
                                 "(one way); run it with --full-rtt")
    valid, avg = _VALID.search(text), _AVG_RTT.search(text)
    if not valid or not avg:
        raise ParseError(source, "no [Valid Duration] or avg-rtt line (did the test run?)")
    runtime, sent, received = float(valid.group(1)), int(valid.group(2)), int(valid.group(3))
    if runtime <= 0 or received <= 0 or received > sent:
        raise ParseError(source, f"{received} of {sent} messages received in {runtime} s is not a result",
                         _line_of(text, valid))
    _check_sockperf_statistics(text, avg, received, source)
    pct = {float(p): float(v) for p, v in _PERCENTILE.findall(text)}
    r = RpcResult(received / runtime, float(avg.group(1)), pct.get(50.0), pct.get(90.0), pct.get(99.0),
                  size_bytes, size_bytes, "round trip")
    _check_rpc(r, source)
    return r


def _check_sockperf_statistics(text: str, avg: re.Match, received: int, source: str) -> None:
    summary, observations = _ROUND_TRIP.search(text), _OBSERVATIONS.search(text)
    if not summary or summary.group(1) != avg.group(1):
        raise ParseError(source, "the 'Round trip is' summary is missing or differs from avg-rtt")
    if not observations or int(observations.group(1)) != received:
        raise ParseError(source, "the observation count is missing or is not the messages received")
    if not _MIN.search(text):
        raise ParseError(source, "no '<MIN> observation' line after the percentiles: cut short?")


def _line_of(text: str, m: re.Match) -> int:
    return text.count("\n", 0, m.start()) + 1
