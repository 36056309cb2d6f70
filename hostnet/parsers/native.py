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


_ZC_KEYS = ("role", "mode", "window_ns", "bytes", "bytes_total", "calls", "user_ns", "sys_ns")
_ZC_MODE_KEYS = {"mmap": ("mapped", "mapped_total"),
                 "zerocopy": ("zc_sends", "zc_completed", "zc_copied", "zc_notifications", "enobufs")}
ZC_MODES = {"sender": ("copy", "sendfile", "zerocopy"), "receiver": ("copy", "mmap")}


@dataclass(frozen=True)
class ZcflowResult:
    """One side of a zcflow run (hostnet/native/zcflow.c): what moved, and this side's thread CPU,
    inside the side's own window; mode-specific counts are None where the mode has none."""
    role: str
    mode: str
    window_ns: int
    bytes: int
    bytes_total: int
    calls: int
    user_ns: int
    sys_ns: int
    mapped: int | None = None          # mmap: bytes mapped in the window (the rest were read)
    mapped_total: int | None = None
    zc_sends: int | None = None        # zerocopy: sends with MSG_ZEROCOPY, and their completions
    zc_completed: int | None = None
    zc_copied: int | None = None       # completions the kernel flagged SO_EE_CODE_ZEROCOPY_COPIED
    zc_notifications: int | None = None
    enobufs: int | None = None
    rcv_mss: int | None = None

    @property
    def gbps(self) -> float:
        return self.bytes * 8 / self.window_ns if self.window_ns else float("nan")

    @property
    def cpu_us_per_mb(self) -> float:
        """The thread's CPU per MB (2^20 bytes) moved: tcp_mmap.c's own unit, comparable with its figures."""
        return (self.user_ns + self.sys_ns) / 1e3 / (self.bytes / (1 << 20)) if self.bytes else float("nan")

    @property
    def mapped_pct(self) -> float | None:
        return None if self.mapped is None else (100.0 * self.mapped / self.bytes if self.bytes else float("nan"))

    @property
    def copied_pct(self) -> float | None:
        """Of MSG_ZEROCOPY sends completed, the share the kernel copied anyway."""
        if self.zc_completed is None:
            return None
        return 100.0 * self.zc_copied / self.zc_completed if self.zc_completed else float("nan")


def parse_zcflow(text: str, source: str = "zcflow.txt") -> ZcflowResult:
    f = _fields(text, "zcflow", _ZC_KEYS, source)
    role, mode = f["role"], f["mode"]
    if mode not in ZC_MODES.get(role, ()):
        raise ParseError(source, f"role {role!r} with mode {mode!r} is not a zcflow result")
    extra = _ZC_MODE_KEYS.get(mode, ())
    missing = [k for k in extra if k not in f]
    if missing:
        raise ParseError(source, f"a {mode} result lacks {', '.join(missing)}")
    counts = {k: _count(f, k, source) for k in (*_ZC_KEYS[2:], *extra, *(["rcv_mss"] if "rcv_mss" in f else []))}
    r = ZcflowResult(role, mode, **counts)
    if r.window_ns == 0:
        raise ParseError(source, f"the {role}'s window never opened: the stream ended before the warm-up did "
                                 f"({r.bytes_total} bytes in all)")
    if r.bytes > r.bytes_total or (r.mapped or 0) > (r.mapped_total or 0) or (r.mapped or 0) > r.bytes:
        raise ParseError(source, f"counts that cannot be: {' '.join(f'{k}={v}' for k, v in counts.items())}")
    if r.zc_completed is not None and (r.zc_copied > r.zc_completed or r.zc_completed > r.zc_sends):
        raise ParseError(source, f"{r.zc_copied} copied of {r.zc_completed} completed of {r.zc_sends} sends")
    return r
