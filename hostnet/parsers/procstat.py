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


def cpu_utilization(before: dict, after: dict, cpus) -> dict[str, float]:
    """Utilisation of a CPU set between two snapshots, in % of ONE core (summed over the set).

    Returns busy_pct plus each field's share, e.g. {"busy_pct": 87.5, "softirq_pct": 30.1, ...}.
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
        for f in FIELDS:
            out[f"{f}_pct"] += 100.0 * delta[f] / total
        busy += 100.0 * sum(delta[f] for f in BUSY_FIELDS) / total
    out["busy_pct"] = busy
    return out
