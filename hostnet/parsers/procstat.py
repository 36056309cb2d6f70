"""/proc/stat per-CPU time counters and their deltas."""
from __future__ import annotations

import math

from . import ParseError, is_count, require_complete

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
IDLE_FIELDS = ("idle", "iowait")
# Time the hypervisor ran something else while this vCPU wanted to run: neither the guest's idle
# nor its work. Left out of busy, reported on its own (a host-contention flag reads it).
STOLEN_FIELDS = ("steal",)
# guest time is already included in user (and guest_nice in nice): do not count it twice.
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


def parse_proc_stat(text: str, source: str = "/proc/stat") -> dict[int, dict[str, int]]:
    """-> {cpu: {field: ticks}} for the per-CPU lines (the aggregate `cpu` line is skipped).

    Every cpu line of one snapshot has the same number of fields (the kernel's); a line with
    fewer was cut short and is refused, never zero-filled. Fields the kernel does not print
    (steal, guest, ... on old kernels) are absent from the dicts, not zero."""
    require_complete(text, source)
    cpus: dict[int, dict[str, int]] = {}
    width = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("cpu"):
            continue
        name, values = _cpu_line(line, source, n)
        if width is None:
            width = len(values)
        elif len(values) != width:
            raise ParseError(source, f"{len(values)} fields where the lines above have {width}: cut short?", n)
        if name is None:
            continue  # the aggregate line: only its field count matters
        if name in cpus:
            raise ParseError(source, f"CPU {name} appears twice", n)
        cpus[name] = dict(zip(FIELDS, values, strict=False))
    if not cpus:
        raise ParseError(source, "no per-CPU lines")
    return cpus


def _cpu_line(line: str, source: str, n: int) -> tuple[int | None, list[int]]:
    """"cpuN v1 v2 ..." -> (N, values); N is None for the aggregate "cpu" line."""
    parts = line.split()
    suffix = parts[0][3:]
    if (suffix and not is_count(suffix)) or not all(is_count(v) for v in parts[1:]):
        raise ParseError(source, f"bad cpu line {line[:80]!r}", n)
    values = [int(v) for v in parts[1:]]
    if len(values) < 4:
        raise ParseError(source, f"cpu line with {len(values)} fields (at least user nice system idle)", n)
    return (int(suffix) if suffix else None), values


def cpu_utilization(before: dict, after: dict, cpus, interval_s: float | None = None,
                    clk_tck: int | None = None) -> dict[str, float]:
    """Utilisation of a CPU set between two snapshots, in % of ONE core (summed over the set).

    Returns busy_pct plus each field's share, e.g. {"busy_pct": 87.5, "softirq_pct": 30.1,
    "steal_pct": 2.0, ...}. With the wall-clock interval between the snapshots (and CLK_TCK), busy
    is wall time minus idle, iowait and steal: NOHZ kernels measure idle exactly, while tick-based
    accounting samples the busy fields a tick at a time and misses bursts between idle periods (it
    read a CPU that a flow kept 20 % busy as 2-3 % busy on the embedded testbed's VM). Steal comes
    from the hypervisor's steal clock (measured, not ticked): the vCPU wanted to run and another
    guest or the host ran instead, so it is not the stack's CPU. The busy fields then split the
    busy time in their tick-sampled proportions. Without the interval: the busy fields' share of
    all accounted time (steal apart), as before.
    """
    _same_snapshot_shape(before, after)
    out = {f"{f}_pct": 0.0 for f in FIELDS}
    busy = 0.0
    for cpu in cpus:
        if cpu not in after:
            raise ParseError("/proc/stat", f"CPU {cpu} missing from the snapshots")
        delta = _delta(before[cpu], after[cpu], cpu)
        total = sum(delta[f] for f in BUSY_FIELDS + IDLE_FIELDS + STOLEN_FIELDS)
        if total <= 0:
            raise ParseError("/proc/stat", f"no time elapsed on CPU {cpu} between snapshots")
        ticked = sum(delta[f] for f in BUSY_FIELDS)
        if interval_s and clk_tck:
            measured = IDLE_FIELDS + STOLEN_FIELDS  # exact clocks, not tick samples
            away_s = sum(delta[f] for f in measured) / clk_tck
            cpu_busy = min(100.0, max(0.0, 100.0 * (1 - away_s / interval_s)))
            for f in FIELDS:  # busy fields share cpu_busy as the ticks saw it; the others as measured
                out[f"{f}_pct"] += (cpu_busy * delta[f] / ticked if f in BUSY_FIELDS and ticked
                                    else 100.0 * delta[f] / clk_tck / interval_s if f in measured else 0.0)
        else:
            cpu_busy = 100.0 * ticked / total
            for f in FIELDS:
                out[f"{f}_pct"] += 100.0 * delta[f] / total
        busy += cpu_busy
    out["busy_pct"] = busy
    return out


def _same_snapshot_shape(before: dict, after: dict) -> None:
    """Two snapshots of one machine have the same CPUs, each with the same fields."""
    if set(before) != set(after):
        raise ParseError("/proc/stat", f"the snapshots list different CPUs: {sorted(before)} before, "
                                       f"{sorted(after)} after")
    for cpu in before:
        if len(before[cpu]) != len(after[cpu]):
            raise ParseError("/proc/stat", f"CPU {cpu} has {len(before[cpu])} fields before and "
                                           f"{len(after[cpu])} after")


def _delta(before: dict[str, int], after: dict[str, int], cpu: int) -> dict[str, int]:
    """Ticks per field between the snapshots (0 for a field this kernel does not print); a
    counter that went backwards means the snapshots are swapped or from different boots."""
    delta = {f: after[f] - before[f] if f in after else 0 for f in FIELDS}
    back = [f for f in FIELDS if delta[f] < 0]
    if back:
        raise ParseError("/proc/stat", f"CPU {cpu}: {', '.join(back)} went backwards between the snapshots "
                                       "(swapped, or from different boots?)")
    return delta


def proc_stat_interval(files: dict[str, str]) -> tuple[float | None, int | None]:
    """(seconds between a machine's two /proc/stat snapshots, CLK_TCK) from its raw files, or
    (None, None) for runs recorded before the snapshot times were kept (tick-based busy then)."""
    if "proc_stat_monotonic_s.txt" in files and files.get("clk_tck.txt", "").strip():
        return parse_snapshot_times(files["proc_stat_monotonic_s.txt"]), _clk_tck(files["clk_tck.txt"])
    return None, None


def _clk_tck(text: str, source: str = "clk_tck.txt") -> int:
    if not is_count(text.strip()) or int(text) <= 0:
        raise ParseError(source, f"not a tick rate: {text[:40]!r}", 1)
    return int(text)


def parse_snapshot_times(text: str, source: str = "proc_stat_monotonic_s.txt") -> float:
    """The two snapshot times a ProcStatProbe recorded -> the interval between them, in seconds."""
    require_complete(text, source)  # a cut inside the second time would still parse
    try:
        t0, t1 = (float(v) for v in text.split())
    except ValueError as exc:
        raise ParseError(source, f"expected two times, got {text[:80]!r}") from exc
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ParseError(source, f"not a time: {text[:80]!r}")
    if t1 <= t0:
        raise ParseError(source, f"the second snapshot ({t1}) is not after the first ({t0})")
    return t1 - t0
