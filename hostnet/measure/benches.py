"""The time budget's measurements as workload kinds: the microbenchmarks and UDP batching.

They run through the same campaign path as the flow points (sweep -> runner -> one run
directory each, the same top-up), but measure themselves instead of starting flows: the runner
applies the point's config, gives them a load window (open() ... close(pids)) and writes what
they return. Tools and parsing only; nothing here creates a run directory.

Microbenchmarks (stored as experiment "time-budget-micro"): perf bench syscall basic, perf bench
mem memcpy at three buffer sizes and hostnet's microbench (atomic, cmpxchg, spinlock, malloc, an
skb-like allocation, getppid), pinned to one CPU of the receiver's machine; the CPU clock from
/proc/cpuinfo. What cannot run (no perf) is recorded unsupported, the rest still runs.
UDP batching (stored as "udp-batch"): udpbatch recv on the receiver and udpbatch send on the
sender, each pinned to its side's first application CPU.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, Union

from ..hosts import Host, HostError
from ..parsers import ParseError
from ..parsers.counters import parse_snmp
from ..parsers.native import parse_microbench, parse_udpbatch
from ..parsers.perfbench import parse_memcpy, parse_syscall_basic
from ..store import Rows
from ..derive.patterns import PointHooks

MICRO_EXPERIMENT = "time-budget-micro"
BATCH_EXPERIMENT = "udp-batch"
# the sweep's grid key "bench" -> what its runs are stored as
EXPERIMENTS = {"micro": MICRO_EXPERIMENT, "udp-batch": BATCH_EXPERIMENT}
# the grid keys each bench reads (the sweep keeps only these in a bench's points)
KEYS = {"micro": ("micro_scale",), "udp-batch": ("batch", "payload_bytes")}
TOOLS = {"micro": "microbench", "udp-batch": "udpbatch"}  # the native tool each bench runs
MICROBENCHES = ("syscall", "atomic", "cmpxchg", "spinlock", "malloc", "malloc256", "skballoc")
# iterations at scale 1.0: each benchmark takes roughly 0.2-1 s on a 2.6 GHz core
MICRO_ITERATIONS = {"syscall": 1_000_000, "atomic": 30_000_000, "cmpxchg": 30_000_000, "spinlock": 30_000_000,
                    "malloc": 15_000_000, "malloc256": 8_000_000, "skballoc": 6_000_000}
SYSCALL_LOOPS = 1_000_000
MEMCPY_SIZES = {"64KB": 4000, "1MB": 300, "64MB": 4}  # buffer -> loops
PORT = 9300
PAYLOAD_BYTES = 18  # a minimum 64-byte Ethernet frame: 14 header + 20 IP + 8 UDP + 18 payload + 4 FCS
FRAME_OVERHEAD_BYTES = 46


class Window(Protocol):
    """The runner's load window around what a bench measures (other processes' CPU during it); the
    processes a bench starts are tracked there, so a failed run records them and none outlives it."""

    def open(self) -> None: ...

    def close(self, our_pids: list[int]) -> None: ...

    def track(self, proc) -> None: ...


def cpu_clock_mhz(cpuinfo: str) -> float | None:
    """Mean "cpu MHz" over the CPUs listed in /proc/cpuinfo (None when the kernel shows none)."""
    vals = [float(ln.split(":", 1)[1]) for ln in cpuinfo.splitlines() if ln.startswith("cpu MHz")]
    return sum(vals) / len(vals) if vals else None


@dataclass(frozen=True)
class Microbenchmarks(PointHooks):
    """One repetition of every microbenchmark on the receiver's machine, pinned to the receiver's
    first application CPU. binaries: ((endpoint role, microbench's path), ...)."""
    scale: float = 1.0
    binaries: tuple = ()
    tool = "microbench"
    tools = ("microbench",)

    def describe(self) -> dict:
        return {"kind": "microbench", "tool": self.tool, "scale": self.scale}

    def machines(self, tb) -> list[str]:
        return [tb.receiver.machine]

    def placement(self, tb) -> dict:
        return {"machine": tb.receiver.machine, "cpu": tb.receiver.cpus[0]}

    def point_setup(self, tb) -> tuple[dict | None, list]:
        return self.placement(tb), []

    def measure(self, tb, rd, window: Window, out: Rows) -> dict:
        """Rows into `out`, raw files into rd; returns what could not be measured, and why."""
        host: Host = tb.machines[tb.receiver.machine]
        microbench = dict(self.binaries)[tb.receiver.role]
        cpu = str(self.placement(tb)["cpu"])
        unsupported = {}
        cpuinfo = host.read_text("/proc/cpuinfo")
        rd.write_raw("cpuinfo.txt", cpuinfo)
        if mhz := cpu_clock_mhz(cpuinfo):
            out.add("machine", "cpu_clock_mhz", mhz, "proc_cpuinfo")
        else:
            unsupported["cpu_clock"] = "/proc/cpuinfo shows no 'cpu MHz'"
        window.open()
        pin = ["taskset", "-c", cpu]
        no_perf = None if host.which("perf") else "perf is not installed"  # hostnet's own benches still run
        if no_perf:
            unsupported["syscall_perf"] = no_perf
        else:
            loops = str(max(10_000, int(SYSCALL_LOOPS * self.scale)))
            res = host.run(pin + ["perf", "bench", "syscall", "basic", "-l", loops], check=False)
            rd.write_raw("perf_bench_syscall_basic.txt", res.stdout + res.stderr)
            try:
                out.add("machine", "cost_ns", parse_syscall_basic(res.stdout + res.stderr).usec_per_op * 1e3,
                        "syscall_perf")
            except ParseError as exc:
                unsupported["syscall_perf"] = str(exc)
        for size, loops in MEMCPY_SIZES.items():
            if no_perf:
                unsupported[f"memcpy_{size}"] = no_perf
                continue
            res = host.run(pin + ["perf", "bench", "mem", "memcpy", "-f", "default", "-s", size,
                                  "-l", str(max(1, int(loops * self.scale)))], check=False)
            rd.write_raw(f"perf_bench_memcpy_{size}.txt", res.stdout + res.stderr)
            try:
                bps = parse_memcpy(res.stdout + res.stderr)[0].bytes_per_s
                out.add("machine", "memcpy_gbps", bps * 8 / 1e9, size)
            except ParseError as exc:
                unsupported[f"memcpy_{size}"] = str(exc)
        for bench in MICROBENCHES:
            n = max(100_000, int(MICRO_ITERATIONS[bench] * self.scale))
            res = host.run([microbench, bench, "--iterations", str(n), "--cpu", cpu], check=False)
            rd.write_raw(f"microbench_{bench}.txt", res.stdout + res.stderr)
            try:
                out.add("machine", "cost_ns", parse_microbench(res.stdout).ns_per_op, bench)
            except ParseError as exc:
                unsupported[bench] = str(exc)
        window.close([])
        return unsupported


def recv_argv(tool: str, ip: str, batch: int, duration: float, warmup: float, cpu: int, port: int = PORT) -> list[str]:
    return [tool, "recv", "--bind", ip, "--port", str(port), "--batch", str(batch), "--seconds", str(duration),
            "--warmup", str(warmup), "--cpu", str(cpu), "--wait", "5"]


def send_argv(tool: str, ip: str, batch: int, payload: int, duration: float, warmup: float, cpu: int,
              port: int = PORT) -> list[str]:
    # the sender's window outlasts the receiver's so the receiver never counts an idle tail
    return [tool, "send", "--dst", ip, "--port", str(port), "--batch", str(batch), "--size", str(payload),
            "--seconds", str(round(duration + 0.3, 3)), "--warmup", str(warmup), "--cpu", str(cpu)]


def _wait_udp_bound(host: Host, ip: str, port: int, proc, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not host.run(["ss", "-Hlun", f"src {ip}:{port}"], check=False).stdout.strip():
        if proc.poll() is not None:
            raise HostError(f"udpbatch recv exited at start: {(proc.stderr() or proc.stdout()).strip()[-300:]}")
        if time.monotonic() > deadline:
            raise HostError(f"udpbatch recv not bound to {ip}:{port} after {timeout} s")
        time.sleep(0.02)


@dataclass(frozen=True)
class UdpBatch(PointHooks):
    """One batching point: `batch` datagrams of payload_bytes per sendmmsg/recvmmsg call, counted
    for duration_s after warmup_s. binaries: ((endpoint role, udpbatch's path), ...)."""
    batch: int
    duration_s: int
    warmup_s: int = 1
    payload_bytes: int = PAYLOAD_BYTES
    binaries: tuple = ()
    tool = "udpbatch"
    tools = ("udpbatch",)

    def describe(self) -> dict:
        return {"kind": "udp_batch", "tool": self.tool, "duration_s": self.duration_s, "warmup_s": self.warmup_s,
                "frame_bytes": self.payload_bytes + FRAME_OVERHEAD_BYTES}

    def machines(self, tb) -> list[str]:
        return list(dict.fromkeys((tb.sender.machine, tb.receiver.machine)))

    def point_setup(self, tb) -> tuple[dict | None, list]:
        return {"sender_cpu": tb.sender.cpus[0], "receiver_cpu": tb.receiver.cpus[0]}, []

    def measure(self, tb, rd, window: Window, out: Rows) -> dict:
        snd, rcv = tb.sender, tb.receiver
        tool = dict(self.binaries)
        snmp_before = rcv.host.read_text("/proc/net/snmp")
        recv = rcv.host.start(recv_argv(tool[rcv.role], rcv.ip, self.batch, self.duration_s, self.warmup_s,
                                        rcv.cpus[0]))
        window.track(recv)
        _wait_udp_bound(rcv.host, rcv.ip, PORT, recv)
        window.open()
        send = snd.host.start(send_argv(tool[snd.role], rcv.ip, self.batch, self.payload_bytes, self.duration_s,
                                        self.warmup_s, snd.cpus[0]))
        window.track(send)
        rc_send = send.wait(timeout=self.duration_s + self.warmup_s + 30)
        rc_recv = recv.wait(timeout=15)
        window.close([send.pid, recv.pid])
        snmp_after = rcv.host.read_text("/proc/net/snmp")
        for name, text in (("udpbatch_send.txt", send.stdout() + send.stderr()),
                           ("udpbatch_recv.txt", recv.stdout() + recv.stderr()),
                           ("receiver.snmp_before.txt", snmp_before), ("receiver.snmp_after.txt", snmp_after)):
            rd.write_raw(name, text)
        if rc_send or rc_recv:
            raise HostError(f"udpbatch exited {rc_send} (send) / {rc_recv} (recv): "
                            f"{(send.stderr() + recv.stderr()).strip()[-300:]}")
        for side, text in (("sender", send.stdout()), ("receiver", recv.stdout())):
            r = parse_udpbatch(text, f"udpbatch_{side}")
            out.add(side, "udp_pps", r.pps)
            out.add(side, "udp_wall_per_pkt_ns", r.ns_per_packet)
            out.add(side, "udp_cpu_per_pkt_ns", r.cpu_ns_per_packet)
            out.add(side, "udp_calls_per_pkt", r.calls / r.packets if r.packets else float("nan"))
            if side == "sender":
                out.add(side, "udp_send_errors_count", r.errors)
        before, after = parse_snmp(snmp_before), parse_snmp(snmp_after)
        out.add("receiver", "udp_rcvbuf_errors_count",
                after.get("Udp.RcvbufErrors", 0) - before.get("Udp.RcvbufErrors", 0))
        return {}


Bench = Union[Microbenchmarks, UdpBatch]


def workload(point: dict, *, duration_s: int, warmup_s: int, binaries: dict) -> Bench:
    """The bench a time-budget point names (grid key "bench"); binaries: {native tool: ((endpoint
    role, path), ...)}, of which it takes its own (TOOLS)."""
    own = binaries.get(TOOLS[point["bench"]], ())
    if point["bench"] == "micro":
        return Microbenchmarks(scale=float(point.get("micro_scale", 1.0)), binaries=own)
    return UdpBatch(int(point["batch"]), duration_s, warmup_s, int(point.get("payload_bytes", PAYLOAD_BYTES)), own)
