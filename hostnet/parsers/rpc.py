"""RPC ping-pong tools: netperf TCP_RR (omni output selectors) and sockperf ping-pong."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

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
    row = dict(zip(NETPERF_FIELDS, parts, strict=True))
    if row["THROUGHPUT_UNITS"] != "Trans/s":
        raise ParseError(source, f"expected Trans/s, got {row['THROUGHPUT_UNITS']!r} (not a TCP_RR test?)")
    try:
        return RpcResult(float(row["THROUGHPUT"]), float(row["MEAN_LATENCY"]), float(row["P50_LATENCY"]),
                         float(row["P90_LATENCY"]), float(row["P99_LATENCY"]), int(row["REQUEST_SIZE"]),
                         int(row["RESPONSE_SIZE"]), "transaction")
    except ValueError as exc:
        raise ParseError(source, f"bad number in {lines[-1]!r}", len(lines)) from exc


def parse_sockperf(text: str, size_bytes: int, source: str = "sockperf.txt") -> RpcResult:
    """`sockperf ping-pong --tcp ... --full-rtt` output (it exits 0 even when it fails)."""
    text = _ANSI.sub("", text)
    err = re.search(r"sockperf: ERROR: (.*)", text)
    if err:
        raise ParseError(source, f"sockperf error: {err.group(1).strip()}")
    valid = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
    avg = re.search(r"avg-rtt=([\d.]+)", text)
    if not valid or not avg:
        raise ParseError(source, "no [Valid Duration] or avg-rtt line (did the test run?)")
    pct = {float(p): float(v) for p, v in re.findall(r"percentile\s+([\d.]+)\s+=\s+([\d.]+)", text)}
    runtime, received = float(valid.group(1)), int(valid.group(3))
    if runtime <= 0:
        raise ParseError(source, "zero valid duration")
    return RpcResult(received / runtime, float(avg.group(1)), pct.get(50.0), pct.get(90.0), pct.get(99.0),
                     size_bytes, size_bytes, "round trip")
