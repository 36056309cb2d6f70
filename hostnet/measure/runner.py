"""run_point: one measurement point (config x workload x repetition) -> one run directory."""
from __future__ import annotations

import os
import platform
import time
import traceback
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import config as stackconfig, udp_loss
from ..derive import counters, tidy
from .provenance import git_commit
from ..hosts import HostError, HostUnreachable
from ..knobs import KNOBS, KnobError
from ..parsers import ParseError
from ..probes import LoadProbe
from ..probes.latency import LatencyProbe
from ..probes.rx_prof import RxProfProbe
from ..store import Campaign, Rows, RunDir
from ..testbed import Testbed
from ..derive.patterns import Flow, cores_note
from ..derive.workloads import LongFlows, MixedFlows, RpcFlows, UdpRate, flow_part
from .flows import FlowProcs, on_reachable, plan_flows, side_cpus, start_clients, start_servers, stop_flows
from .preflight import REQUIRED_TOOLS, PreflightError, preflight, rpc_tool
from .probing import Probing, arm, measure_window, prepare_latency, window_probes
from .window import (FlowStarts, WindowNotCovered, WindowTooShort, all_local, check_coverage, check_window, edge_s,
                     may_have_ended)

# the names sweep, bench/ and the tests import from here, defined in flows, preflight, probing and window
__all__ = ["REQUIRED_TOOLS", "PreflightError", "preflight", "rpc_tool", "FlowStarts", "WindowNotCovered",
           "WindowTooShort", "all_local", "check_coverage", "check_window", "edge_s", "may_have_ended", "Probing",
           "plan_flows", "side_cpus"]


class RunFailed(RuntimeError):
    pass


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
        start_servers(tb, workload, flows, run.procs)
        run.early = prepare_latency(tb, workload, flows, rd, probing.latency_sample_every)
        run.probes, ep_probes = window_probes(tb, flows, cpus, run.early, probing)
        arm(tb, run.probes)
        if before_window is not None:
            before_window()
        starts = start_clients(tb, workload, flows, run.procs)
        run.raw, run.ep_raw, (opened, start, end, closed), no_window = measure_window(tb, workload, starts, run.probes,
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
        stop_flows(workload, flows, run.procs)
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
                output = on_reachable(p, lost, lambda p=p: (p.stop(), p.stdout() + p.stderr())[1])
            except HostError as err:  # the host answers but the command failed: say so, go on
                output = f"(could not stop it or read its output: {err})\n"
            if output is None:
                output = f"(not stopped, output not read: {lost.get(id(getattr(p, 'host', None)))})\n"
            rd.write_raw(f"{name}{i}.output.txt", " ".join(p.argv) + "\n" + output)
    if lost:
        rd.manifest["unreachable"] = sorted(set(lost.values()))
    return rd.finish("failed", error=f"{type(exc).__name__}: {exc}")


