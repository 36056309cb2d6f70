"""`perf report --stdio --no-children --sort cpu,comm,sym -n -g none -t TAB` output."""
from __future__ import annotations

from dataclasses import dataclass

from . import ParseError

PERF_REPORT_ARGS = ["report", "--stdio", "--no-children", "--sort", "cpu,comm,sym", "-n",
                    "-g", "none", "--percent-limit", "0", "-t", "\t"]


@dataclass(frozen=True)
class SymbolSamples:
    cpu: int
    comm: str
    symbol: str
    kernel: bool
    samples: int


def parse_perf_report(text: str, source: str = "perf_report.txt") -> list[SymbolSamples]:
    """One record per (cpu, comm, symbol). A report with no samples gives an empty list."""
    rows: list[SymbolSamples] = []
    header_seen = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            header_seen = header_seen or "Overhead" in line
            continue
        if "has no samples" in line or line.startswith("Error:"):
            return []
        if not header_seen:
            raise ParseError(source, "no perf report header; is this perf report --stdio output?", n)
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) < 5:
            raise ParseError(source, f"expected 5 tab-separated fields, got {len(parts)}", n)
        _, samples, cpu, comm, sym = parts[:5]
        if not (sym.startswith("[") and "] " in sym):
            raise ParseError(source, f"symbol column {sym!r} lacks a [k]/[.] marker", n)
        marker, _, name = sym.partition("] ")
        try:
            rows.append(SymbolSamples(int(cpu), comm, name.strip(), marker == "[k", int(samples)))
        except ValueError as exc:
            raise ParseError(source, f"bad number in {line!r}", n) from exc
    return rows


PERF_HEADER_ARGS = ["report", "--header-only"]


def parse_perf_header(text: str, source: str = "perf_header.txt") -> dict[str, float]:
    """`perf report --header-only` -> {"first_sample_s", "last_sample_s", "duration_s"}: the span
    perf sampled, which sampling coverage divides by (perf runs a little longer than the window)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.lstrip("# ").partition(":")
        key = key.strip()
        if key in ("time of first sample", "time of last sample"):
            try:
                out["first_sample_s" if "first" in key else "last_sample_s"] = float(value.strip())
            except ValueError as exc:
                raise ParseError(source, f"not a time: {line.strip()!r}") from exc
    if set(out) != {"first_sample_s", "last_sample_s"}:
        raise ParseError(source, "no 'time of first/last sample' lines (was perf.data empty?)")
    if out["last_sample_s"] < out["first_sample_s"]:
        raise ParseError(source, "the last sample is older than the first")
    out["duration_s"] = out["last_sample_s"] - out["first_sample_s"]
    return out
