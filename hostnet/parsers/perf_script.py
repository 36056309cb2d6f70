"""`perf script -F comm,tid,cpu,event,ip,sym` with call chains -> samples, and folded stacks.

Folded stacks ("CPU;comm;root;...;leaf count", the FlameGraph format, done in Python) keep what a
breakdown needs so it can be re-classified or re-attributed later without re-running; user-space
frames carry a "_[u]" suffix.
"""
from __future__ import annotations

import codecs
import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator

from . import ParseError, is_count, require_complete

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


_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
# what `perf script` prints after the symbol when asked for more fields (symoff, dso, srcline):
# "sym+0x31 ([kernel.kallsyms])", "sym (/usr/lib/libc.so.6)". Taken as part of the name, every such
# frame would come out unclassified.
_TRAILING = re.compile(r"\+0x[0-9a-f]+\s|\s\((\[[^\]]*\]|/[^)]*)\)$")
_ADDRESS_ONLY = re.compile(r"^\s+[0-9a-f]+\s*$")


def _strip_offset(sym: str) -> str:
    # `perf script -F sym` prints no offsets; the check skips the regex for every such frame
    return _OFFSET.sub("", sym) if "+0x" in sym else sym


def parse_perf_script(lines: Iterable[str], source: str = "perf script") -> Iterator[Sample]:
    """Stream samples (linear, bounded memory); raises ParseError naming the line on bad input:
    a frame outside a sample, without a symbol, or with text after the symbol."""
    head, frames = None, []
    n = 0
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            if head is not None:
                yield _sample(head, frames)
            head, frames = None, []
            continue
        if line[0] in " \t":
            frames.append(_frame(line, head is not None, source, n))
            continue
        m = _HEADER.match(line)
        if not m:
            raise ParseError(source, f"not a sample header: {line!r}", n)
        if head is not None:
            yield _sample(head, frames)
        head, frames = m.groupdict(), []
    if head is not None:
        yield _sample(head, frames)


def _frame(line: str, in_sample: bool, source: str, n: int) -> str:
    """"\t<hex address> <symbol>" -> the symbol, "_[u]" appended for user-space addresses."""
    if not in_sample:
        raise ParseError(source, f"stack line outside a sample: {line!r}", n)
    frame = _frame_of(line)
    if isinstance(frame, tuple):
        raise ParseError(source, frame[0], n)
    return frame


# A capture repeats a few thousand distinct frame lines (the 3 s fixture: 2,068 in 96,640), and a
# frame's reading depends on its line alone: each is read once. Bounded like perf_default's memo.
@functools.lru_cache(maxsize=1 << 16)
def _frame_of(line: str) -> str | tuple[str]:
    """The frame, or (why the line is not one,)."""
    m = _FRAME.match(line)
    if not m:
        why = "an address without a symbol (perf script -F without sym?)" if _ADDRESS_ONLY.match(line) \
            else "not a stack frame"
        return (f"{why}: {line!r}",)
    if _TRAILING.search(m.group("sym")):
        return (f"text after the symbol (perf script -F with symoff, dso or srcline? hostnet "
                f"reads -F comm,tid,cpu,event,ip,sym): {line.strip()!r}",)
    sym = _strip_offset(m.group("sym"))
    return sym if int(m.group("addr"), 16) >= KERNEL_BASE else sym + USER


def _sample(head: dict, frames: list[str]) -> Sample:
    # a sample may have no frames: perf script prints some with an empty call chain (recorded runs have them)
    return Sample(int(head["cpu"]), head["comm"], tuple(frames))


def fold(samples: Iterable[Sample]) -> Counter:
    """-> Counter{"CPU;comm;root;...;leaf": samples}."""
    out: Counter = Counter()
    for s in samples:
        out[_fold_key(s)] += 1
    return out


def _fold_key(s: Sample) -> str:
    return ";".join([str(s.cpu), s.comm.replace(";", ":"), *reversed(s.frames)])


# Fast path over perf script's raw bytes. Samples repeat: the same thread in the same call chain,
# differing only in the return addresses. Addresses matter only as kernel or user, so each frame's
# address is replaced by one canonical address of its kind, identical sample blocks are counted in C
# (Counter over the blocks), and each distinct block is parsed once, by parse_perf_script itself.
# A rewrite is sound (the block parses to the same Sample), not complete: a frame the patterns miss
# keeps its address and only lowers the dedup. Kernel: 16 hex digits from ffff8... up (>= KERNEL_BASE);
# user: 1-15 digits (< KERNEL_BASE), which perf pads with spaces to 16 columns.
_KERNEL_ADDR = re.compile(rb"\n\t *0*ffff[89a-f][0-9a-f]{11} ")
_USER_ADDR = re.compile(rb"\n\t +[0-9a-f]{1,15} ")
_CANONICAL_KERNEL, _CANONICAL_USER = b"\n\tffff800000000000 ", b"\n\t0 "
SAMPLE_END = b"\n\n"


def sample_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Raw bytes -> pieces cut at empty lines (sample boundaries), whatever the chunking. Empty
    lines at a piece's end are dropped (they only end a sample), so no piece ends with "\n"."""
    rest = b""
    for chunk in chunks:
        rest += chunk
        cut = rest.rfind(SAMPLE_END)
        if cut >= 0:
            yield rest[:cut].rstrip(b"\n")
            rest = rest[cut + 2:]
    if rest.rstrip(b"\n"):
        yield rest.rstrip(b"\n")


def count_blocks(chunks: Iterable[bytes], memo_limit: int = 1 << 16) -> Counter:
    """-> Counter{sample block with canonical addresses: occurrences}; memory grows with distinct
    blocks, not with samples (plus a memo of at most `memo_limit` recent raw blocks)."""
    blocks: Counter = Counter()
    canonical: dict[bytes, bytes] = {}  # raw block -> rewritten: identical samples rewritten once
    for piece in sample_blocks(chunks):
        raw = Counter(piece.split(SAMPLE_END))
        if len(canonical) > memo_limit:
            canonical.clear()
        new = [b for b in raw if b not in canonical] or [b""]  # (b"" rewrites to b"": the join stays aligned)
        # one rewrite over the new blocks joined again: no block contains "\n\n" or ends with
        # "\n", and the rewrite leaves every "\n" in place, so the split gives them back in order
        canonical.update(zip(new, _canonical(SAMPLE_END.join(new)).split(SAMPLE_END), strict=True))
        for block, n in raw.items():
            blocks[canonical[block]] += n
    return blocks


def _canonical(text: bytes) -> bytes:
    # a leading "\n" lets the patterns see the first line too; dropped again after
    return _USER_ADDR.sub(_CANONICAL_USER, _KERNEL_ADDR.sub(_CANONICAL_KERNEL, b"\n" + text))[1:]


def fold_chunks(chunks: Iterable[bytes], source: str = "perf script") -> Counter:
    """What fold(parse_perf_script(text.splitlines())) gives for the decoded text, from its raw
    bytes in chunks (streamed, bounded memory). Raises ParseError like parse_perf_script, though
    with a line number inside the offending sample; fold_text_lines gives the exact one."""
    out: Counter = Counter()
    for block, n in count_blocks(chunks).items():
        for s in parse_perf_script(block.decode(errors="replace").splitlines(), source):
            out[_fold_key(s)] += n
    return _not_empty(out, source)


def _not_empty(folded: Counter, source: str) -> Counter:
    if not folded:
        raise ParseError(source, "no samples (perf script printed nothing: was perf.data empty?)")
    return folded


def fold_text_lines(chunks: Iterable[bytes], source: str = "perf script") -> Counter:
    """The line-by-line path over the same bytes (what report_files did before fold_chunks); its
    ParseError names the line of the whole output."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return _not_empty(fold(parse_perf_script(_lines(decoder, chunks), source)), source)


def _lines(decoder, chunks: Iterable[bytes]) -> Iterator[str]:
    # str.splitlines() of the whole text, piece by piece: every piece ends at a "\n"
    rest = ""
    for chunk in chunks:
        rest += decoder.decode(chunk)
        cut = rest.rfind("\n")
        if cut >= 0:
            yield from rest[:cut + 1].replace("\r\n", "\n").replace("\r", "\n").splitlines()
            rest = rest[cut + 1:]
    rest += decoder.decode(b"", final=True)
    yield from rest.replace("\r\n", "\n").replace("\r", "\n").splitlines()


def write_folded(folded: Counter) -> str:
    return "".join(f"{stack} {n}\n" for stack, n in sorted(folded.items()))


def parse_folded(text: str, source: str = "perf_folded.txt") -> Iterator[tuple[Sample, int]]:
    """Folded lines back to (sample, count); text without any stack, or cut short (write_folded
    ends every line with a newline: a cut inside the last count would still parse), raises."""
    require_complete(text, source)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        parts = stack.split(";")
        if len(parts) < 2 or not is_count(parts[0]) or not is_count(count) or int(count) == 0 or "" in parts[2:]:
            raise ParseError(source, f"not a folded stack line: {line[:80]!r}", n)
        yield Sample(int(parts[0]), parts[1], tuple(reversed(parts[2:]))), int(count)
