"""/proc/stat per-CPU time counters and their deltas."""
from __future__ import annotations

from . import ParseError

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
IDLE_FIELDS = ("idle", "iowait")
# guest time is already included in user (and guest_nice in nice): do not count it twice.
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")


def parse_proc_stat(text: str, source: str = "/proc/stat") -> dict[int, dict[str, int]]:
    """-> {cpu: {field: ticks}} for the per-CPU lines (the aggregate `cpu` line is skipped)."""
    cpus: dict[int, dict[str, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        parts = line.split()
        try:
            cpu = int(parts[0][3:])
            values = [int(v) for v in parts[1:]]
        except ValueError as exc:
            raise ParseError(source, f"bad cpu line {line!r}", n) from exc
        if len(values) < 4:
            raise ParseError(source, "cpu line with fewer than 4 fields", n)
        cpus[cpu] = dict(zip(FIELDS, values + [0] * (len(FIELDS) - len(values)), strict=False))
    if not cpus:
        raise ParseError(source, "no per-CPU lines")
    return cpus


def cpu_utilization(before: dict, after: dict, cpus, interval_s: float | None = None,
                    clk_tck: int | None = None) -> dict[str, float]:
    """Utilisation of a CPU set between two snapshots, in % of ONE core (summed over the set).

    Returns busy_pct plus each field's share, e.g. {"busy_pct": 87.5, "softirq_pct": 30.1, ...}.
    With the wall-clock interval between the snapshots (and CLK_TCK), busy is wall time minus
    idle + iowait time: NOHZ kernels measure idle exactly, while tick-based accounting samples the
    busy fields a tick at a time and misses bursts between idle periods (it read a CPU that a flow
    kept 20 % busy as 2-3 % busy on the embedded testbed's VM). The busy fields then split that
    busy time in their tick-sampled proportions. Without the interval: the busy fields' share of
    all accounted time, as before.
    """
    out = {f"{f}_pct": 0.0 for f in FIELDS}
    busy = 0.0
    for cpu in cpus:
        if cpu not in before or cpu not in after:
            raise ParseError("/proc/stat", f"CPU {cpu} missing from a snapshot")
        delta = {f: after[cpu][f] - before[cpu][f] for f in FIELDS}
        total = sum(delta[f] for f in BUSY_FIELDS + IDLE_FIELDS)
        if total <= 0:
            raise ParseError("/proc/stat", f"no time elapsed on CPU {cpu} between snapshots")
        ticked = sum(delta[f] for f in BUSY_FIELDS)
        if interval_s and clk_tck:
            idle_s = sum(delta[f] for f in IDLE_FIELDS) / clk_tck
            cpu_busy = min(100.0, max(0.0, 100.0 * (1 - idle_s / interval_s)))
            for f in FIELDS:  # busy fields share cpu_busy as the ticks saw it; idle fields as measured
                out[f"{f}_pct"] += (cpu_busy * delta[f] / ticked if f in BUSY_FIELDS and ticked
                                    else 100.0 * delta[f] / clk_tck / interval_s if f in IDLE_FIELDS else 0.0)
        else:
            cpu_busy = 100.0 * ticked / total
            for f in FIELDS:
                out[f"{f}_pct"] += 100.0 * delta[f] / total
        busy += cpu_busy
    out["busy_pct"] = busy
    return out


def proc_stat_interval(files: dict[str, str]) -> tuple[float | None, int | None]:
    """(seconds between a machine's two /proc/stat snapshots, CLK_TCK) from its raw files, or
    (None, None) for runs recorded before the snapshot times were kept (tick-based busy then)."""
    if "proc_stat_monotonic_s.txt" in files and files.get("clk_tck.txt", "").strip():
        return (parse_snapshot_times(files["proc_stat_monotonic_s.txt"]), int(files["clk_tck.txt"].strip()))
    return None, None


def parse_snapshot_times(text: str, source: str = "proc_stat_monotonic_s.txt") -> float:
    """The two snapshot times a ProcStatProbe recorded -> the interval between them, in seconds."""
    try:
        t0, t1 = (float(v) for v in text.split())
    except ValueError as exc:
        raise ParseError(source, f"expected two times, got {text[:80]!r}") from exc
    if t1 <= t0:
        raise ParseError(source, f"the second snapshot ({t1}) is not after the first ({t0})")
    return t1 - t0
