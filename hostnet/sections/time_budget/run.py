"""Measuring half of the time-budget section: microbenchmarks on the machine and UDP batching
between the embedded testbed's namespaces, each repetition one run directory.

Microbenchmark runs (experiment "time-budget-micro"): perf bench syscall basic, perf bench mem
memcpy at three buffer sizes, and hostnet's microbench (atomic, cmpxchg, spinlock, malloc,
an skb-like allocation, getppid), pinned to one CPU; the CPU clock from /proc/cpuinfo.
Batching runs (experiment "udp-batch"): udpbatch recv on the receiver and udpbatch send on the
sender (the embedded testbed's namespaces, or a testbed.yaml's servers, where the tools are built
on each machine), each pinned to its side's first application CPU, no-opts config. The
microbenchmarks run on the receiver's machine. A failed tool leaves a failed run.
"""
from __future__ import annotations

import json
import os
import platform
import random
import time
from pathlib import Path


from ...measure import config as stackconfig
from ... import native, store
from ...analysis import verdicts
from ...testbed.session import is_file, kind_of
from ...measure.runner import finish_failed, record_window
from ...store import Rows
from ...measure.tidy import note_foreign_load
from .. import common
from ...hosts import Host, HostError
from ...parsers import ParseError
from ...parsers.counters import parse_snmp
from ...parsers.native import parse_microbench, parse_udpbatch
from ...parsers.perfbench import parse_memcpy, parse_syscall_basic
from ...probes import LoadProbe
from ...measure.options import LiveOptions

MICRO_EXPERIMENT = "time-budget-micro"
BATCH_EXPERIMENT = "udp-batch"
BATCH_SIZES = [1, 2, 4, 8, 16, 32, 64]
MICROBENCHES = ("syscall", "atomic", "cmpxchg", "spinlock", "malloc", "malloc256", "skballoc")
# iterations at scale 1.0: each benchmark takes roughly 0.2-1 s on a 2.6 GHz core
MICRO_ITERATIONS = {"syscall": 1_000_000, "atomic": 30_000_000, "cmpxchg": 30_000_000, "spinlock": 30_000_000,
                    "malloc": 15_000_000, "malloc256": 8_000_000, "skballoc": 6_000_000}
SYSCALL_LOOPS = 1_000_000
MEMCPY_SIZES = {"64KB": 4000, "1MB": 300, "64MB": 4}  # buffer -> loops
PORT = 9300
PAYLOAD_BYTES = 18  # a minimum 64-byte Ethernet frame: 14 header + 20 IP + 8 UDP + 18 payload + 4 FCS
SHUFFLE_SEED = 13
TOP_UPS_FILE = "top_ups.json"  # what the decisive top-up did (the batching campaign has no sweep.json)


def collect(mode: str, *, runs_dir, campaign: str = "", batch_sizes=BATCH_SIZES, payload_bytes: int = PAYLOAD_BYTES,
            repetitions: int = 3, duration: float = 2, warmup: float = 1, micro_scale: float = 1.0,
            micro_cpu: int | None = None, min_clean: int = 1, max_extra: int = 3,
            live: LiveOptions = LiveOptions()) -> str:
    """Replay the campaign named, or measure on `live.testbed` (LiveOptions): the
    microbenchmarks on the receiver's machine, pinned to micro_cpu (None: the receiver's first
    application CPU, 1 on the embedded testbed), then the batching points."""
    if common.is_replay(mode, campaign):
        return campaign
    campaign = campaign or store.new_campaign_id("time-budget", kind_of(live.testbed))
    # built (or failing) before any namespace exists; servers build their own (tools_on)
    local = {} if is_file(live.testbed) else {t: native.ensure(t) for t in native.TOOLS}
    with live.testbed_for("tb") as tb:
        tools = tools_on(tb, local)
        machine = tb.machines[tb.receiver.machine]
        micro_cpu = tb.receiver.cpus[0] if micro_cpu is None else micro_cpu

        def micro(rep):
            return micro_run(machine, tb, tools[tb.receiver.machine]["microbench"], runs_dir=runs_dir,
                             campaign=campaign, repetition=rep, scale=micro_scale, cpu=micro_cpu,
                             machine=tb.receiver.machine)

        clean = {"micro": sum(_clean(micro(rep)) for rep in range(repetitions))}
        cfg = stackconfig.get_config("no-opts")
        applied = stackconfig.apply(tb, cfg)

        def point(b, rep):
            udpbatch = {m: t["udpbatch"] for m, t in tools.items()}
            return batch_run(tb, udpbatch, b, runs_dir=runs_dir, campaign=campaign, repetition=rep,
                             payload_bytes=payload_bytes, duration=duration, warmup=warmup, applied=applied)

        rng = random.Random(SHUFFLE_SEED)
        for rep in range(repetitions):
            order = list(batch_sizes)
            rng.shuffle(order)  # drift on a shared machine must not line up with batch size
            for b in order:
                clean[b] = clean.get(b, 0) + _clean(point(b, rep))
        # On a shared machine whole points can be flagged for foreign load: measure those again
        # (a bounded number of rounds) so every point keeps min_clean clean runs.
        for extra in range(max_extra):
            missing = [k for k, n in clean.items() if n < min_clean]
            if not missing:
                break
            for k in missing:
                clean[k] += _clean(micro(repetitions + extra) if k == "micro" else point(k, repetitions + extra))
        top_up(runs_dir, campaign, point, first_repetition=repetitions + max_extra, live=live)
    return campaign


def tools_on(tb, local: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each machine's path of every native tool: this machine's build where the machine shares its
    files (the embedded testbed), else one built on the machine itself (native.ensure over SSH)."""
    if tb.kind == "embedded":
        return {m: dict(local) for m in tb.machines}
    return {m: {t: native.ensure(t, host) for t in native.TOOLS} for m, host in tb.machines.items()}


def top_up(runs_dir, campaign: str, point, *, first_repetition: int,
           live: LiveOptions = LiveOptions()) -> verdicts.TopUpLog:
    """More batching runs of exactly the batch sizes an undecided F19 names (the section's judge),
    until it is decided or live's top-up budget is spent; the log goes to the campaign's top_ups.json
    (this campaign has no sweep.json: its runs are not a SweepSpec's points)."""
    from . import judge  # the package imports this module: judge is there once collect runs
    next_rep = {}

    def run_more(points: list[dict]) -> int:
        for p in points:
            b = int(p["batch"])
            rep = next_rep.setdefault(b, first_repetition)
            point(b, rep)
            next_rep[b] = rep + 1
        return len(points)
    runs, minutes = live.top_up_runs, live.top_up_minutes
    log = verdicts.top_up_until_decided(lambda: judge(runs_dir, campaign, common.REFERENCE_DIR), run_more,
                                        budget_runs=runs, budget_minutes=minutes)
    record = Path(runs_dir) / campaign / TOP_UPS_FILE
    past = json.loads(record.read_text()) if record.exists() else []
    past.append({"rounds": log.rounds, "runs": log.runs, "seconds": round(log.seconds), "stopped": log.stopped,
                 "budget": {"runs": runs, "minutes": minutes}, "per_round": log.per_round})
    record.write_text(json.dumps(past, indent=2))
    return log


def _clean(run) -> int:
    """1 for a successful run not flagged for foreign load."""
    if run is None:
        return 0
    m = store.load_manifest(run)
    return int(m["status"] == "ok" and not m.get("contaminated"))


def tool_versions(host: Host) -> dict:
    """Tool versions for the manifest; a missing perf or compiler is recorded, not fatal (the
    microbenchmarks that need perf are then recorded unsupported, the rest still run)."""
    def version(argv) -> str:
        try:
            res = host.run(argv, check=False)
        except HostError as exc:  # not installed
            return f"unsupported ({exc})"
        lines = res.stdout.strip().splitlines()
        return lines[0] if res.ok and lines else f"unsupported (exit {res.returncode}: {res.stderr.strip()[-200:]})"

    try:
        cc = version([native.compiler(host), "--version"])
    except native.NativeBuildError as exc:
        cc = f"unsupported ({exc})"
    return {"local": {"kernel": host.run(["uname", "-r"]).stdout.strip(), "perf": version(["perf", "--version"]),
                      "cc": cc}}


def cpu_clock_mhz(cpuinfo: str) -> float | None:
    """Mean "cpu MHz" over the CPUs listed in /proc/cpuinfo (None when the kernel shows none)."""
    vals = [float(ln.split(":", 1)[1]) for ln in cpuinfo.splitlines() if ln.startswith("cpu MHz")]
    return sum(vals) / len(vals) if vals else None


def _start_load(machines: dict[str, Host]) -> dict[str, tuple[LoadProbe, Host]]:
    probes = {}
    for name, host in machines.items():
        probes[name] = (LoadProbe(), host)
        probes[name][0].start(host)
    return probes


def _close_window(rd, out: Rows, probes: dict[str, tuple[LoadProbe, Host]], t0: float, our_pids: list[int]) -> None:
    """The window the flow points use too: its span, and other processes' CPU during it on each
    machine (a row each; one machine's files keep their plain names, as the embedded testbed's)."""
    raw = {}
    for machine, (load, host) in probes.items():
        raw[machine] = load.stop(host)
        for name, text in raw[machine].items():
            rd.write_raw(name if len(probes) == 1 else f"{machine}.{name}", text)
    record_window(rd, t0, time.time())
    note_foreign_load(out, rd.manifest, raw, our_pids)
    rd.manifest.update(out.notes)


def _failed(rd, exc: BaseException, procs=()) -> None:
    """Leave a readable failed run directory (finish_failed, as for flow points); an interrupt
    still stops the campaign, any other failure only this run."""
    finish_failed(rd, exc, {"udpbatch": dict(enumerate(procs))})
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    return None


def micro_run(host: Host, tb, microbench: str, *, runs_dir, campaign: str, repetition: int, scale: float = 1.0,
              cpu: int = 1, machine: str = "local"):
    """One repetition of every microbenchmark, pinned to `cpu`; what cannot run is recorded unsupported."""
    rd = store.RunDir(runs_dir, campaign, f"micro-r{repetition}-{os.urandom(3).hex()}")
    rd.manifest.update(experiment=MICRO_EXPERIMENT, repetition=repetition, point={"cpu": cpu, "scale": scale},
                       native_tool=os.path.basename(microbench),  # the name carries the source hash
                       testbed=tb.describe(), versions=tool_versions(host), controller=platform.node())
    out, unsupported = Rows(rd.manifest, config=""), {}
    try:
        cpuinfo = host.read_text("/proc/cpuinfo")
        rd.write_raw("cpuinfo.txt", cpuinfo)
        mhz = cpu_clock_mhz(cpuinfo)
        if mhz:
            out.add("machine", "cpu_clock_mhz", mhz, "proc_cpuinfo")
        else:
            unsupported["cpu_clock"] = "/proc/cpuinfo shows no 'cpu MHz'"
        load = _start_load({machine: host})
        t0 = time.time()
        pin = ["taskset", "-c", str(cpu)]
        no_perf = None if host.which("perf") else "perf is not installed"  # hostnet's own benches still run
        if no_perf:
            unsupported["syscall_perf"] = no_perf
        else:
            res = host.run(pin + ["perf", "bench", "syscall", "basic", "-l",
                                  str(max(10_000, int(SYSCALL_LOOPS * scale)))], check=False)
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
                                  "-l", str(max(1, int(loops * scale)))], check=False)
            rd.write_raw(f"perf_bench_memcpy_{size}.txt", res.stdout + res.stderr)
            try:
                bps = parse_memcpy(res.stdout + res.stderr)[0].bytes_per_s
                out.add("machine", "memcpy_gbps", bps * 8 / 1e9, size)
            except ParseError as exc:
                unsupported[f"memcpy_{size}"] = str(exc)
        for bench in MICROBENCHES:
            n = max(100_000, int(MICRO_ITERATIONS[bench] * scale))
            res = host.run([microbench, bench, "--iterations", str(n), "--cpu", str(cpu)], check=False)
            rd.write_raw(f"microbench_{bench}.txt", res.stdout + res.stderr)
            try:
                out.add("machine", "cost_ns", parse_microbench(res.stdout).ns_per_op, bench)
            except ParseError as exc:
                unsupported[bench] = str(exc)
        _close_window(rd, out, load, t0, [os.getpid()])
        rd.manifest["unsupported"] = unsupported
        return rd.finish("ok", out.frame())
    except BaseException as exc:
        return _failed(rd, exc)


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


def batch_run(tb, tool: dict[str, str], batch: int, *, runs_dir, campaign: str, repetition: int, payload_bytes: int,
              duration: float, warmup: float, applied: dict | None = None):
    """One batching point: udpbatch recv on the receiver, send on the sender; `tool` is udpbatch's
    path per machine (tools_on)."""
    snd, rcv = tb.sender, tb.receiver
    rd = store.RunDir(runs_dir, campaign, f"batch{batch}-r{repetition}-{os.urandom(3).hex()}")
    rd.manifest.update(experiment=BATCH_EXPERIMENT, repetition=repetition, config={"name": "no-opts"},
                       point={"batch": batch, "payload_bytes": payload_bytes, "frame_bytes": payload_bytes + 46},
                       testbed=tb.describe(), applied=applied or {},
                       versions=tool_versions(tb.machines[rcv.machine]),
                       native_tool=os.path.basename(tool[rcv.machine]),
                       controller=platform.node(), workload={"kind": "udp_batch", "tool": "udpbatch",
                                                             "duration_s": duration, "warmup_s": warmup})
    machines = {m: tb.machines[m] for m in dict.fromkeys((snd.machine, rcv.machine))}
    procs = []
    try:
        snmp_before = rcv.host.read_text("/proc/net/snmp")
        recv = rcv.host.start(recv_argv(tool[rcv.machine], rcv.ip, batch, duration, warmup, rcv.cpus[0]))
        procs.append(recv)
        _wait_udp_bound(rcv.host, rcv.ip, PORT, recv)
        load = _start_load(machines)
        t0 = time.time()
        send = snd.host.start(send_argv(tool[snd.machine], rcv.ip, batch, payload_bytes, duration, warmup, snd.cpus[0]))
        procs.append(send)
        rc_send = send.wait(timeout=duration + warmup + 30)
        rc_recv = recv.wait(timeout=15)
        window = Rows(rd.manifest, config="no-opts")  # its foreign-load row goes last
        _close_window(rd, window, load, t0, [os.getpid(), send.pid, recv.pid])
        snmp_after = rcv.host.read_text("/proc/net/snmp")
        for name, text in (("udpbatch_send.txt", send.stdout() + send.stderr()),
                           ("udpbatch_recv.txt", recv.stdout() + recv.stderr()),
                           ("receiver.snmp_before.txt", snmp_before), ("receiver.snmp_after.txt", snmp_after)):
            rd.write_raw(name, text)
        if rc_send or rc_recv:
            raise HostError(f"udpbatch exited {rc_send} (send) / {rc_recv} (recv): "
                            f"{(send.stderr() + recv.stderr()).strip()[-300:]}")
        out = Rows(rd.manifest, config="no-opts")
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
        out.rows += window.rows
        return rd.finish("ok", out.frame())
    except BaseException as exc:
        return _failed(rd, exc, procs)
    finally:
        for p in procs:
            p.close()

