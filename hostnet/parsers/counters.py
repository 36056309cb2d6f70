"""Kernel counters: /proc/net/snmp and netstat, softnet_stat, `ip -s -j link`, `ethtool -S`, perf stat."""
from __future__ import annotations

import json

from . import ParseError


def parse_snmp(text: str, source: str = "/proc/net/snmp") -> dict[str, int]:
    """Header/value line pairs -> {"Tcp.RetransSegs": n, ...} (also /proc/net/netstat)."""
    out: dict[str, int] = {}
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) % 2:
        raise ParseError(source, "header and value lines do not pair up")
    for i in range(0, len(lines), 2):
        head, vals = lines[i].split(), lines[i + 1].split()
        if head[0] != vals[0] or len(head) != len(vals):
            raise ParseError(source, f"line {i + 2} does not match its header", i + 2)
        proto = head[0].rstrip(":")
        for k, v in zip(head[1:], vals[1:], strict=True):
            try:
                out[f"{proto}.{k}"] = int(v)
            except ValueError as exc:
                raise ParseError(source, f"bad value {v!r} for {proto}.{k}", i + 2) from exc
    return out


SOFTNET_COLUMNS = ("processed", "dropped", "time_squeeze")


def parse_softnet_stat(text: str, source: str = "/proc/net/softnet_stat") -> dict[int, dict[str, int]]:
    """One hex row per CPU (row order = CPU order on kernels that omit the CPU column)."""
    out = {}
    for n, line in enumerate(text.splitlines()):
        cols = line.split()
        if not cols:
            continue
        try:
            vals = [int(c, 16) for c in cols]
        except ValueError as exc:
            raise ParseError(source, f"not hex: {line!r}", n + 1) from exc
        cpu = vals[12] if len(vals) > 12 else n  # column 13 is the CPU id since 5.10
        out[cpu] = dict(zip(SOFTNET_COLUMNS, vals[:3], strict=True))
    if not out:
        raise ParseError(source, "empty")
    return out


def parse_interrupts(text: str, source: str = "/proc/interrupts") -> dict[str, dict[int, int]]:
    """/proc/interrupts -> {row name: {cpu: count}} for the rows with a count per CPU (numbered
    device IRQs and named ones: LOC local timer, RES rescheduling IPIs, CAL function-call IPIs,
    TLB shootdowns, ...). Rows with one machine-wide count (ERR, MIS) are left out."""
    lines = text.splitlines()
    header = lines[0].split() if lines else []
    if not header or not all(h.startswith("CPU") and h[3:].isdigit() for h in header):
        raise ParseError(source, "the first line does not name the CPUs (CPU0 CPU1 ...)", 1)
    cpus = [int(h[3:]) for h in header]
    out: dict[str, dict[int, int]] = {}
    for n, line in enumerate(lines[1:], 2):
        name, sep, rest = line.partition(":")
        if not sep:
            raise ParseError(source, f"no 'NAME:' in {line!r}", n)
        fields = rest.split()
        if len(fields) < len(cpus) or not all(f.isdigit() for f in fields[:len(cpus)]):
            continue  # ERR/MIS: one count for the machine
        out[name.strip()] = {cpu: int(f) for cpu, f in zip(cpus, fields[:len(cpus)], strict=True)}
    if "LOC" not in out:
        raise ParseError(source, "no LOC (local timer) row: not /proc/interrupts?")
    return out


def parse_ip_link_stats(text: str, source: str = "ip -s -j link") -> dict[str, int]:
    """`ip -s -j link show dev X` -> {"rx.dropped": n, "tx.dropped": n, ...}."""
    try:
        doc = json.loads(text)
        stats = doc[0]["stats64"]
    except (json.JSONDecodeError, IndexError, KeyError, TypeError) as exc:
        raise ParseError(source, f"no stats64 in output ({exc})") from exc
    return {f"{d}.{k}": int(v) for d in ("rx", "tx") for k, v in stats.get(d, {}).items()}


def parse_ethtool_stats(text: str, source: str = "ethtool -S") -> dict[str, int]:
    """`ethtool -S X` (driver statistics); {} when the driver has none."""
    out = {}
    for line in text.splitlines()[1:]:
        key, _, value = line.strip().partition(":")
        if value.strip().lstrip("-").isdigit():
            out[key.strip()] = int(value)
    return out


def parse_perf_stat(text: str, source: str = "perf stat") -> dict[str, dict[int, float | None]]:
    """`perf stat -a -A -x,` stderr -> {event: {cpu: value, or None when <not supported>}}."""
    out: dict[str, dict[int, float | None]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        cols = line.split(",")
        if len(cols) < 4 or not cols[0].startswith("CPU"):
            continue
        try:
            cpu = int(cols[0][3:])
            value = None if cols[1].startswith("<") else float(cols[1])
        except ValueError as exc:
            raise ParseError(source, f"bad line {line!r}", n) from exc
        out.setdefault(cols[3], {})[cpu] = value
    return out


def deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}
