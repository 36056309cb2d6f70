"""Kernel counters: /proc/net/snmp and netstat, softnet_stat, `ip -s -j link`, `ethtool -S`, perf stat."""
from __future__ import annotations

import json
import re

from . import ParseError, is_count, require_complete


def parse_snmp(text: str, source: str = "/proc/net/snmp") -> dict[str, int]:
    """Header/value line pairs -> {"Tcp.RetransSegs": n, ...} (also /proc/net/netstat)."""
    require_complete(text, source)
    out: dict[str, int] = {}
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if len(lines) % 2:
        raise ParseError(source, "header and value lines do not pair up", lines[-1][0])
    for (_, head_line), (n, value_line) in zip(lines[::2], lines[1::2], strict=True):
        head, vals = head_line.split(), value_line.split()
        if head[0] != vals[0] or not head[0].endswith(":") or len(head) != len(vals):
            raise ParseError(source, f"line {n} does not match its header", n)
        proto = head[0].rstrip(":")
        for k, v in zip(head[1:], vals[1:], strict=True):
            if f"{proto}.{k}" in out:
                raise ParseError(source, f"{proto}.{k} appears twice", n)
            if not re.fullmatch(r"-?\d+", v):
                raise ParseError(source, f"bad value {v!r} for {proto}.{k}", n)
            out[f"{proto}.{k}"] = int(v)
    return out


SOFTNET_COLUMNS = ("processed", "dropped", "time_squeeze")
_SOFTNET_CPU_COLUMN = 12  # column 13 is the CPU id since 5.10; before, row order is CPU order


def parse_softnet_stat(text: str, source: str = "/proc/net/softnet_stat") -> dict[int, dict[str, int]]:
    """One row per CPU of 8-digit hex columns, the same number in every row (one kernel)."""
    out: dict[int, dict[str, int]] = {}
    width = None
    for n, line in enumerate(text.splitlines()):
        cols = line.split()
        if not cols:
            continue
        if not all(re.fullmatch(r"[0-9a-f]{8}", c) for c in cols):
            raise ParseError(source, f"not a row of 8-digit hex columns: {line[:80]!r}", n + 1)
        if len(cols) < len(SOFTNET_COLUMNS) or len(cols) != (width or len(cols)):
            raise ParseError(source, f"{len(cols)} columns where {width or 'at least 3'} were expected: cut short?",
                             n + 1)
        width = len(cols)
        vals = [int(c, 16) for c in cols]
        cpu = vals[_SOFTNET_CPU_COLUMN] if len(vals) > _SOFTNET_CPU_COLUMN else n
        if cpu in out:
            raise ParseError(source, f"CPU {cpu} appears twice", n + 1)
        out[cpu] = dict(zip(SOFTNET_COLUMNS, vals, strict=False))
    if not out:
        raise ParseError(source, "empty")
    return out


_MACHINE_WIDE = ("ERR", "MIS", "Err")  # x86's, arm64's


def parse_interrupts(text: str, source: str = "/proc/interrupts") -> dict[str, dict[int, int]]:
    """/proc/interrupts -> {row name: {cpu: count}} for the rows with a count per CPU (numbered
    device IRQs and named ones: LOC local timer, RES rescheduling IPIs, CAL function-call IPIs,
    TLB shootdowns, ...). The rows with one machine-wide count (ERR, MIS) are left out; any other
    row with some but not all of the CPUs' counts was cut short and raises."""
    lines = text.splitlines()
    header = lines[0].split() if lines else []
    if not header or not all(h.startswith("CPU") and is_count(h[3:]) for h in header):
        raise ParseError(source, "the first line does not name the CPUs (CPU0 CPU1 ...)", 1)
    require_complete(text, source)
    cpus = [int(h[3:]) for h in header]
    out: dict[str, dict[int, int]] = {}
    for n, line in enumerate(lines[1:], 2):
        name, sep, rest = line.partition(":")
        if not sep:
            raise ParseError(source, f"no 'NAME:' in {line!r}", n)
        counts = _leading_counts(rest.split(), len(cpus))
        if name.strip() in _MACHINE_WIDE and len(counts) == 1:
            continue  # one count for the machine
        if len(counts) != len(cpus):
            raise ParseError(source, f"{name.strip()} has {len(counts)} counts for {len(cpus)} CPUs: cut short?", n)
        if name.strip() in out:
            raise ParseError(source, f"{name.strip()} appears twice", n)
        out[name.strip()] = dict(zip(cpus, counts, strict=True))
    if "LOC" not in out:
        raise ParseError(source, "no LOC (local timer) row: not /proc/interrupts?")
    return out


def _leading_counts(fields: list[str], most: int) -> list[int]:
    counts = []
    for f in fields[:most]:
        if not is_count(f):
            break
        counts.append(int(f))
    return counts


def parse_ip_link_stats(text: str, source: str = "ip -s -j link") -> dict[str, int]:
    """`ip -s -j link show dev X` -> {"rx.dropped": n, "tx.dropped": n, ...}."""
    try:
        doc = json.loads(text)
        stats = doc[0]["stats64"]
    except (json.JSONDecodeError, IndexError, KeyError, TypeError) as exc:
        raise ParseError(source, f"no stats64 in output ({exc})") from exc
    if not isinstance(stats, dict) or not all(isinstance(stats.get(d), dict) for d in ("rx", "tx")):
        raise ParseError(source, "stats64 lacks its rx and tx objects")
    out = {}
    for d in ("rx", "tx"):
        for k, v in stats[d].items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ParseError(source, f"stats64.{d}.{k} is not a count: {v!r:.40}")
            out[f"{d}.{k}"] = v
    return out


_ETHTOOL_STAT = re.compile(r"^\s*(?P<key>\S.*?):\s+(?P<value>-?\d+)\s*$")


def parse_ethtool_stats(text: str, source: str = "ethtool -S") -> dict[str, int]:
    """`ethtool -S X` (driver statistics); {} when the driver has none: the counters probe stores
    "" when ethtool -S fails, and ethtool says "no stats available"."""
    if not text.strip() or text.strip() == "no stats available":
        return {}
    lines = text.splitlines()
    if lines[0].strip() != "NIC statistics:":
        raise ParseError(source, f"not ethtool -S output (first line {lines[0][:60]!r})", 1)
    require_complete(text, source)
    out = {}
    for n, line in enumerate(lines[1:], 2):
        m = _ETHTOOL_STAT.match(line)
        if not m:
            raise ParseError(source, f"not a 'name: count' line: {line[:80]!r}", n)
        if m["key"] in out:
            raise ParseError(source, f"{m['key']} appears twice", n)
        out[m["key"]] = int(m["value"])
    return out


def parse_perf_stat(text: str, source: str = "perf stat") -> dict[str, dict[int, float | None]]:
    """`perf stat -a -A -x,` stderr -> {event: {cpu: value, or None when <not supported>}}.
    Every event has a value for the same CPUs; a line cut short raises."""
    out: dict[str, dict[int, float | None]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("CPU"):
            continue
        cols = line.split(",")
        if len(cols) < 6 or not cols[3]:
            raise ParseError(source, f"a per-CPU line cut short: {line[:80]!r}", n)
        try:
            cpu = int(cols[0][3:])
            value = None if cols[1].startswith("<") else float(cols[1])
        except ValueError as exc:
            raise ParseError(source, f"bad line {line!r}", n) from exc
        if value is not None and not 0 <= value < float("inf"):
            raise ParseError(source, f"{cols[3]} on CPU {cpu} counted {cols[1]}", n)
        if cpu in out.setdefault(cols[3], {}):
            raise ParseError(source, f"{cols[3]} on CPU {cpu} appears twice", n)
        out[cols[3]][cpu] = value
    if not out:
        raise ParseError(source, "no per-CPU counts (perf stat -a -A -x, prints 'CPUn,value,...' lines)")
    cpu_sets = {frozenset(per_cpu) for per_cpu in out.values()}
    if len(cpu_sets) > 1:
        raise ParseError(source, "the events were counted on different CPUs: cut short?")
    return out


# Rows of /proc/net/snmp that are settings or gauges, not counters: they may go down.
GAUGES = frozenset({"Ip.Forwarding", "Ip.DefaultTTL", "Tcp.RtoAlgorithm", "Tcp.RtoMin", "Tcp.RtoMax", "Tcp.MaxConn",
                    "Tcp.CurrEstab"})


def deltas(before: dict[str, int], after: dict[str, int], source: str = "counters",
           gauges: frozenset[str] = GAUGES, wraps_at: int | None = None) -> dict[str, int]:
    """after - before for two snapshots of the same counters. Both must name the same counters
    (a counter missing on one side would come out as zero or as its total since boot), and no
    counter may go down (the snapshots are swapped, or from different boots).

    wraps_at: the counters are that wide (2**32: softnet_stat, /proc/interrupts print unsigned
    ints), and one that fell by more than half of it wrapped once: a window's increase, which is
    what a swapped pair shows as a fall, is far below half the range."""
    if set(before) != set(after):
        only = sorted(set(before) ^ set(after))
        raise ParseError(source, f"the snapshots name different counters: {', '.join(only[:5])}"
                                 + (" ..." if len(only) > 5 else ""))
    out = {k: after[k] - before[k] for k in after}
    if wraps_at:
        out = {k: v + wraps_at if v < -wraps_at // 2 else v for k, v in out.items()}
    down = [k for k, v in out.items() if v < 0 and k not in gauges]
    if down:
        raise ParseError(source, f"{', '.join(down[:5])} went down between the snapshots (swapped?)")
    return out


U32 = 2 ** 32


def softnet_deltas(before: dict[int, dict[str, int]], after: dict[int, dict[str, int]],
                   source: str = "softnet_stat") -> dict[int, dict[str, int]]:
    """Per-CPU softnet_stat deltas ({cpu: {column: n}}): the same CPUs and columns in both
    snapshots, none gone down (u32 counters: a wrap is allowed, see deltas)."""
    flat = deltas(_flatten(before, "cpu{outer}.{inner}"), _flatten(after, "cpu{outer}.{inner}"), source,
                  frozenset(), wraps_at=U32)
    return _unflatten(after, flat, "cpu{outer}.{inner}")


def interrupt_deltas(before: dict[str, dict[int, int]], after: dict[str, dict[int, int]], names,
                     source: str = "/proc/interrupts") -> dict[str, dict[int, int]]:
    """Per-CPU deltas of the named /proc/interrupts rows ({name: {cpu: n}}). Rows other than
    these may come and go (a device registered mid-window) and are not compared; these must be
    in both snapshots with the same CPUs, none gone down (u32 counters: a wrap is allowed)."""
    b, a = ({n: snap[n] for n in names if n in snap} for snap in (before, after))
    flat = deltas(_flatten(b, "{outer}.cpu{inner}"), _flatten(a, "{outer}.cpu{inner}"), source, frozenset(),
                  wraps_at=U32)
    return _unflatten(a, flat, "{outer}.cpu{inner}")


def _flatten(nested: dict, fmt: str) -> dict[str, int]:
    return {fmt.format(outer=o, inner=i): v for o, row in nested.items() for i, v in row.items()}


def _unflatten(shape: dict, flat: dict[str, int], fmt: str) -> dict:
    return {o: {i: flat[fmt.format(outer=o, inner=i)] for i in row} for o, row in shape.items()}


def parse_irq_names(text: str, source: str = "/proc/interrupts") -> dict[int, str]:
    """/proc/interrupts -> {IRQ number: the name its driver gave it} (the row's last word: e1000e's
    "eth0-rx-0", virtio's "virtio2-input.0", mlx5's "mlx5_comp3@pci:0000:3b:00.0"). Rows without a
    number (LOC, RES, ...) are left out."""
    lines = text.splitlines()
    if not lines or not lines[0].split() or not all(h.startswith("CPU") for h in lines[0].split()):
        raise ParseError(source, "the first line does not name the CPUs (CPU0 CPU1 ...)", 1)
    n_cpus = len(lines[0].split())
    out = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if sep and is_count(name.strip()) and len(fields) > n_cpus:
            out[int(name.strip())] = fields[-1]
    return out
