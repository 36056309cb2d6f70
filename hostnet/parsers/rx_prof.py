"""/proc/net/rx_prof of a kernel with hostnet's kernel_patch/ series, and the boot test's console.

The file is "<name> <value>" counter lines and "<hist> <bucket lower bound> <count>" lines of log2
histograms (bucket [lo, 2*lo), bucket 0 holds only 0; empty buckets are left out). The result has
the shape of `parse_bpftrace_maps`, so `subtract_maps` takes the difference of two readings.
"""
from __future__ import annotations

import re

from . import ParseError, is_count, require_complete
from .bpftrace import Histogram

HISTOGRAMS = ("rx_copy_latency_ns", "post_gro_skb_len")
_LINE = re.compile(r"^([a-z_]+) (\d+)(?: (\d+))?$")


def parse_rx_prof(text: str, source: str = "rx_prof") -> dict:
    """-> {counter: int, histogram: Histogram}; the format version is the "rx_prof" counter.
    A name twice, a histogram bucket that is not a power of two (or 0), or an unterminated last
    line (its number may be cut) raises."""
    require_complete(text, source)
    maps: dict = {}
    buckets: dict[str, dict[int, int]] = {h: {} for h in HISTOGRAMS}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line.strip())
        if not m:
            raise ParseError(source, f"unrecognised line {line!r}", n)
        name, a, b = m.group(1), int(m.group(2)), m.group(3)
        if name in buckets and b is not None:
            if a in buckets[name] or (a & (a - 1)):
                raise ParseError(source, f"{name} bucket {a} is repeated or not a power of two", n)
            buckets[name][a] = int(b)
        elif b is None and name not in buckets:
            if name in maps:
                raise ParseError(source, f"{name} appears twice", n)
            maps[name] = a
        else:
            raise ParseError(source, f"unrecognised line {line!r}", n)
    if maps.get("rx_prof") != 1:
        raise ParseError(source, "not rx_prof format 1 (first line 'rx_prof 1' missing)")
    for name, bs in buckets.items():
        maps[name] = Histogram(tuple((lo, 2 * lo if lo else 1, count) for lo, count in sorted(bs.items())))
    return maps


_MARK = re.compile(r"=== RXPROF (\S+)(?: (.*))?$")
_RXLOAD = re.compile(r"rxload (tcp|udp) (.*)$")
_KLOG = re.compile(r"^\[\s*\d+\.\d+\]")


def parse_console(text: str, source: str = "serial.log") -> dict:
    """The boot test's serial console -> {"kernel", "patch_absent", "defaults", "phases": {name: maps},
    "loads": [{"proto", key: value}], "done"}. Kernel log lines between ours are ignored."""
    out: dict = {"kernel": None, "patch_absent": False, "defaults": {}, "phases": {}, "loads": [], "done": False}
    phase, lines = None, []
    for n, raw in enumerate(text.replace("\r", "").splitlines(), 1):
        m = _MARK.search(raw)
        if phase is not None:
            if m and m.group(1) == "end":
                out["phases"][phase] = parse_rx_prof("".join(ln + "\n" for ln in lines), f"{source}:{n}")
                phase = None
            elif not _KLOG.match(raw):  # kernel messages interleave on the serial console
                lines.append(raw)
            continue
        if m:
            what, rest = m.group(1), m.group(2) or ""
            if what == "kernel":
                out["kernel"] = rest
            elif what == "PATCH-ABSENT":
                out["patch_absent"] = True
            elif what == "default":
                name, _, value = rest.partition(" ")
                if not is_count(value):
                    raise ParseError(source, f"default {name!r} is not a number: {value!r}", n)
                out["defaults"][name] = int(value)
            elif what == "phase":
                phase, lines = rest, []
            elif what == "done":
                out["done"] = True
            continue
        m = _RXLOAD.search(raw)
        if m:
            pairs = [kv.split("=", 1) for kv in m.group(2).split()]
            if any(len(p) != 2 for p in pairs):
                raise ParseError(source, f"rxload fields are not key=value: {m.group(2)[:80]!r}", n)
            out["loads"].append({"proto": m.group(1), **dict(pairs)})
    if phase is not None:
        raise ParseError(source, f"phase {phase!r} has no end marker (the guest stopped early?)")
    return out
