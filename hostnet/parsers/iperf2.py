"""iperf2 UDP reports (`iperf -u`, human-readable format), client or server side."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

_BYTES = {"Bytes": 1, "KBytes": 1 << 10, "MBytes": 1 << 20, "GBytes": 1 << 30}
_BITS = {"bits/sec": 1, "Kbits/sec": 1e3, "Mbits/sec": 1e6, "Gbits/sec": 1e9}
_NUM = r"[0-9.]+"
# "[  1] 0.0000-3.0006 sec   457 MBytes  1.28 Gbits/sec   0.001 ms 15916/342106 (4.7%)";
# iperf 2.0.x pads the end time: "[  3]  0.0- 3.0 sec ..."
_LINE = re.compile(rf"^\[\s*\d+\]\s+(?P<start>{_NUM})-\s*(?P<end>{_NUM}) sec\s+(?P<xfer>{_NUM}) (?P<xu>\w+)\s+"
                   rf"(?P<rate>{_NUM}) (?P<ru>[KMG]?bits/sec)(?:\s+(?P<jitter>{_NUM}) ms\s+"
                   rf"(?P<lost>-?\d+)/\s*(?P<total>\d+))?")
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
    xu, ru = m["xu"], m["ru"]
    if xu not in _BYTES:
        raise ValueError(f"unknown transfer unit {xu!r}")
    jitter = float(m["jitter"]) if m["jitter"] is not None else None
    lost = int(m["lost"]) if m["lost"] is not None else None
    total = int(m["total"]) if m["total"] is not None else None
    return Report(float(m["end"]) - float(m["start"]), float(m["xfer"]) * _BYTES[xu], float(m["rate"]) * _BITS[ru],
                  jitter, lost, total)


def parse_iperf2_udp(text: str, source: str = "iperf -u") -> Iperf2Udp:
    """The longest report from t=0 is the whole-run summary (interval reports, `-i`, are shorter).

    On the client, lines after "Server Report:" are the receiver's numbers; without them (the
    server's report did not come back) `server` is None. A server-side text has only receiver lines.
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
        elif m := _LINE.match(line):
            try:
                rep = _report(m)
            except ValueError as exc:
                raise ParseError(source, str(exc), n) from exc
            if float(m["start"]) != 0.0:
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
    return Iperf2Udp(buffer, server if local is None else local, server, None)
