"""Output of hostnet's own C tools (hostnet/native): one key=value result line each."""
from __future__ import annotations

from dataclasses import dataclass

from . import ParseError

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
    lines = [ln for ln in text.splitlines() if ln.startswith(tool + " ")]
    if len(lines) != 1:
        err = " ".join(text.split())[:300]
        raise ParseError(source, f"expected one '{tool} ...' result line, found {len(lines)}"
                                 + (f"; output: {err}" if err else ""))
    fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:] if "=" in kv)
    missing = [k for k in keys if k not in fields]
    if missing:
        raise ParseError(source, f"result line lacks {', '.join(missing)}")
    return fields


def parse_udpbatch(text: str, source: str = "udpbatch.txt") -> UdpBatchResult:
    f = _fields(text, "udpbatch", _UDP_KEYS, source)
    try:
        r = UdpBatchResult(f["role"], *(int(f[k]) for k in _UDP_KEYS[1:]))
    except ValueError as exc:
        raise ParseError(source, f"non-integer field: {exc}") from exc
    if r.role not in ("send", "recv") or r.window_ns <= 0:
        raise ParseError(source, f"role {r.role!r} / window {r.window_ns} ns is not a result")
    return r


def parse_microbench(text: str, source: str = "microbench.txt") -> MicrobenchResult:
    f = _fields(text, "microbench", _MICRO_KEYS, source)
    try:
        return MicrobenchResult(f["bench"], int(f["iterations"]), int(f["total_ns"]), float(f["ns_per_op"]))
    except ValueError as exc:
        raise ParseError(source, f"non-numeric field: {exc}") from exc
