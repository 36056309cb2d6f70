"""`perf script -F comm,tid,cpu,event,ip,sym` with call chains -> samples, and folded stacks.

Folded stacks ("CPU;comm;root;...;leaf count", the FlameGraph format, done in Python) keep what a
breakdown needs so it can be re-classified or re-attributed later without re-running; user-space
frames carry a "_[u]" suffix.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator

from . import ParseError

# tid is -1 for samples perf could not tie to a task (e.g. one exiting); comm may then be ":-1"
_HEADER = re.compile(r"^(?P<comm>.+?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<event>[\w:.-]+):\s*$")
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+)\s+(?P<sym>.+?)\s*$")
USER = "_[u]"
KERNEL_BASE = 0xFFFF800000000000  # x86-64: kernel addresses live in the upper half


@dataclass(frozen=True)
class Sample:
    cpu: int
    comm: str
    frames: tuple[str, ...]  # leaf first; user frames end with "_[u]"


def _strip_offset(sym: str) -> str:
    return re.sub(r"\+0x[0-9a-f]+$", "", sym)


def parse_perf_script(lines: Iterable[str], source: str = "perf script") -> Iterator[Sample]:
    """Stream samples (linear, bounded memory); raises ParseError naming the line on bad input."""
    head, frames = None, []
    n = 0
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            if head is not None:
                yield Sample(int(head["cpu"]), head["comm"], tuple(frames))
            head, frames = None, []
            continue
        if line[0] in " \t":
            m = _FRAME.match(line)
            if head is None or not m:
                raise ParseError(source, f"stack line outside a sample: {line!r}", n)
            sym = _strip_offset(m.group("sym"))
            frames.append(sym if int(m.group("addr"), 16) >= KERNEL_BASE else sym + USER)
            continue
        m = _HEADER.match(line)
        if not m:
            raise ParseError(source, f"not a sample header: {line!r}", n)
        if head is not None:
            yield Sample(int(head["cpu"]), head["comm"], tuple(frames))
        head, frames = m.groupdict(), []
    if head is not None:
        yield Sample(int(head["cpu"]), head["comm"], tuple(frames))


def fold(samples: Iterable[Sample]) -> Counter:
    """-> Counter{"CPU;comm;root;...;leaf": samples}."""
    out: Counter = Counter()
    for s in samples:
        out[";".join([str(s.cpu), s.comm.replace(";", ":"), *reversed(s.frames)])] += 1
    return out


def write_folded(folded: Counter) -> str:
    return "".join(f"{stack} {n}\n" for stack, n in sorted(folded.items()))


def parse_folded(text: str, source: str = "perf_folded.txt") -> Iterator[tuple[Sample, int]]:
    """Folded lines back to (sample, count)."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        parts = stack.split(";")
        if len(parts) < 2 or not parts[0].isdigit() or not count.isdigit():
            raise ParseError(source, f"not a folded stack line: {line[:80]!r}", n)
        yield Sample(int(parts[0]), parts[1], tuple(reversed(parts[2:]))), int(count)
