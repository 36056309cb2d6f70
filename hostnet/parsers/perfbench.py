"""`perf bench` default-format output: syscall/basic and mem/memcpy."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

# perf bench prints bandwidth with K = 1024 (tools/perf/bench/mem-functions.c)
_UNITS = {"bytes": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}


@dataclass(frozen=True)
class SyscallResult:
    calls: int
    usec_per_op: float
    ops_per_s: int


@dataclass(frozen=True)
class MemcpyResult:
    function: str
    size: str
    bytes_per_s: float


def _unknown(text: str, source: str) -> None:
    m = re.search(r"^(Unknown (?:benchmark|collection).*)$", text, re.M)
    if m:
        raise ParseError(source, f"perf bench: {m.group(1)}")


def parse_syscall_basic(text: str, source: str = "perf_bench_syscall.txt") -> SyscallResult:
    _unknown(text, source)
    calls = re.search(r"^# Executed (\d+) \w+\(\) calls", text, re.M)
    usec = re.search(r"^\s*(\d+\.\d+) usecs/op\s*$", text, re.M)
    ops = re.search(r"^\s*(\d+) ops/sec\s*$", text, re.M)
    if not (calls and usec and ops):
        raise ParseError(source, "no 'Executed N calls' / 'usecs/op' / 'ops/sec' lines (not syscall/basic output?)")
    r = SyscallResult(int(calls.group(1)), float(usec.group(1)), int(ops.group(1)))
    # perf prints usecs/op and ops/sec of one measurement: one is the inverse of the other
    if r.calls <= 0 or r.usec_per_op <= 0 or abs(r.ops_per_s * r.usec_per_op / 1e6 - 1) > 1e-3:
        raise ParseError(source, f"{r.usec_per_op} usecs/op and {r.ops_per_s} ops/sec over {r.calls} calls disagree")
    return r


def parse_memcpy(text: str, source: str = "perf_bench_memcpy.txt") -> list[MemcpyResult]:
    """One result per function run (-f all runs several); a function without its bandwidth line raises."""
    _unknown(text, source)
    out, function, size, pending = [], None, None, None
    for n, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"^# function '([^']+)'", line):
            if pending is not None:
                raise ParseError(source, f"function {function!r} has no bandwidth line", pending)
            function, size, pending = m.group(1), None, n
        elif m := re.match(r"^# Copying (\S+) bytes", line):
            size = m.group(1)
        elif m := re.match(r"^\s*(\d+(?:\.\d+)?)d? (bytes|KB|MB|GB)/sec\s*$", line):
            if function is None or size is None:
                raise ParseError(source, "bandwidth before its '# function' and '# Copying' lines", n)
            if float(m.group(1)) <= 0:
                raise ParseError(source, f"a bandwidth of {m.group(1)}", n)
            out.append(MemcpyResult(function, size, float(m.group(1)) * _UNITS[m.group(2)]))
            pending = None
    if pending is not None:
        raise ParseError(source, f"function {function!r} has no bandwidth line (cut short?)", pending)
    if not out:
        raise ParseError(source, "no bandwidth line (not mem/memcpy output?)")
    return out
