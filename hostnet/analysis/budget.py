"""The per-packet time budget: pure arithmetic on link rate and frame size.

A frame of F bytes (Ethernet header + payload + FCS) occupies F + 20 bytes of wire time:
8 bytes of preamble and start-of-frame delimiter and a 12-byte inter-frame gap. So a
minimum 64-byte frame takes 84 bytes on the wire and a full 1500-byte-MTU frame 1538.
"""
from __future__ import annotations

import pandas as pd

PREAMBLE_SFD_BYTES = 8
INTERFRAME_GAP_BYTES = 12
ETHERNET_HEADER_FCS_BYTES = 18  # 14-byte header + 4-byte FCS (no VLAN tag)

RATES_GBPS = [10, 25, 40, 100, 200, 400]
# 64 = minimum frame; 1518 = 1500-byte MTU; 9018 = 9000-byte (jumbo) MTU
FRAME_BYTES = [64, 128, 256, 512, 1024, 1518, 9018]


def frame_for_mtu(mtu: int) -> int:
    return mtu + ETHERNET_HEADER_FCS_BYTES


def wire_bytes(frame_bytes: int) -> int:
    if frame_bytes < 64:
        raise ValueError(f"an Ethernet frame is at least 64 bytes, not {frame_bytes}")
    return frame_bytes + PREAMBLE_SFD_BYTES + INTERFRAME_GAP_BYTES


def interval_ns(frame_bytes: int, rate_gbps: float) -> float:
    """Time between back-to-back frames at line rate (1 Gbit/s = 1 bit per ns)."""
    if rate_gbps <= 0:
        raise ValueError(f"link rate must be positive, not {rate_gbps}")
    return wire_bytes(frame_bytes) * 8 / rate_gbps


def packets_per_s(frame_bytes: int, rate_gbps: float) -> float:
    return 1e9 / interval_ns(frame_bytes, rate_gbps)


def cycles(ns: float, clock_mhz: float) -> float:
    return ns * clock_mhz / 1000.0


def copy_bound_gbps(copy_gib_per_s: float) -> float:
    """Upper bound on a flow whose every byte is copied once at this memcpy bandwidth."""
    return copy_gib_per_s * 2**30 * 8 / 1e9


def table(frames=FRAME_BYTES, rates=RATES_GBPS, clock_mhz: float | None = None) -> pd.DataFrame:
    """One row per (rate, frame): wire bytes, ns between packets, Mpps and, given a clock, cycles."""
    rows = []
    for rate in rates:
        for frame in frames:
            ns = interval_ns(frame, rate)
            row = {"rate_gbps": rate, "frame_bytes": frame, "wire_bytes": wire_bytes(frame),
                   "interval_ns": ns, "mpps": packets_per_s(frame, rate) / 1e6}
            if clock_mhz:
                row["cycles"] = cycles(ns, clock_mhz)
            rows.append(row)
    return pd.DataFrame(rows)
