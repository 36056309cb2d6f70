"""Folded stacks from Brendan Gregg's stackcollapse-perf.pl ("comm;root;...;leaf count", with --kernel's
"_[k]" and --pid's "-PID" if used), for a profile a researcher brings (a run's own perf_folded.txt is
perf_script.py's). Samples come out as hostnet's own (perf_script.Sample), on NO_CPU.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from . import ParseError, is_count, require_complete
from .perf_default import NO_CPU
from .perf_script import USER, Sample


@dataclass
class FoldedProfile:
    samples: Counter  # Sample -> weight
    kernel_marked: bool  # frames carry "_[k]" (stackcollapse-perf.pl --kernel): user frames are known
    divisor: int  # the counts' common factor taken out (the sample period, for a fixed-period event)
    pid_suffix: bool
    notes: list[str] = field(default_factory=list)


_PID_SUFFIX = re.compile(r"-(\?|\d+)(/\d+)?$")
_ANNOTATION = re.compile(r"_\[[kjiu]\]$")


def parse_stackcollapse(text: str, source: str = "folded stacks", kernel_marked: bool | None = None,
                        pid_suffix: bool | None = None) -> FoldedProfile:
    """stackcollapse-perf.pl output -> samples on NO_CPU (folded stacks keep no CPU).

    Its counts are summed sample periods: their greatest common divisor is divided out, which
    leaves shares exactly as they were. Without --kernel's "_[k]", kernel and user frames cannot
    be told apart: every frame is then taken as kernel, and user-space code comes out
    unclassified (said in the notes). A --pid/--tid "-PID" suffix on every command is removed.
    Whether frames are marked and commands suffixed is read from the whole file unless given
    (a part of a file may lack the kernel frames that show it)."""
    require_complete(text, source)  # a count cut short would still parse
    stacks: list[tuple[list[str], int]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not is_count(count) or int(count) == 0 or not stack:
            raise ParseError(source, f"not a folded stack line ('comm;frame;... count'): {line[:80]!r}", n)
        stacks.append((stack.split(";"), int(count)))
    if not stacks:
        raise ParseError(source, "empty")
    divisor = math.gcd(*(c for _, c in stacks))
    marked = any(f.endswith("_[k]") for parts, _ in stacks for f in parts[1:]) if kernel_marked is None \
        else kernel_marked
    if pid_suffix is None:
        pid_suffix = all(_PID_SUFFIX.search(parts[0]) for parts, _ in stacks)
    out: Counter = Counter()
    for parts, count in stacks:
        comm = _PID_SUFFIX.sub("", parts[0]) if pid_suffix else parts[0]
        frames = tuple(_folded_frame(f, marked) for f in reversed(parts[1:]))
        out[Sample(NO_CPU, comm, frames)] += count // divisor
    notes = []
    if divisor > 1:
        notes.append(f"counts divided by their common factor {divisor} (stackcollapse-perf.pl sums sample periods)")
    if not marked:
        notes.append("no '_[k]' frames (stackcollapse-perf.pl without --kernel): kernel and user frames cannot be told "
                     "apart, all are read as kernel and user-space code comes out unclassified; fold with --kernel")
    return FoldedProfile(out, marked, divisor, pid_suffix, notes)


def _folded_frame(frame: str, marked: bool) -> str:
    if frame.endswith("_[k]"):
        return frame[:-4]
    bare = _ANNOTATION.sub("", frame)
    return bare + USER if marked else bare
