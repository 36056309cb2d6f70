"""run_point: one measurement point (config x workload x repetition) -> one run directory."""
from __future__ import annotations

import os
import platform
import signal
import time
import traceback
import uuid
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


from . import config as stackconfig, udp_loss
from ..derive import counters, tidy
from .provenance import git_commit
from ..hosts import HostError, HostUnreachable
from ..knobs import KNOBS, KnobError
from ..parsers import ParseError, ss
from ..probes import LoadProbe, PerfProbe, ProcStatProbe
from ..probes.perf import LEAD_S, PerfOptions
from ..probes.counters import CacheProbe, EndpointCounterProbe, InterruptsProbe, SoftnetProbe
from ..probes.latency import LatencyProbe
from ..probes.rx_prof import RxProfProbe, latency_probe_for
from ..store import Campaign, Rows, RunDir
from ..testbed import Testbed
from ..derive.workloads import Flow, LongFlows, MixedFlows, RpcFlows, UdpRate, cores_note, flow_part
from .preflight import REQUIRED_TOOLS, PreflightError, preflight, rpc_tool
from .window import (FlowStarts, WindowNotCovered, WindowTooShort, all_local, check_coverage, check_window, edge_s,
                     may_have_ended)

# the names sweep and the tests import from here, defined in preflight and window
__all__ = ["REQUIRED_TOOLS", "PreflightError", "preflight", "rpc_tool", "FlowStarts", "WindowNotCovered",
           "WindowTooShort", "all_local", "check_coverage", "check_window", "edge_s", "may_have_ended"]

READY_TIMEOUT_S = 10.0  # how long the flows' servers have to listen


class RunFailed(RuntimeError):
    pass


def plan_flows(tb: Testbed, workload: LongFlows | RpcFlows | MixedFlows) -> list[Flow]:
    return workload.flows([(e.role, e.cpus) for e in tb.senders], [(e.role, e.cpus) for e in tb.receivers])


def side_cpus(tb: Testbed, flows: list[Flow]) -> dict[str, dict[str, set[int]]]:
    """{side: {machine: CPUs}}: the cores each side's applications and receive processing use."""
    out: dict[str, dict[str, set[int]]] = {"sender": defaultdict(set), "receiver": defaultdict(set)}
    for f in flows:
        out["sender"][tb.endpoints[f.sender].machine].add(f.sender_cpu)
        out["receiver"][tb.endpoints[f.receiver].machine].add(f.receiver_cpu)
    return out


def wait_listening(tb: Testbed, flows: list[Flow], servers, proto: str = "tcp", ip_version: int | None = None) -> None:
    """Every server listens before any client starts (a client racing its server fails). One `ss`
    per receiving host and poll (over SSH a round trip each: not one per flow), polled sooner at
    first: a server usually listens within a few milliseconds of its start."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = {f.index: f for f in flows}
    pause = 0.005
    while pending:
        by_host: dict[int, list[Flow]] = {}
        for f in pending.values():
            by_host.setdefault(id(tb.endpoints[f.receiver].host), []).append(f)
        for group in by_host.values():
            host = tb.endpoints[group[0].receiver].host
            res = host.run(["ss", f"-Hl{proto[0]}n"], check=False)
            sockets = ss.listening(res.stdout, f"{host.name}: ss -Hl{proto[0]}n")
            for f in group:
                if ss.listens(sockets, tb.endpoints[f.receiver].address(ip_version), f.port):
                    del pending[f.index]
                elif servers[f.index].poll() is not None:
                    raise HostError(f"server for flow {f.index} exited at start: "
                                    f"{(servers[f.index].stderr() or servers[f.index].stdout()).strip()[-300:]}")
        if pending and time.monotonic() > deadline:
            raise HostError(f"servers for flows {sorted(pending)} not listening after {READY_TIMEOUT_S} s")
        if pending:
            time.sleep(pause)
            pause = min(2 * pause, 0.05)


@dataclass(frozen=True)
class Probing:
    """What is measured beside the flows, the same for every machine of a point.

    profile=False leaves out perf record and perf stat (bench/: the harness without its profiler);
    perf_options: how perf records beyond its rate (probes.perf.PerfOptions); cache_counters=False
    leaves perf stat's cache events out (bench/ measures what each part of the profiling costs);
    latency_sample_every: 0 = no latency probe, N = bpftrace timestamps ~1 in N received skbs;
    extra: a callable returning more probes for each machine, run in the same window."""
    profile: bool = True
    perf_freq_hz: int = PerfProbe().freq_hz
    perf_options: PerfOptions = PerfOptions()
    cache_counters: bool = True
    latency_sample_every: int = 0
    extra: Callable[[], list] | None = None

    def perf_manifest(self) -> dict | str:
        """perf's entry in the manifest's probes."""
        if not self.profile:
            return "off"
        return {"event": "cpu-clock", "freq_hz": self.perf_freq_hz, "mode": "timer (no hardware PMU assumed)",
                **self.perf_options.describe()}


@dataclass(frozen=True)
class RunRequest:
    """One point of one campaign as the runner needs it: built once (sweep.point_request, or by hand)
    and passed down whole. point: the point's keys as the manifest records them (default: the
    config's name); run_id: the run directory's name (default: config, flow count, repetition and a
    random suffix); versions: the tools' versions, when a sweep has read them already."""
    config: stackconfig.StackConfig
    workload: LongFlows | RpcFlows | MixedFlows
    runs_dir: Path
    campaign: str
    experiment: str = "single-flow"
    repetition: int = 0
    point: dict | None = None
    run_id: str | None = None
    probing: Probing = Probing()
    versions: dict | None = None


def run_point(tb: Testbed, req: RunRequest) -> Path:
    """Apply the config whole, run the workload's flows, probe one shared window, write one run directory.

    Any failure still leaves a run directory, with status "failed" and the tool's error."""
    return start_point(tb, req).finish()


def start_point(tb: Testbed, req: RunRequest, before_window: Callable[[], None] | None = None) -> PendingRun:
    """run_point up to the end of its flows: the window closed, every flow ended, the testbed free
    for the next point. What is left (perf's report, the tidy rows, the run directory) is
    PendingRun.finish(), which a sweep overlaps with the next point's setup and warm-up.
    before_window: called just before the flows start, so before the window opens (a sweep
    finishes the previous point there: that work never falls inside this point's window, nor
    between the flows' start and the window's, where it slowed the starts on 2 cores until the
    window opened after the flows had ended)."""
    workload, probing = req.workload, req.probing
    versions = req.versions or preflight(tb, tuple(getattr(workload, "tools", (workload.tool,))))
    if hasattr(workload, "measure"):  # a bench (benches.py): it measures itself in the runner's window
        return _run_bench(tb, req, versions, before_window)
    flows = plan_flows(tb, workload)
    cpus = side_cpus(tb, flows)
    rd = _new_run(tb, req, flows, cpus, versions)
    run = PendingRun(tb, req, rd, flows, cpus, versions)
    with run.failing():
        _apply(tb, req.config, workload, rd)
        rd.manifest["congestion_default"] = congestion_defaults(tb)
        _start_servers(tb, workload, flows, run.procs)
        run.early = _prepare_latency(tb, workload, flows, rd, probing.latency_sample_every)
        run.probes, ep_probes = _window_probes(tb, flows, cpus, run.early, probing)
        _arm(tb, run.probes)
        if before_window is not None:
            before_window()
        starts = _start_clients(tb, workload, flows, run.procs)
        run.raw, run.ep_raw, (opened, start, end, closed), no_window = _measure(tb, workload, starts, run.probes,
                                                                               ep_probes)
        record_window(rd, start, end, opened=opened, closed=closed, **starts.describe())
        # looked at only where the bound cannot vouch (a round trip each over SSH, free locally)
        running = {i for i in may_have_ended(starts, closed, workload.total_s()) if run.procs.clients[i].poll() is None}
        try:
            check_coverage(starts, opened, closed, workload.total_s(), running)
        except WindowNotCovered as exc:
            if no_window is None:
                raise
            raise WindowNotCovered(no_window) from exc
        _stop_flows(workload, flows, run.procs)
        try:  # a short window is flagged, and analysis leaves the run out, rather than failing the point
            check_window(end - start, workload.duration_s, len(flows))
        except WindowTooShort as exc:
            rd.manifest["short_window"] = str(exc)
        if moved := stackconfig.moved_globals(tb, rd.manifest.get("applied", {})):  # flagged: left out
            rd.manifest["settings_moved"] = moved
    return run


class PendingRun:
    """A point whose window has closed and whose flows have ended (start_point); finish() stops the
    slow probes (perf: its report and folded stacks), writes every raw file, derives the tidy rows
    and completes the run directory. A failure in either half leaves a failed run directory and
    raises RunFailed, as run_point always has."""

    def __init__(self, tb: Testbed, req: RunRequest, rd: RunDir, flows: list[Flow], cpus: dict, versions: dict):
        self.tb, self.req, self.rd, self.flows, self.cpus, self.versions = tb, req, rd, flows, cpus, versions
        self.cfg, self.workload = req.config, req.workload
        self.procs = FlowProcs()
        self.early: dict[str, LatencyProbe | RxProfProbe] = {}
        self.probes: dict[str, list] = {}
        self.raw: dict = {}
        self.ep_raw: dict = {}
        self.path: Path | None = None

    def finish(self) -> Path:
        if self.path is not None:
            return self.path
        tb, rd, flows = self.tb, self.rd, self.flows
        with self.failing(last=True):
            for m, ps in self.probes.items():  # perf's events went off at the close: now its report
                for p in reversed(ps):
                    if hasattr(p, "close"):
                        self.raw[m].update(p.stop(tb.machines[m]))
            _write_outputs(rd, self.workload, flows, self.procs, self.raw, self.ep_raw)
            our_pids = [os.getpid(), *self.procs.pids()] + [pid for ps in self.probes.values() for p in ps
                                                            for pid in getattr(p, "pids", [])]
            outputs = {f.index: tidy.FlowOutput(rd.read_raw(tidy.client_file(self.workload, f)),
                                                rd.read_raw(tidy.server_file(self.workload, f))) for f in flows}
            derived = tidy.point_rows(self.cfg, self.workload, rd.manifest, flows, self.cpus, outputs, self.raw,
                                      self.ep_raw, our_pids, next(iter(self.versions.values()))["kernel"])
            rd.manifest.update(derived.notes)  # tidy derives; the runner records
            probing = self.req.probing
            if not (probing.profile and probing.cache_counters):
                off = "profile" if not probing.profile else "cache counters"
                rd.manifest["cache_counters"] = f"not recorded ({off} off)"
            self.path = rd.finish("ok", derived.rows)
        return self.path

    @contextmanager
    def failing(self, last: bool = False):
        """A failure: the run directory written as failed, every process and probe stopped,
        RunFailed raised for the errors a sweep records. last: the point's final step (its
        processes are released on success too)."""
        ok = False
        try:
            yield
            ok = True
        except BaseException as exc:  # failed points still leave a readable run directory
            path = finish_failed(self.rd, exc, {"server": self.procs.servers, "client": self.procs.clients},
                                 lost=self.procs.lost)
            self.path = path
            if isinstance(exc, (HostError, ParseError, stackconfig.ConfigError, WindowTooShort, WindowNotCovered)):
                raise RunFailed(f"{exc} (run directory: {path})") from exc
            raise
        finally:
            if last or not ok:
                self._release()

    def _release(self) -> None:
        self.procs.close()
        for lat in self.early.values():  # stopped already on success; on failure, do not leave it running
            try:
                lat.abort()
            except HostUnreachable:  # the run directory says so; `hostnet restore` stops it later
                pass
        for m, ps in self.probes.items():  # armed probes (perf) not stopped by a success: stopped now
            for p in ps:
                if hasattr(p, "abort") and p not in self.early.values():
                    try:
                        p.abort(self.tb.machines[m])
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


def _run_dir(req: RunRequest, run_id: str) -> RunDir:
    return Campaign(req.runs_dir, req.campaign).new_run(run_id, git_commit=git_commit())


def _new_run(tb: Testbed, req: RunRequest, flows: list[Flow], cpus: dict, versions: dict) -> RunDir:
    """The run directory and its manifest: everything known before a host is touched."""
    cfg = req.config
    run_id = req.run_id or f"{cfg.name.replace('+', '_')}-n{len(flows)}-r{req.repetition}-{uuid.uuid4().hex[:6]}"
    rd = _run_dir(req, run_id)
    rd.manifest["point"] = req.point or {"config": cfg.name}
    rd.manifest.update(experiment=req.experiment, config=cfg.describe(),
                       config_label=cfg.label(tb.kind, tb.rx_steering), repetition=req.repetition,
                       workload=req.workload.describe(), testbed=tb.describe(),
                       flows=[f.__dict__ for f in flows], cores=cores_note(flows),
                       side_cpus={s: {m: sorted(c) for m, c in d.items()} for s, d in cpus.items()},
                       versions=versions, controller=platform.node(), probes={"perf": req.probing.perf_manifest()})
    if tb.rehearsal:  # flagged from the start: no analysis judges from it (analysis.flags)
        rd.manifest["rehearsal"] = tb.rehearsal
    return rd


class _BenchWindow:
    """A bench's load window on its machines (benches.Window) and the processes it started."""

    def __init__(self, tb: Testbed, rd: RunDir, machines: list[str]):
        self.tb, self.rd = tb, rd
        self.probes = {m: LoadProbe() for m in machines}
        self.procs: list = []
        self.start = 0.0
        self.raw: dict[str, dict[str, str]] = {}
        self.our_pids: list[int] = []

    def track(self, proc) -> None:
        self.procs.append(proc)

    def open(self) -> None:
        for m, probe in self.probes.items():
            probe.start(self.tb.machines[m])
        self.start = time.time()

    def close(self, our_pids: list[int]) -> None:
        self.raw = {m: probe.stop(self.tb.machines[m]) for m, probe in self.probes.items()}
        record_window(self.rd, self.start, time.time())
        self.our_pids = [os.getpid(), *our_pids]

    def rows(self, out) -> None:
        """The window's raw files (one machine's keep their plain names, as the embedded testbed's
        always have) and other processes' CPU during it, last among the rows."""
        for machine, files in self.raw.items():
            for name, text in files.items():
                self.rd.write_raw(name if len(self.raw) == 1 else f"{machine}.{name}", text)
        counters.note_foreign_load(out, self.rd.manifest, self.raw, self.our_pids)


class _Measured:
    """A bench's run, finished already: what a sweep's finisher expects of start_point."""

    def __init__(self, path: Path):
        self.path = path

    def finish(self) -> Path:
        return self.path


def _run_bench(tb: Testbed, req: RunRequest, versions: dict, before_window) -> _Measured:
    """One bench point (benches.py): the config applied whole, the bench measuring in a load window
    on its machines, its rows and what it could not measure recorded, the run directory written.
    A failure leaves a failed run directory with the bench's processes' argv and output."""
    workload = req.workload
    rd = _run_dir(req, req.run_id or f"{req.experiment}-r{req.repetition}-{uuid.uuid4().hex[:6]}")
    rd.manifest["point"] = req.point or {"config": req.config.name}
    rd.manifest.update(experiment=req.experiment, config=req.config.describe(),
                       config_label=req.config.label(tb.kind, tb.rx_steering), repetition=req.repetition,
                       workload=workload.describe(), testbed=tb.describe(),
                       versions=versions, controller=platform.node(), probes={"perf": "off", "load": "window"})
    if tb.rehearsal:
        rd.manifest["rehearsal"] = tb.rehearsal
    window = _BenchWindow(tb, rd, workload.machines(tb))
    try:
        _apply(tb, req.config, workload, rd)
        if before_window is not None:
            before_window()
        out = Rows(rd.manifest, req.config.name)
        rd.manifest["unsupported"] = workload.measure(tb, rd, window, out)
        window.rows(out)
        rd.manifest.update(out.notes)  # the bench derives; the runner records
        return _Measured(rd.finish("ok", out.frame()))
    except BaseException as exc:
        path = finish_failed(rd, exc, {workload.tool: dict(enumerate(window.procs))})
        if isinstance(exc, (HostError, ParseError, stackconfig.ConfigError)):
            raise RunFailed(f"{exc} (run directory: {path})") from exc
        raise
    finally:
        for p in window.procs:
            p.close()


def _apply(tb: Testbed, cfg, workload, rd: RunDir) -> None:
    """The config, whole, then the workload's own settings for this point (UDP: RPS, rmem_max)."""
    rd.manifest["applied"] = stackconfig.apply(tb, cfg)
    placement, settings = (udp_loss.point_setup(tb, workload) if isinstance(workload, UdpRate)
                           else workload.point_setup(tb))
    if placement is not None:
        rd.manifest["placement"] = placement
    if settings:
        rd.manifest["applied"].update(stackconfig.apply_settings(tb, settings))


def congestion_defaults(tb: Testbed) -> dict[str, str | None]:
    """Each endpoint's default congestion control as the point runs, the algorithm its sockets
    connect under (iperf3 picks its own only after connect(), and bbr's init leaves a socket paced:
    docs/embedded-testbed.md): the point's own on the embedded testbed (config.congestion_settings),
    a server's own configuration elsewhere; None where it could not be read."""
    knob, out = KNOBS["congestion_control"], {}
    for role, ep in tb.endpoints.items():
        try:
            out[role] = knob.read(ep.host, "net.ipv4.tcp_congestion_control") or None
        except KnobError:
            out[role] = None
    return out


def _start_servers(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> None:
    for f in flows:
        ep = tb.endpoints[f.receiver]
        procs.servers[f.index] = ep.host.start(workload.server_argv(f, ep.address(workload.ip_version)))
    wait_listening(tb, flows, procs.servers, getattr(workload, "listen_proto", "tcp"), workload.ip_version)


def _prepare_latency(tb: Testbed, workload, flows: list[Flow], rd: RunDir, sample_every: int) -> dict:
    """Latency probes started before the clients: bpftrace's start-up must not fall inside the window."""
    early = {}
    if not sample_every:
        return early
    for machine, ifaces in _receiver_ifaces(tb, flows).items():
        ports = [f.port for f in flows if tb.endpoints[f.receiver].machine == machine]
        lat, source, why = latency_probe_for(tb.machines[machine], ports, ifaces, workload.client_comm,
                                             tb.journal, sample_every)
        rd.manifest["probes"].setdefault("latency", {})[machine] = {"source": source, "why": why,
                                                                    "sample_every": sample_every}
        lat.prepare(tb.machines[machine])
        early[machine] = lat
    return early


def _start_clients(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> FlowStarts:
    """Every client started as close together as the hosts allow: per sending host, all of its
    flows at once (Host.start_many: one SSH round trip), the hosts side by side (a thread each)."""
    by_host: dict[int, list[Flow]] = defaultdict(list)
    for f in flows:
        by_host[id(tb.endpoints[f.sender].host)].append(f)
    starts = FlowStarts()

    def start(group: list[Flow]) -> None:
        host = tb.endpoints[group[0].sender].host
        sent = time.time()
        try:
            started = host.start_many([workload.client_argv(f, tb.endpoints[f.receiver].address(workload.ip_version))
                                       for f in group])
        finally:
            returned = time.time()
        for f, (proc, at) in zip(group, started, strict=True):
            procs.clients[f.index] = proc
            starts.add(f.index, sent, returned, host.name, at)

    groups = list(by_host.values())
    if len(groups) == 1:
        start(groups[0])
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            for future in [pool.submit(start, g) for g in groups]:
                future.result()
    return starts


def _window_probes(tb: Testbed, flows: list[Flow], cpus: dict, early: dict, probing: Probing):
    """({machine: probes}, {role: counter probe}). Started in this order and stopped in reverse:
    the slow starters (perf, bpftrace) are running before the /proc snapshots open the CPU
    window, which closes first. Probes with arm() are started before the clients (_arm)."""
    probes: dict[str, list] = {m: [] for m in tb.machines}
    if probing.profile:
        for m in tb.machines:
            used = sorted(set().union(*(side.get(m, set()) for side in cpus.values())))
            probes[m] = [*([CacheProbe()] if probing.cache_counters else []),
                         PerfProbe(probing.perf_freq_hz, options=probing.perf_options, cpus=used)]
    used = list(dict.fromkeys([f.sender for f in flows] + [f.receiver for f in flows]))
    ep_probes = {role: EndpointCounterProbe(tb.endpoints[role].iface) for role in used}
    for machine, lat in early.items():  # its SIGUSR1 dump opens its window
        probes[machine].append(lat)
    for m in tb.machines:
        probes[m] += [*(probing.extra() if probing.extra else []), SoftnetProbe(), InterruptsProbe(), LoadProbe(),
                      ProcStatProbe()]
    return probes, ep_probes


def _arm(tb: Testbed, probes: dict) -> None:
    """Probes that take long to start (perf opening its events on every CPU) start now, idle,
    so their start-up overlaps the warm-up instead of delaying the window."""
    for m, ps in probes.items():
        for p in ps:
            if hasattr(p, "arm"):
                p.arm(tb.machines[m])


def _measure(tb: Testbed, workload, starts: FlowStarts, probes: dict, ep_probes: dict):
    """Open the window when every flow has had its warm-up, close it EDGE_S before the first flow
    can end; (raw files per machine, raw files per endpoint, (opened, start, end, closed)): opened
    before the first probe starts, start once all have, end when the window is due to close,
    closed once the last probe that bounds it has stopped. At the close, perf's events go off
    first (close()); perf's slow finish (its report) is PendingRun.finish()'s."""
    opens = starts.last_returned + workload.warmup_s
    time.sleep(max(0.0, opens - min(LEAD_S, workload.warmup_s) - time.time()))
    for m, ps in probes.items():  # perf record samples from LEAD_S ahead, cut to the window later
        for p in ps:
            if hasattr(p, "lead"):
                p.lead(tb.machines[m])
    time.sleep(max(0.0, opens - time.time()))
    opened = time.time()

    def open_probes(machines: list[str], roles: list[str]) -> dict:
        for m in machines:
            for p in probes[m]:
                p.start(tb.machines[m])
        return {role: ep_probes[role].start(tb.endpoints[role].host) for role in roles}

    _on_each_host(tb, probes, ep_probes, open_probes)
    start = time.time()
    edge = edge_s(tb, start - opened)
    due = starts.first_sent + workload.total_s() - edge
    # A testbed too slow for the flows (TCG guests: ~0.7 s a command) leaves no window; the point goes
    # on as before (a short window is flagged), but a coverage failure then says why and what it needs.
    no_window = None if due > start else (
        f"no measurement window: its probes took {start - opened:.1f} s to open and it must close {edge:.1f} s "
        f"before the flows end, so flows of {workload.total_s():.0f} s leave {due - start:.1f} s; on this "
        f"testbed give the point at least {start - starts.first_sent + edge + workload.duration_s:.0f} s "
        f"(--duration)")
    time.sleep(max(0.0, due - time.time()))
    end = time.time()
    for ps in probes.values():
        for p in ps:
            if hasattr(p, "bound"):
                p.bound(start, end)
    finishers = {m: [p for p in reversed(ps) if hasattr(p, "close")] for m, ps in probes.items()}
    raw: dict[str, dict[str, str]] = {m: {} for m in probes}

    def close_probes(machines: list[str], roles: list[str]) -> dict:
        for m in machines:
            for p in finishers[m]:
                p.close(tb.machines[m])
        out = {role: ep_probes[role].stop(tb.endpoints[role].host) for role in roles}
        for m in machines:
            for p in reversed(probes[m]):
                if p not in finishers[m]:
                    raw[m].update(p.stop(tb.machines[m]))
        return out

    ep_raw = _on_each_host(tb, probes, ep_probes, close_probes)
    closed = time.time()
    tb.closing_s = closed - end
    return raw, ep_raw, (opened, start, end, closed), no_window


def _on_each_host(tb: Testbed, probes: dict, ep_probes: dict, step: Callable[[list[str], list[str]], dict]) -> dict:
    """step(machines, roles) for each remote host, side by side (a thread each), its machines' probes and
    then its endpoints' in order; {role: result}. Remote commands cost one round trip each (0.5-3 s to a
    TCG guest), so the window's edges take the slowest host's time, not the sum of them all. A host
    object (one SSH connection) takes its turns in one thread; local hosts stay in turn, in one."""
    groups: dict[object, tuple[list[str], list[str]]] = {}
    local = all_local(tb)
    for m in probes:
        groups.setdefault("local" if local else id(tb.machines[m]), ([], []))[0].append(m)
    for role in ep_probes:
        groups.setdefault("local" if local else id(tb.endpoints[role].host), ([], []))[1].append(role)
    if len(groups) < 2:
        return step(*next(iter(groups.values()))) if groups else {}
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        futures = [pool.submit(step, machines, roles) for machines, roles in groups.values()]
        out: dict = {}
        for f in futures:  # every host's step has ended here; the first failure is raised
            out.update(f.result())
        return out


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
        rd.write_raw(tidy.server_file(workload, f), server.stdout() + server.stderr())
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
