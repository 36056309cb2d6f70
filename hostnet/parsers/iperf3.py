"""iperf3 -J output."""
from __future__ import annotations

import json
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
    interval_bps: tuple[float, ...] = ()  # per-interval sender rate, warm-up (omitted) intervals left out


def parse_iperf3(text: str, source: str = "iperf3.json") -> Iperf3Result:
    """Client-side `iperf3 -J` JSON. iperf3 can exit 0 with an "error" key: that raises."""
    if not text.strip():
        raise ParseError(source, "empty output (did iperf3 run?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(source, f"not JSON: {exc.msg}", exc.lineno) from exc
    if doc.get("error"):
        raise ParseError(source, f"iperf3 error: {doc['error']}")
    end = doc.get("end") or {}
    try:
        sent, recv = end["sum_sent"], end["sum_received"]
        cpu = end.get("cpu_utilization_percent", {})
        return Iperf3Result(
            sent_bps=float(sent["bits_per_second"]),
            received_bps=float(recv["bits_per_second"]),
            seconds=float(recv["seconds"]),
            retransmits=sent.get("retransmits"),
            sender_cpu_pct=float(cpu.get("host_total", float("nan"))),
            receiver_cpu_pct=float(cpu.get("remote_total", float("nan"))),
            congestion_control=end.get("sender_tcp_congestion"),
            start_epoch=float(doc["start"]["timestamp"]["timesecs"]),
            interval_bps=tuple(float(i["sum"]["bits_per_second"]) for i in doc.get("intervals", [])
                               if not i["sum"].get("omitted")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(source, f"missing or bad field {exc}") from exc
