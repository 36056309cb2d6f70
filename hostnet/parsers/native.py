"""Output of hostnet's own C tools (hostnet/native): one key=value result line each."""
from __future__ import annotations

from dataclasses import dataclass

from . import ParseError, is_count

_UDP_KEYS = ("role", "batch", "size", "packets", "calls", "errors", "window_ns", "cpu_ns")
_MICRO_KEYS = ("bench", "iterations", "total_ns", "ns_per_op")


@dataclass(frozen=True)
class UdpBatchResult:
    role: str
    batch: int
    size: int
    packets: int
    calls: int
    errors: int
    window_ns: int
    cpu_ns: int

    @property
    def pps(self) -> float:
        return self.packets * 1e9 / self.window_ns

    @property
    def ns_per_packet(self) -> float:
        """Wall time per packet in the window (the inverse of pps)."""
        return self.window_ns / self.packets if self.packets else float("nan")

    @property
    def cpu_ns_per_packet(self) -> float:
        return self.cpu_ns / self.packets if self.packets else float("nan")


@dataclass(frozen=True)
class MicrobenchResult:
    bench: str
    iterations: int
    total_ns: int
    ns_per_op: float


def _fields(text: str, tool: str, keys: tuple[str, ...], source: str) -> dict[str, str]:
    pieces = text.split("\n")  # the last piece is whatever follows the last newline
    found = [n for n, ln in enumerate(pieces) if ln.startswith(tool + " ")]
    if len(found) != 1:
        err = " ".join(text.split())[:300]
        raise ParseError(source, f"expected one '{tool} ...' result line, found {len(found)}"
                                 + (f"; output: {err}" if err else ""))
    n = found[0]
    if n == len(pieces) - 1:  # the tools end the line with a newline: its last number may be cut
        raise ParseError(source, "the result line has no newline: cut short?", n + 1)
    pairs = [kv.split("=", 1) for kv in pieces[n].split()[1:]]
    if any(len(p) != 2 for p in pairs) or len({k for k, _ in pairs}) != len(pairs):
        raise ParseError(source, f"not one key=value per field: {pieces[n][:120]!r}", n + 1)
    fields = dict(pairs)
    missing = [k for k in keys if k not in fields]
    if missing:
        raise ParseError(source, f"result line lacks {', '.join(missing)}", n + 1)
    return fields


def _count(fields: dict[str, str], key: str, source: str) -> int:
    if not is_count(fields[key]):
        raise ParseError(source, f"non-numeric field {key}={fields[key]!r} (a whole number expected)")
    return int(fields[key])


def parse_udpbatch(text: str, source: str = "udpbatch.txt") -> UdpBatchResult:
    f = _fields(text, "udpbatch", _UDP_KEYS, source)
    r = UdpBatchResult(f["role"], *(_count(f, k, source) for k in _UDP_KEYS[1:]))
    if r.role not in ("send", "recv") or r.window_ns <= 0:
        raise ParseError(source, f"role {r.role!r} / window {r.window_ns} ns is not a result")
    if r.batch < 1 or r.packets > r.calls * r.batch:
        raise ParseError(source, f"{r.packets} packets in {r.calls} calls of at most {r.batch}: not a result")
    return r


def parse_microbench(text: str, source: str = "microbench.txt") -> MicrobenchResult:
    f = _fields(text, "microbench", _MICRO_KEYS, source)
    try:
        r = MicrobenchResult(f["bench"], _count(f, "iterations", source), _count(f, "total_ns", source),
                             float(f["ns_per_op"]))
    except ValueError as exc:
        raise ParseError(source, f"non-numeric field: {exc}") from exc
    if r.iterations <= 0 or not r.ns_per_op > 0 or r.ns_per_op == float("inf"):
        raise ParseError(source, f"{r.iterations} iterations at {r.ns_per_op} ns each is not a result")
    return r
