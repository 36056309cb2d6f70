#!/usr/bin/env python3
"""Check the rx_prof boot test's serial console (kernel_patch/boot/init prints it).

Usage: check_console.py serial.log. Prints what it measured and one line per check; exit 1 on a
failed check. Pure over the text: the same checks run on tests/fixtures/rx_prof_console.txt.
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostnet.parsers.bpftrace import subtract_maps  # noqa: E402
from hostnet.parsers.rx_prof import parse_console  # noqa: E402

LOSS_SETTING = 0.02   # boot/init writes 20000 ppm
# Binomial: at n ~ 50 000 selected datagrams one standard deviation is 0.06 percentage points;
# 0.4 points is more than 6 of them, so a correct generator does not fail by chance.
LOSS_TOLERANCE = 0.004
PHASES = ("start", "off", "hist", "unselected", "loss-udp", "loss-noselector", "gso", "loss-tcp", "loss-off")
# What boot/init asks rxload to move on each TCP port (bytes): a flow "completed" when the receiver
# read exactly this much.
TCP_REQUESTED = {"5000": 4 << 20, "5001": 64 << 20, "5002": 4 << 20, "5005": 8 << 20, "5006": 8 << 20,
                 "5004": 4 << 20, "5008": 4 << 20}
GSO_FLOW_BYTES = 8 << 20
MSS_1500 = 1448   # lo at MTU 1500, TCP timestamps on
_SNMP = re.compile(r"=== RXPROF snmp (\S+)\s*$")
_CLOCK = re.compile(r"clocksource: Switched to clocksource (\S+)")
# Clocks that step once per timer tick (4 ms at HZ=250): a latency below a tick reads as 0.
TICK_CLOCKS = ("jiffies", "refined-jiffies")


def guest_clock(text: str) -> str | None:
    """The clocksource the guest kernel ended on (its last "Switched to clocksource"), or None."""
    found = _CLOCK.findall(text)
    return found[-1] if found else None


def parse_snmp_blocks(text: str) -> dict[str, dict[str, dict[str, int]]]:
    """The "=== RXPROF snmp LABEL" blocks (/proc/net/snmp) -> {label: {"Ip": {name: n}, "Tcp": ...}}."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    label, heads = None, {}
    for raw in text.replace("\r", "").splitlines():
        m = _SNMP.search(raw)
        if m:
            label, heads = m.group(1), {}
            out[label] = {}
            continue
        if "=== RXPROF" in raw:
            label = None
            continue
        if label is None or ":" not in raw or raw.startswith("["):
            continue
        proto, _, rest = raw.partition(":")
        fields = rest.split()
        if fields and not fields[0].lstrip("-").isdigit():
            heads[proto] = fields
        elif proto in heads and len(fields) == len(heads[proto]):
            out[label][proto] = dict(zip(heads[proto], map(int, fields), strict=True))
    return out


def extra_segments(snmp: dict, before: str, after: str) -> tuple[int, int] | None:
    """(TCP segments sent, segments beyond one per IP skb) between two snapshots, or None.

    Tcp OutSegs + RetransSegs count segments (tcp_skb_pcount), Ip OutRequests counts skbs handed
    to IP: their difference is the number of segments that travelled inside multi-segment (GSO)
    skbs. Only the one flow runs in the window, so it is that flow's."""
    try:
        a, b = snmp[before], snmp[after]
        segs = (b["Tcp"]["OutSegs"] - a["Tcp"]["OutSegs"]) + (b["Tcp"]["RetransSegs"] - a["Tcp"]["RetransSegs"])
        skbs = b["Ip"]["OutRequests"] - a["Ip"]["OutRequests"]
    except KeyError:
        return None
    return segs, segs - skbs


def evaluate(text: str) -> tuple[list[tuple[bool, str]], list[str]]:
    """-> ([(ok, check)], [measurement lines])."""
    con = parse_console(text)
    if con["patch_absent"] or not con["phases"]:
        return [(False, "the guest kernel has /proc/net/rx_prof (patch present)")], []
    ph = con["phases"]
    missing = [p for p in PHASES if p not in ph]
    if missing:
        return [(False, f"all phases printed (missing: {', '.join(missing)})")], []
    d = {p: subtract_maps(ph[p], ph[prev]) for prev, p in zip(PHASES, PHASES[1:], strict=False)}
    checks: list[tuple[bool, str]] = []
    notes = [f"kernel {con['kernel']}"]
    checks.append((bool(con["defaults"]) and not any(con["defaults"].values()),
                   f"every sysctl is 0 by default ({con['defaults']})"))
    off = d["off"]
    checks.append((off["packet_loss_gen_seen"] == 0 and off["rx_copy_latency_ns"].total == 0
                   and off["post_gro_skb_len"].total == 0, "nothing is counted while all features are off"))
    lat, size = d["hist"]["rx_copy_latency_ns"], d["hist"]["post_gro_skb_len"]
    checks.append((lat.total > 100, f"latency histogram has samples ({lat.total})"))
    clock = guest_clock(text)
    notes.append(f"guest clocksource: {clock or 'not printed'}")
    checks.append((clock is not None and clock not in TICK_CLOCKS,
                   f"the guest's clock resolves sub-tick latencies (clocksource {clock or 'not printed'}"
                   + ("; a tick clock reads most latencies as 0" if clock in TICK_CLOCKS else "") + ")"))
    p50 = lat.quantile(0.5)
    checks.append((p50 is not None and 100 <= p50 < 1e9, f"median latency bucket is between 100 ns and 1 s ({p50} ns)"))
    checks.append((size.total > 100, f"post-GRO size histogram has samples ({size.total})"))
    largest = max((lo for lo, _, n in size.buckets if n), default=0)
    checks.append((16384 <= largest <= 65536,
                   f"largest post-GRO skb is a loopback GSO packet, 16-64 KiB (bucket from {largest} B)"))
    un = d["unselected"]
    checks.append((un["rx_copy_latency_ns"].total == 0 and un["post_gro_skb_len"].total == 0,
                   "traffic on an unselected port is not counted"))
    udp = d["loss-udp"]
    seen, drops = udp["packet_loss_gen_seen"], udp["packet_loss_gen_drops"]
    rate = drops / seen if seen else math.nan
    checks.append((seen >= 40000, f"loss generator saw the UDP datagrams ({seen})"))
    checks.append((abs(rate - LOSS_SETTING) <= LOSS_TOLERANCE,
                   f"UDP drop rate {100 * rate:.2f} % is within {100 * LOSS_TOLERANCE:.1f} points of "
                   f"{100 * LOSS_SETTING:.0f} %"))
    udp_load = next((x for x in con["loads"] if x["proto"] == "udp"), None)
    if udp_load:
        sent, got = int(udp_load["sent"]), int(udp_load["received"])
        checks.append((got <= sent - drops, f"receiver got at most sent - drops ({got} <= {sent} - {drops})"))
        notes.append(f"udp: sent {sent}, received {got}, generator saw {seen}, dropped {drops} "
                     f"= {100 * rate:.2f} % (setting 2 %)")
    nosel = d["loss-noselector"]
    checks.append((nosel["packet_loss_gen_seen"] == 0 and nosel["packet_loss_gen_drops"] == 0,
                   "packet_loss_gen=20000 with neither rx_prof_port nor rx_prof_ifindex set drops nothing "
                   f"(seen {nosel['packet_loss_gen_seen']}, dropped {nosel['packet_loss_gen_drops']})"))
    nosel_load = next((x for x in con["loads"] if x["proto"] == "udp" and x["port"] == "5007"), None)
    if nosel_load:
        notes.append(f"udp, loss generator without a selector: sent {nosel_load['sent']}, "
                     f"received {nosel_load['received']}")
    off_again = d["loss-off"]
    checks.append((off_again["packet_loss_gen_seen"] == 0 and off_again["packet_loss_gen_drops"] == 0,
                   "packet_loss_gen=0 turns the generator off again (port still selected)"))
    tcp = d["loss-tcp"]
    tseen, tdrops = tcp["packet_loss_gen_seen"], tcp["packet_loss_gen_drops"]
    tcp_rate = tdrops / tseen if tseen else math.nan
    # MSS-sized packets at MTU 1500: some 4 000 selected packets, one standard deviation ~0.2 points
    checks.append((tseen >= 1000 and abs(tcp_rate - LOSS_SETTING) <= 2.5 * LOSS_TOLERANCE,
                   f"TCP drop rate {100 * tcp_rate:.2f} % ({tdrops} of {tseen}) is within "
                   f"{250 * LOSS_TOLERANCE:.0f} point of {100 * LOSS_SETTING:.0f} %"))
    notes.append(f"tcp at MTU 1500: generator saw {tseen}, dropped {tdrops} = {100 * tcp_rate:.2f} % (setting 2 %)")
    tcp_loads = {x["port"]: x for x in con["loads"] if x["proto"] == "tcp"}
    short = {p: (int(tcp_loads[p]["bytes"]) if p in tcp_loads else None, want)
             for p, want in TCP_REQUESTED.items()
             if p not in tcp_loads or int(tcp_loads[p]["bytes"]) != want}
    checks.append((not short and set(tcp_loads) == set(TCP_REQUESTED),
                   f"every TCP flow moved the bytes boot/init asked for ({len(TCP_REQUESTED)} flows"
                   + (f"; port: (got, asked) {short}" if short else "") + ")"))
    # gso_honour_off: the receive side cannot tell (lo segments a GSO skb before it receives
    # it), the sender's counters can: with GSO forced on TCP hands IP multi-segment skbs, with
    # gso_honour_off=1 one skb per segment.
    snmp = parse_snmp_blocks(text)
    data_segs = GSO_FLOW_BYTES // MSS_1500
    forced, honoured = extra_segments(snmp, "gso-start", "gso0"), extra_segments(snmp, "gso0", "gso1")
    checks.append((forced is not None and forced[1] >= data_segs // 4,
                   "gso_honour_off=0, TSO/GSO off on lo: TCP still sends multi-segment GSO skbs "
                   f"(segments beyond one per skb: {forced and forced[1]}, at least {data_segs // 4})"))
    checks.append((honoured is not None and abs(honoured[1]) <= honoured[0] // 100,
                   "gso_honour_off=1: one segment per skb "
                   f"(segments beyond one per skb: {honoured and honoured[1]} of {honoured and honoured[0]})"))
    for label, x in (("gso_honour_off=0", forced), ("gso_honour_off=1", honoured)):
        if x:
            notes.append(f"tcp 8 MiB {label}: {x[0]} segments sent in {x[0] - x[1]} IP skbs")
    for port, label in (("5005", "lo MTU 1500, TSO/GSO off, gso_honour_off=0"),
                        ("5006", "lo MTU 1500, TSO/GSO off, gso_honour_off=1")):
        x = tcp_loads.get(port)
        if x:
            mbps = 8 * int(x["bytes"]) / float(x["seconds"]) / 1e6
            notes.append(f"tcp {label}: {int(x['bytes'])} B in {x['seconds']} s = {mbps:.0f} Mbit/s (TCG)")
    notes.append("latency ns (log2 bucket: count): " + ", ".join(f"{lo}: {n}" for lo, _, n in lat.buckets if n))
    notes.append("post-GRO skb len (log2 bucket: count): " + ", ".join(f"{lo}: {n}" for lo, _, n in size.buckets if n))
    checks.append((con["done"], "the guest ran to the end"))
    return checks, notes


def main(argv: list[str]) -> int:
    checks, notes = evaluate(Path(argv[1]).read_text(errors="replace"))
    for line in notes:
        print(line)
    for ok, what in checks:
        print(("ok   " if ok else "FAIL ") + what)
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
