"""mpstat as an independent CPU source, run in the same window as hostnet's /proc/stat probe."""
from __future__ import annotations


from hostnet.probes.background import BackgroundCommandProbe
from hostnet.parsers import ParseError


class MpstatProbe(BackgroundCommandProbe):
    """`mpstat -P ALL 1` over the window; on SIGINT it prints the average of its whole intervals."""

    name, output, argv = "mpstat", "mpstat.txt", ["mpstat", "-P", "ALL", "1"]


def parse_mpstat_average(text: str, source: str = "mpstat.txt") -> dict[int, dict[str, float]]:
    """The "Average:" block of `mpstat -P ALL` -> {cpu: {"usr": .., "idle": .., "busy": ..}}.

    busy = 100 - %idle - %iowait, the same split as hostnet's /proc/stat (idle + iowait are idle).
    """
    header: list[str] | None = None
    out: dict[int, dict[str, float]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("Average:"):
            continue
        parts = line.split()[1:]
        if parts and parts[0] == "CPU":
            header = [p.lstrip("%") for p in parts[1:]]
            continue
        if header is None:
            raise ParseError(source, "an Average: row before its header", n)
        if not parts or parts[0] == "all":
            continue
        if len(parts) != len(header) + 1:
            raise ParseError(source, f"expected {len(header) + 1} fields, got {len(parts)}", n)
        try:
            row = dict(zip(header, map(float, parts[1:]), strict=True))
            out[int(parts[0])] = {**row, "busy": 100.0 - row["idle"] - row.get("iowait", 0.0)}
        except (ValueError, KeyError) as exc:
            raise ParseError(source, f"bad mpstat row {line!r}", n) from exc
    if not out:
        raise ParseError(source, "no per-CPU Average: rows (was mpstat stopped before one interval?)")
    return out
