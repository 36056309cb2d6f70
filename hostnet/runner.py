"""run_point: one measurement point (config x workload x repetition) -> one run directory."""
from __future__ import annotations

import os
import platform
import signal
import time
import traceback
import uuid
from collections import defaultdict
from pathlib import Path


from . import config as stackconfig, tidy
from .testbed import capabilities
from .hosts import HostError, HostUnreachable
from .parsers import ParseError
from .probes import LoadProbe, PerfProbe, ProcStatProbe
from .probes.counters import CacheProbe, EndpointCounterProbe, InterruptsProbe, SoftnetProbe
from .probes.latency import LatencyProbe
from .probes.rx_prof import RxProfProbe, latency_probe_for
from .store import RunDir
from .testbed import Testbed
from .workloads import Flow, LongFlows, MixedFlows, RpcFlows, cores_note, flow_part

REQUIRED_TOOLS = {"roles": [], "machines": ["perf"]}  # plus each workload's own tool
# Time between closing the window and the end of the flows' run, so the window's closing
# snapshots are taken while every flow still sends. The window opens when the warm-up ends: the
# warm-up is the opening margin, and the slow starters (perf, bpftrace) are running by then.
EDGE_S = 0.25
READY_TIMEOUT_S = 10.0


class PreflightError(RuntimeError):
    pass


class RunFailed(RuntimeError):
    pass


class WindowTooShort(RuntimeError):
    """The probes started so late (many flows, a loaded machine) that little of the run was measured."""


def check_window(window_s: float, duration_s: float, n_flows: int) -> None:
    """Refuse numbers from a window under a quarter of the run: the probes started late (a loaded
    machine, many flows), so little of the run was measured."""
    if window_s < duration_s / 4:
        raise WindowTooShort(f"measurement window {window_s:.2f} s is under a quarter of the {duration_s} s run: "
                             f"starting {n_flows} flows and the probes took too long; use a longer duration")


def preflight(tb: Testbed, tools: tuple[str, ...] = ("iperf3",)) -> dict:
    """Refuse before any host is touched: root, tools present. Returns tool versions."""
    if tb.kind == "embedded" and os.geteuid() != 0:
        raise PreflightError("a live run on the embedded testbed needs root; run as root (sudo)")
    versions = {}
    for ep in tb.endpoints.values():
        for tool in REQUIRED_TOOLS["roles"] + list(tools):
            if not ep.host.which(tool):
                raise PreflightError(f"{tool} is missing on {ep.host.name}; run `make install`")
    for name, host in tb.machines.items():
        for tool in REQUIRED_TOOLS["machines"]:
            if not host.which(tool):
                raise PreflightError(f"{tool} is missing on {name}; run `make install` (Debian: linux-perf)")
        versions[name] = {
            "perf": host.run(["perf", "--version"], check=False).stdout.strip(),
            **{t: host.run([t, "-V" if t == "netperf" else "--version"], check=False).stdout.strip().splitlines()[:1]
               for t in tools},
            "kernel": host.run(["uname", "-r"]).stdout.strip(),
            # how /proc/stat is accounted: tick-based accounting reads partly loaded CPUs low
            "cpu_accounting": capabilities.cpu_accounting(
                host.run(capabilities.KCONFIG_ARGV, check=False).stdout).value,
        }
    return versions


def rpc_tool(tb: Testbed, wanted: str = "auto") -> str:
    """netperf (the paper's tool) where every endpoint has it, else sockperf."""
    if wanted != "auto":
        return wanted
    return "netperf" if all(e.host.which("netperf") and e.host.which("netserver")
                            for e in tb.endpoints.values()) else "sockperf"


def plan_flows(tb: Testbed, workload: LongFlows | RpcFlows | MixedFlows) -> list[Flow]:
    return workload.flows([(e.role, e.cpus) for e in tb.senders], [(e.role, e.cpus) for e in tb.receivers])


def side_cpus(tb: Testbed, flows: list[Flow]) -> dict[str, dict[str, set[int]]]:
    """{side: {machine: CPUs}}: the cores each side's applications and receive processing use."""
    out: dict[str, dict[str, set[int]]] = {"sender": defaultdict(set), "receiver": defaultdict(set)}
    for f in flows:
        out["sender"][tb.endpoints[f.sender].machine].add(f.sender_cpu)
        out["receiver"][tb.endpoints[f.receiver].machine].add(f.receiver_cpu)
    return out


def wait_listening(tb: Testbed, flows: list[Flow], servers, proto: str = "tcp") -> None:
    """Every server listens before any client starts (a client racing its server fails)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = {f.index: f for f in flows}
    while pending:
        for f in list(pending.values()):
            ep = tb.endpoints[f.receiver]
            res = ep.host.run(["ss", f"-Hl{proto[0]}n", f"src {ep.ip}:{f.port}"], check=False)
            if res.stdout.strip():
                del pending[f.index]
            elif servers[f.index].poll() is not None:
                raise HostError(f"server for flow {f.index} exited at start: "
                                f"{(servers[f.index].stderr() or servers[f.index].stdout()).strip()[-300:]}")
        if pending and time.monotonic() > deadline:
            raise HostError(f"servers for flows {sorted(pending)} not listening after {READY_TIMEOUT_S} s")
        if pending:
            time.sleep(0.05)


def run_point(tb: Testbed, cfg: stackconfig.StackConfig, workload: LongFlows | RpcFlows | MixedFlows, *, runs_dir,
              campaign: str, repetition: int = 0, experiment: str = "single-flow",
              perf_freq_hz: int = PerfProbe().freq_hz, versions: dict | None = None,
              latency_sample_every: int = 0, run_id: str | None = None, point: dict | None = None,
              profile: bool = True, extra_probes=None) -> Path:
    """Apply cfg whole, run the workload's flows, probe one shared window, write one run directory.

    Any failure still leaves a run directory, with status "failed" and the tool's error.
    latency_sample_every: 0 = no latency probe; N = bpftrace timestamps ~1 in N received skbs.
    profile=False leaves out perf record and perf stat (bench/: the harness without its profiler).
    extra_probes: a callable returning more probes for each machine, run in the same window.
    """
    versions = versions or preflight(tb, tuple(getattr(workload, "tools", (workload.tool,))))
    flows = plan_flows(tb, workload)
    cpus = side_cpus(tb, flows)
    rd = _new_run(tb, cfg, workload, flows, cpus, runs_dir=runs_dir, campaign=campaign, repetition=repetition,
                  experiment=experiment, versions=versions, run_id=run_id, point=point,
                  perf=({"event": "cpu-clock", "freq_hz": perf_freq_hz, "mode": "timer (no hardware PMU assumed)"}
                        if profile else "off"))
    flow_procs = FlowProcs()
    early: dict[str, LatencyProbe | RxProfProbe] = {}
    probes: dict[str, list] = {}
    try:
        _apply(tb, cfg, workload, rd)
        _start_servers(tb, workload, flows, flow_procs)
        early = _prepare_latency(tb, workload, flows, rd, latency_sample_every)
        probes, ep_probes = _window_probes(tb, flows, early, profile, perf_freq_hz, extra_probes)
        _arm(tb, probes)
        t0 = time.time()
        _start_clients(tb, workload, flows, flow_procs)
        raw, ep_raw, start, end = _measure(tb, workload, t0, probes, ep_probes)
        _stop_flows(workload, flows, flow_procs)
        record_window(rd, start, end, clients_started=t0)
        try:  # a short window is flagged, and analysis leaves the run out, rather than failing the point
            check_window(end - start, workload.duration_s, len(flows))
        except WindowTooShort as exc:
            rd.manifest["short_window"] = str(exc)
        _write_outputs(rd, workload, flows, flow_procs, raw, ep_raw)
        our_pids = [os.getpid(), *flow_procs.pids()] + [pid for ps in probes.values() for p in ps
                                                        for pid in getattr(p, "pids", [])]
        client_text = {f.index: rd.read_raw(tidy.client_file(workload, f)) for f in flows}
        rows = tidy.point_rows(cfg, workload, rd.manifest, flows, cpus, client_text, raw, ep_raw, our_pids,
                               next(iter(versions.values()))["kernel"])
        if not profile:
            rd.manifest["cache_counters"] = "not recorded (profile off)"
        return rd.finish("ok", rows)
    except BaseException as exc:  # failed points still leave a readable run directory
        path = finish_failed(rd, exc, {"server": flow_procs.servers, "client": flow_procs.clients},
                             lost=flow_procs.lost)
        if isinstance(exc, (HostError, ParseError, stackconfig.ConfigError, WindowTooShort)):
            raise RunFailed(f"{exc} (run directory: {path})") from exc
        raise
    finally:
        flow_procs.close()
        for lat in early.values():  # stopped already on success; on failure, do not leave it running
            try:
                lat.abort()
            except HostUnreachable:  # the run directory says so; `hostnet restore` stops it later
                pass
        for m, ps in probes.items():  # armed probes (perf) of a point that failed: stopped, not left running
            for p in ps:
                if hasattr(p, "abort") and p not in early.values():
                    try:
                        p.abort(tb.machines[m])
                    except HostUnreachable:
                        pass


class FlowProcs:
    """The servers and clients of a point's flows, by flow index; `lost`: the hosts that stopped
    answering ({id(host): why}), whose processes are not tried again."""

    def __init__(self):
        self.servers: dict[int, object] = {}
        self.clients: dict[int, object] = {}
        self.lost: dict[int, str] = {}

    def pids(self) -> list[int]:
        return [p.pid for p in (*self.servers.values(), *self.clients.values())]

    def close(self) -> None:
        for p in (*self.servers.values(), *self.clients.values()):
            _on_reachable(p, self.lost, p.close)


def _on_reachable(proc, lost: dict[int, str], action):
    """action() unless the process's host already stopped answering; a host that stops answering
    now is added to `lost` (each further command would wait for the connect timeout again).
    Returns action's value, or None when the host is unreachable."""
    host = getattr(proc, "host", None)  # remote processes only: a local one always answers
    if host is not None and id(host) in lost:
        return None
    try:
        return action()
    except HostUnreachable as exc:
        lost[id(host)] = str(exc)
        return None


def _new_run(tb: Testbed, cfg, workload, flows: list[Flow], cpus: dict, *, runs_dir, campaign: str,
             repetition: int, experiment: str, versions: dict, run_id: str | None, point: dict | None,
             perf) -> RunDir:
    """The run directory and its manifest: everything known before a host is touched."""
    run_id = run_id or f"{cfg.name.replace('+', '_')}-n{len(flows)}-r{repetition}-{uuid.uuid4().hex[:6]}"
    rd = RunDir(runs_dir, campaign, run_id)
    rd.manifest["point"] = point or {"config": cfg.name}
    rd.manifest.update(experiment=experiment, config=cfg.describe(), config_label=cfg.label(tb.kind, tb.rx_steering),
                       repetition=repetition, workload=workload.describe(), testbed=tb.describe(),
                       flows=[f.__dict__ for f in flows], cores=cores_note(flows),
                       side_cpus={s: {m: sorted(c) for m, c in d.items()} for s, d in cpus.items()},
                       versions=versions, controller=platform.node(), probes={"perf": perf})
    return rd


def _apply(tb: Testbed, cfg, workload, rd: RunDir) -> None:
    """The config, whole, then the workload's own settings for this point (UDP: RPS, rmem_max)."""
    rd.manifest["applied"] = stackconfig.apply(tb, cfg)
    placement, settings = workload.point_setup(tb)
    if placement is not None:
        rd.manifest["placement"] = placement
    if settings:
        rd.manifest["applied"].update(stackconfig.apply_settings(tb, settings))


def _start_servers(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> None:
    for f in flows:
        ep = tb.endpoints[f.receiver]
        procs.servers[f.index] = ep.host.start(workload.server_argv(f, ep.ip))
    wait_listening(tb, flows, procs.servers, getattr(workload, "listen_proto", "tcp"))


def _prepare_latency(tb: Testbed, workload, flows: list[Flow], rd: RunDir, sample_every: int) -> dict:
    """Latency probes started before the clients: bpftrace's start-up must not fall inside the window."""
    early = {}
    if not sample_every:
        return early
    for machine, ifaces in _receiver_ifaces(tb, flows).items():
        ports = [f.port for f in flows if tb.endpoints[f.receiver].machine == machine]
        lat, source, why = latency_probe_for(tb.machines[machine], ports, ifaces, workload.client_comm,
                                             tb.journal, sample_every)
        rd.manifest["probes"].setdefault("latency", {})[machine] = {"source": source, "why": why}
        lat.prepare(tb.machines[machine])
        early[machine] = lat
    return early


def _start_clients(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> None:
    for f in flows:
        procs.clients[f.index] = tb.endpoints[f.sender].host.start(
            workload.client_argv(f, tb.endpoints[f.receiver].ip))


def _window_probes(tb: Testbed, flows: list[Flow], early: dict, profile: bool, perf_freq_hz: int, extra_probes):
    """({machine: probes}, {role: counter probe}). Started in this order and stopped in reverse:
    the slow starters (perf, bpftrace) are running before the /proc snapshots open the CPU
    window, which closes first. Probes with arm() are started before the clients (_arm)."""
    probes = {m: [CacheProbe(), PerfProbe(perf_freq_hz)] if profile else [] for m in tb.machines}
    used = list(dict.fromkeys([f.sender for f in flows] + [f.receiver for f in flows]))
    ep_probes = {role: EndpointCounterProbe(tb.endpoints[role].iface) for role in used}
    for machine, lat in early.items():  # its SIGUSR1 dump opens its window
        probes[machine].append(lat)
    for m in tb.machines:
        probes[m] += [*(extra_probes() if extra_probes else []), SoftnetProbe(), InterruptsProbe(), LoadProbe(),
                      ProcStatProbe()]
    return probes, ep_probes


def _arm(tb: Testbed, probes: dict) -> None:
    """Probes that take long to start (perf opening its events on every CPU) start now, idle,
    so their start-up overlaps the warm-up instead of delaying the window."""
    for m, ps in probes.items():
        for p in ps:
            if hasattr(p, "arm"):
                p.arm(tb.machines[m])


def _measure(tb: Testbed, workload, t0: float, probes: dict, ep_probes: dict):
    """Open the window when the warm-up ends, close it EDGE_S before the flows end; (raw files
    per machine, raw files per endpoint, window start, window end). At the close, the probes
    with close() (perf's events off) close before any probe's slower stop()."""
    time.sleep(max(0.0, t0 + workload.warmup_s - time.time()))
    for m, ps in probes.items():
        for p in ps:
            p.start(tb.machines[m])
    for role, p in ep_probes.items():
        p.start(tb.endpoints[role].host)
    start = time.time()
    time.sleep(max(0.0, t0 + workload.total_s() - EDGE_S - time.time()))
    end = time.time()
    for m, ps in probes.items():
        for p in reversed(ps):
            if hasattr(p, "close"):
                p.close(tb.machines[m])
    ep_raw = {role: p.stop(tb.endpoints[role].host) for role, p in ep_probes.items()}
    raw: dict[str, dict[str, str]] = {}
    for m, ps in probes.items():
        raw[m] = {}
        for p in reversed(ps):
            raw[m].update(p.stop(tb.machines[m]))
    return raw, ep_raw, start, end


def _stop_flows(workload, flows: list[Flow], procs: FlowProcs) -> None:
    for i, c in procs.clients.items():
        c.wait(timeout=workload.total_s() + 30)
        part = flow_part(workload, flows[i])
        if part.server_exits:
            procs.servers[i].wait(timeout=10)
        else:
            procs.servers[i].stop(getattr(part, "server_stop_signal", signal.SIGINT))


def _write_outputs(rd: RunDir, workload, flows: list[Flow], procs: FlowProcs, raw: dict, ep_raw: dict) -> None:
    """Every tool's output and every probe's file into raw/ (machine.* and role.* prefixes)."""
    for f in flows:
        tool = flow_part(workload, f).tool
        client = procs.clients[f.index]
        rd.write_raw(tidy.client_file(workload, f), client.stdout() + (client.stderr() if tool != "iperf3" else ""))
        rd.write_raw(f"{tool}_client_{f.index}.stderr.txt", client.stderr())
        server = procs.servers[f.index]
        rd.write_raw(f"{tool}_server_{f.index}.txt", server.stdout() + server.stderr())
    for prefix, files_of in (*raw.items(), *ep_raw.items()):
        for name, text in files_of.items():
            rd.write_raw(f"{prefix}.{name}", text)


def record_window(rd: RunDir, start: float, end: float, **extra) -> None:
    """The measurement window in the manifest (every kind of run: flow points and microbenchmarks)."""
    rd.manifest["window"] = {"start": start, "end": end, "seconds": end - start, **extra}


def finish_failed(rd: RunDir, exc: BaseException, procs: dict[str, dict[int, object]] | None = None,
                  lost: dict[int, str] | None = None) -> Path:
    """A failed run still leaves a readable run directory: the traceback, and each started
    process stopped with its argv and output. A host that stopped answering (an SSH link that
    dropped) is noted, not tried per process: the directory is written whatever the hosts do."""
    rd.manifest["traceback"] = traceback.format_exc()
    lost = {} if lost is None else lost
    for name, group in (procs or {}).items():
        for i, p in group.items():
            try:
                output = _on_reachable(p, lost, lambda p=p: (p.stop(), p.stdout() + p.stderr())[1])
            except HostError as err:  # the host answers but the command failed: say so, go on
                output = f"(could not stop it or read its output: {err})\n"
            if output is None:
                output = f"(not stopped, output not read: {lost.get(id(getattr(p, 'host', None)))})\n"
            rd.write_raw(f"{name}{i}.output.txt", " ".join(p.argv) + "\n" + output)
    if lost:
        rd.manifest["unreachable"] = sorted(set(lost.values()))
    return rd.finish("failed", error=f"{type(exc).__name__}: {exc}")


def _receiver_ifaces(tb: Testbed, flows: list[Flow]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for role in dict.fromkeys(f.receiver for f in flows):
        ep = tb.endpoints[role]
        out[ep.machine].append(ep.iface)
    return out
