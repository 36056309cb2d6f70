"""iperf3 -J output."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from . import ParseError


@dataclass(frozen=True)
class Iperf3Result:
    sent_bps: float
    received_bps: float
    seconds: float
    retransmits: int | None
    sender_cpu_pct: float     # iperf3's own getrusage view; a cross-check only
    receiver_cpu_pct: float
    congestion_control: str | None
    start_epoch: float
    # (start s, end s, bit/s) per reported interval after the warm-up (omitted intervals left out);
    # times from the end of the warm-up, as iperf3 counts them
    intervals: tuple[tuple[float, float, float], ...] = ()

    @property
    def interval_bps(self) -> tuple[float, ...]:
        return tuple(bps for _, _, bps in self.intervals)


def parse_iperf3(text: str, source: str = "iperf3.json") -> Iperf3Result:
    """Client-side `iperf3 -J` JSON. iperf3 can exit 0 with an "error" key: that raises, and so
    does a field of the wrong type or a run that moved nothing (0 bit/s is not a result)."""
    if not text.strip():
        raise ParseError(source, "empty output (did iperf3 run?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(source, f"not JSON: {exc.msg}", exc.lineno) from exc
    if not isinstance(doc, dict):
        raise ParseError(source, f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("error"):
        raise ParseError(source, f"iperf3 error: {doc['error']}")
    j = _Json(source)
    end = j.obj(doc, "end")
    sent, recv = j.obj(end, "sum_sent", "end."), j.obj(end, "sum_received", "end.")
    cpu = j.obj(end, "cpu_utilization_percent", "end.") if "cpu_utilization_percent" in end else {}
    return Iperf3Result(
        sent_bps=j.rate(sent, "end.sum_sent"),
        received_bps=j.rate(recv, "end.sum_received"),
        seconds=j.positive(recv, "seconds", "end.sum_received."),
        retransmits=j.count(sent, "retransmits", "end.sum_sent.") if "retransmits" in sent else None,
        sender_cpu_pct=j.pct(cpu, "host_total"),
        receiver_cpu_pct=j.pct(cpu, "remote_total"),
        congestion_control=j.text(end, "sender_tcp_congestion"),
        start_epoch=j.positive(j.obj(j.obj(doc, "start"), "timestamp", "start."), "timesecs", "start.timestamp."),
        intervals=_intervals(doc, j),
    )


def _intervals(doc: dict, j: _Json) -> tuple[tuple[float, float, float], ...]:
    intervals = doc.get("intervals", [])
    if not isinstance(intervals, list):
        raise ParseError(j.source, "intervals is not a list")
    rates = []
    for i, interval in enumerate(intervals):
        if not isinstance(interval, dict):
            j.fail(f"intervals[{i}]", f"expected an object, got {interval!r:.40}")
        s = j.obj(interval, "sum", f"intervals[{i}].")
        if s.get("omitted") is not True:  # warm-up intervals (-O) are left out
            p = f"intervals[{i}].sum."
            rates.append((j.number(s, "start", p), j.number(s, "end", p), j.number(s, "bits_per_second", p)))
    return tuple(rates)


class _Json:
    """Typed field access that names the JSON path of whatever is missing or wrong."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, why: str):
        raise ParseError(self.source, f"{path}: {why}")

    def obj(self, parent: dict, key: str, prefix: str = "") -> dict:
        value = parent.get(key)
        if not isinstance(value, dict):
            self.fail(prefix + key, "missing" if value is None else f"expected an object, got {value!r:.40}")
        return value

    def number(self, parent: dict, key: str, prefix: str = "") -> float:
        value = parent.get(key)
        # bool is an int in Python; "12" is a string: both are the wrong type here
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(prefix + key, "missing" if value is None else f"not a number: {value!r:.40}")
        if value < 0:
            self.fail(prefix + key, f"negative: {value}")
        return float(value)

    def positive(self, parent: dict, key: str, prefix: str = "") -> float:
        value = self.number(parent, key, prefix)
        if value <= 0:
            self.fail(prefix + key, f"{value}: nothing was measured")
        return value

    def count(self, parent: dict, key: str, prefix: str = "") -> int:
        value = self.number(parent, key, prefix)
        if not isinstance(parent[key], int):
            self.fail(prefix + key, f"not a whole number: {parent[key]!r}")
        return int(value)

    def rate(self, summary: dict, path: str) -> float:
        """bits_per_second > 0, and equal to bytes * 8 / seconds (a damaged digit breaks that)."""
        bps = self.number(summary, "bits_per_second", path + ".")
        if bps <= 0:
            self.fail(path + ".bits_per_second", "0 bit/s without an error: the run moved nothing")
        if "bytes" in summary:
            derived = self.number(summary, "bytes", path + ".") * 8 / self.positive(summary, "seconds", path + ".")
            if abs(derived - bps) > 1e-4 * bps:
                self.fail(path, f"bits_per_second {bps:.6g} is not bytes * 8 / seconds ({derived:.6g})")
        return bps

    def pct(self, cpu: dict, key: str) -> float:
        return self.number(cpu, key, "end.cpu_utilization_percent.") if key in cpu else float("nan")

    def text(self, parent: dict, key: str) -> str | None:
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            self.fail(f"end.{key}", f"not a string: {value!r:.40}")
        return value
