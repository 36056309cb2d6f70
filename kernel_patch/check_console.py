#!/usr/bin/env python3
"""Check the rx_prof boot test's serial console (kernel_patch/boot/init prints it).

Usage: check_console.py serial.log. Prints what it measured and one line per check; exit 1 on a
failed check. Pure over the text: the same checks run on tests/fixtures/rx_prof_console.txt.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostnet.parsers.bpftrace import subtract_maps  # noqa: E402
from hostnet.parsers.rx_prof import parse_console  # noqa: E402

LOSS_SETTING = 0.02   # boot/init writes 20000 ppm
# Binomial: at n ~ 50 000 selected datagrams one standard deviation is 0.06 percentage points;
# 0.4 points is more than 6 of them, so a correct generator does not fail by chance.
LOSS_TOLERANCE = 0.004
PHASES = ("start", "off", "hist", "unselected", "loss-udp", "gso", "loss-tcp")


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
    checks.append((d["gso"]["packet_loss_gen_seen"] == 0, "packet_loss_gen=0 turns the generator off again"))
    tcp = d["loss-tcp"]
    tseen, tdrops = tcp["packet_loss_gen_seen"], tcp["packet_loss_gen_drops"]
    tcp_rate = tdrops / tseen if tseen else math.nan
    # MSS-sized packets at MTU 1500: some 4 000 selected packets, one standard deviation ~0.2 points
    checks.append((tseen >= 1000 and abs(tcp_rate - LOSS_SETTING) <= 2.5 * LOSS_TOLERANCE,
                   f"TCP drop rate {100 * tcp_rate:.2f} % ({tdrops} of {tseen}) is within "
                   f"{250 * LOSS_TOLERANCE:.0f} point of {100 * LOSS_SETTING:.0f} %"))
    notes.append(f"tcp at MTU 1500: generator saw {tseen}, dropped {tdrops} = {100 * tcp_rate:.2f} % (setting 2 %)")
    tcp_loads = {x["port"]: x for x in con["loads"] if x["proto"] == "tcp"}
    checks.append((all(int(x["bytes"]) > 0 for x in tcp_loads.values()) and len(tcp_loads) == 6,
                   "every TCP flow completed (6)"))
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
