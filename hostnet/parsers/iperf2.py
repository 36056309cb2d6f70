"""iperf2 UDP reports (`iperf -u`, human-readable format), client or server side."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

_BYTES = {"Bytes": 1, "KBytes": 1 << 10, "MBytes": 1 << 20, "GBytes": 1 << 30}
_BITS = {"bits/sec": 1, "Kbits/sec": 1e3, "Mbits/sec": 1e6, "Gbits/sec": 1e9}
_NUM = r"[0-9]+(?:\.[0-9]+)?"
# "[  1] 0.0000-3.0006 sec   457 MBytes  1.28 Gbits/sec   0.001 ms 15916/342106 (4.7%)";
# iperf 2.0.x pads the end time: "[  3]  0.0- 3.0 sec ..."
_START = re.compile(rf"^\[\s*\d+\]\s+{_NUM}-\s*{_NUM} sec")  # any report line, whole or damaged
# iperf 2.1's -e (enhanced) reports add columns, read past: the client's "89164/0    44582 pps"
# (Write/Err, PPS), the receiver's "0.001/0.000/0.217/0.002 ms 44582 pps 44582/0(0) pkts 48402223"
# (latency avg/min/max/stdev, PPS, Rx/inP, NetPwr)
_ENHANCED_SENT = r"(?:\s+\d+/\d+\s+\d+ pps)?"
_ENHANCED_RECEIVED = rf"(?:\s+{_NUM}/{_NUM}/{_NUM}/{_NUM} ms\s+\d+ pps(?:\s+\d+/\d+\(\d+\) pkts)?(?:\s+\d+)?)?"
_LINE = re.compile(rf"^\[\s*\d+\]\s+(?P<start>{_NUM})-\s*(?P<end>{_NUM}) sec\s+(?P<xfer>{_NUM}) (?P<xu>\w+)\s+"
                   rf"(?P<rate>{_NUM}) (?P<ru>[KMG]?bits/sec)(?:\s+(?P<jitter>{_NUM}) ms\s+"
                   rf"(?P<lost>-?\d+)/\s*(?P<total>\d+)\s+\((?P<pct>{_NUM}(?:e[+-]?\d+)?|-?nan)%\){_ENHANCED_RECEIVED}"
                   rf"|{_ENHANCED_SENT})\s*$")
_OUT_OF_ORDER = re.compile(r"datagrams received out-of-order$")
_SENT = re.compile(r"^\[\s*\d+\] Sent (\d+) datagrams")
# "UDP buffer size: 2.00 MByte (WARNING: requested 1.00 MByte)" / "UDP buffer size:  208 KByte (default)"
_BUFFER = re.compile(rf"^UDP buffer size:\s+(?P<size>{_NUM}) (?P<unit>[KMG]?Byte)")


@dataclass(frozen=True)
class Report:
    seconds: float
    bytes: float
    bps: float
    jitter_ms: float | None = None  # receiver-side reports only
    lost: int | None = None
    total: int | None = None

    @property
    def loss_pct(self) -> float | None:
        return None if not self.total or self.lost is None else 100.0 * self.lost / self.total


@dataclass(frozen=True)
class Iperf2Udp:
    buffer_bytes: int | None        # the socket buffer the kernel granted (Linux doubles the request)
    local: Report | None            # this side's whole-run summary (client: what it sent)
    server: Report | None           # the receiver's whole-run summary (client: the "Server Report", if it came)
    datagrams_sent: int | None      # client only


def _report(m: re.Match) -> Report:
    """A whole report line -> Report; ValueError says what in it cannot be right."""
    xu, ru = m["xu"], m["ru"]
    if xu not in _BYTES:
        raise ValueError(f"unknown transfer unit {xu!r}")
    rep = Report(float(m["end"]) - float(m["start"]), float(m["xfer"]) * _BYTES[xu], float(m["rate"]) * _BITS[ru],
                 *((float(m["jitter"]), int(m["lost"]), int(m["total"])) if m["total"] is not None else ()))
    if rep.seconds <= 0 or rep.bps <= 0 or rep.bytes <= 0:
        raise ValueError(f"{rep.bytes:.0f} bytes at {rep.bps:.0f} bit/s over {rep.seconds} s is not a result")
    _check_rate(m, rep)
    if rep.total is not None:
        _check_loss(m["pct"], rep)
    return rep


def _check_rate(m: re.Match, rep: Report) -> None:
    """The rate is the transfer over the interval, as printed: 3 significant digits each, and the
    end time to its printed decimals (a digit lost or changed breaks this by far more)."""
    decimals = len(m["end"].partition(".")[2])
    tolerance = 0.011 + 0.5 * 10 ** -decimals / rep.seconds
    derived = rep.bytes * 8 / rep.seconds
    if abs(derived - rep.bps) > tolerance * rep.bps:
        raise ValueError(f"{m['rate']} {m['ru']} is not {m['xfer']} {m['xu']} over {rep.seconds:.4g} s")


def _check_loss(pct: str, rep: Report) -> None:
    """lost/total is a count out of a count, and iperf prints its share (%.2g) beside it."""
    if rep.total <= 0 or not 0 <= rep.lost <= rep.total:
        raise ValueError(f"{rep.lost}/{rep.total} datagrams lost is not a loss count")
    printed, derived = float(pct), rep.loss_pct
    if not abs(printed - derived) <= 0.051 * max(printed, derived) + 1e-9:  # (nan fails too)
        raise ValueError(f"{rep.lost}/{rep.total} is {derived:.3g} %, not the {pct} % printed beside it")


def parse_iperf2_udp(text: str, source: str = "iperf -u") -> Iperf2Udp:
    """The longest report from t=0 is the whole-run summary (interval reports, `-i`, are shorter).

    On the client, lines after "Server Report:" are the receiver's numbers; without them (the
    server's report did not come back) `server` is None. A server-side text has only receiver lines.
    A report line that does not parse whole, or whose numbers disagree, raises.
    """
    if not text.strip():
        raise ParseError(source, "empty output (did iperf run?)")
    buffer = sent = None
    local: Report | None = None
    server: Report | None = None
    in_server_report = False
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if (b := _BUFFER.match(line)) and buffer is None:
            buffer = int(float(b["size"]) * _BYTES[b["unit"] + "s"])
        elif s := _SENT.match(line):
            sent = int(s[1])
        elif line.endswith("Server Report:"):
            in_server_report = True
        elif _START.match(line) and not _OUT_OF_ORDER.search(line):
            rep, start = _report_line(line, source, n)
            if in_server_report and rep.total is None:
                raise ParseError(source, "a server report without its lost/total datagrams", n)
            if start != 0.0:
                continue
            receiver_side = in_server_report or rep.total is not None
            best = server if receiver_side else local
            if best is None or rep.seconds >= best.seconds:
                if receiver_side:
                    server = rep
                else:
                    local = rep
    if local is None and server is None:
        raise ParseError(source, "no iperf2 report line (connection refused or killed early?)")
    if sent is not None:  # client side: its own summary is the sender's; the receiver's is the server report
        return Iperf2Udp(buffer, local, server, sent)
    if local is not None:
        raise ParseError(source, "a sender's report without its 'Sent N datagrams' line (cut short or killed?)")
    return Iperf2Udp(buffer, server, server, None)


def _report_line(line: str, source: str, n: int) -> tuple[Report, float]:
    m = _LINE.match(line)
    if not m:
        raise ParseError(source, f"damaged report line {line[:100]!r}", n)
    try:
        return _report(m), float(m["start"])
    except ValueError as exc:
        raise ParseError(source, str(exc), n) from exc
