"""Running a sweep: its points x repetitions, serially, shuffled (seeded, recorded), resumable. The
spec and what each point runs are sweep_spec's (re-exported here).

Each (point, repetition) is one run directory named <point id>-r<k> (<point id>-u<k> unprofiled),
where the point id hashes
the point's parameters, the testbed's fingerprint and hostnet's version. Re-running a sweep skips
runs that completed, re-runs failed, partial or incomplete ones (an empty or unreadable manifest;
the attempt is kept, renamed), and never duplicates a point: an interrupted sweep (Ctrl-C, kill)
resumes where it stopped. One sweep at a time per campaign: a second is refused (Campaign.lock).
A host that stops answering mid-point fails that point only; the sweep waits for it (settings
restored as soon as it answers) or stops, saying which host and where the journal is.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tqdm.auto import tqdm

from .. import __version__, native
from ..native.build import ensure as build_native
from . import benches, udp_loss
from ..derive.workloads import UdpRate
from ..testbed.capabilities import MissingCapability, point_requirements, zerocopy_receive_problems
from ..testbed.record import numa_layout, placement_plan
from ..hosts import RECONNECT_WAIT_S, HostUnreachable, SshHost
from .runner import (REQUIRED_TOOLS, PreflightError, Probing, RunFailed, RunRequest, all_local, preflight, rpc_tool,
                     start_point)
from .sweep_spec import (
    BENCH_KEYS, GRID_KEYS, MAX_POINTS, MIXED_KEYS, SCHEMA, ZERO_COPY_KEYS, SweepError, SweepSpec, check_spec, declared,
    paced, point_config, point_workload)
from ..store import INCOMPLETE, Campaign, run_status
from ..testbed import Testbed

__all__ = ["BENCH_KEYS", "GRID_KEYS", "MAX_POINTS", "MIXED_KEYS", "SCHEMA", "SweepError", "SweepSpec", "check_spec",
           "declared", "paced", "point_config", "point_workload", "run_sweep", "run_configs"]

log = logging.getLogger(__name__)  # where no progress bar can draw (not a terminal): a line per run

RECONNECT_POLL_S = 5.0


def native_binaries(tb: Testbed, tool: str) -> tuple:
    """((endpoint role, path), ...): a native tool built on every endpoint's host (once per local machine)."""
    return tuple((role, build_native(tool, ep.host)) for role, ep in tb.endpoints.items())


def _tools(spec: SweepSpec, points: list[dict], tb: Testbed) -> tuple[str, tuple[str, ...]]:
    """(the RPC tool the points' workloads name, every tool preflight checks)."""
    if spec.workload == "time-budget":  # every bench's, whichever points: a top-up of one keeps the fingerprint
        return "udpbatch", tuple(benches.TOOLS.values())
    mixed = spec.workload == "mixed"
    tool = rpc_tool(tb, spec.rpc_tool) if mixed or any(p.get("rpc_size") for p in points) else "iperf3"
    if any("udp_rate_gbps" in p for p in points):
        tool = UdpRate.tool
    if any(set(p) & set(ZERO_COPY_KEYS) for p in points):
        return tool, ("zcflow",)
    return tool, ("iperf3", tool) if mixed else (tool,)


def receiver_placements(tb: Testbed, points: list[dict]) -> tuple[dict[str, list[int]], list[str]]:
    """({placement: the receiver CPUs it pins the application to}, problems) for a sweep whose grid
    has `placement` (§3.6 Fig. 10c): read from the one receiver's NUMA layout and its NIC's node."""
    if not any("placement" in p for p in points):
        return {}, []
    if len(tb.receivers) != 1:
        return {}, [f"grid.placement moves one receiver's application; this testbed has {len(tb.receivers)}"]
    [receiver] = tb.receivers
    layout = numa_layout(receiver.host, None if tb.kind == "embedded" else receiver.iface)
    try:
        return placement_plan(layout), []
    except MissingCapability as exc:
        return {}, [f"grid.placement: {receiver.host.name}: {exc}"]


def fingerprint(tb: Testbed, versions: dict) -> dict:
    """What makes two testbeds comparable: not their names, which change from run to run."""
    return {"kind": tb.kind,
            "roles": {r: {"cpus": e.cpus, "host": e.host.describe()["kind"]} for r, e in tb.endpoints.items()},
            "kernels": sorted({v["kernel"] for v in versions.values()}),
            "rx_steering": tb.rx_steering,
            "tools": sorted({f"{tool}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                             for vs in versions.values() for tool, v in vs.items() if tool != "kernel"})}


# What a point's id hashes: the fingerprint as it was before rx_steering and tools joined it, so the
# runs of campaigns recorded earlier keep their ids (resumes and top-ups skip them). A different
# receive path or tool version is refused by incomparable() instead.
ID_KEYS = ("kind", "roles", "kernels")


def point_id(point: dict, fp: dict, experiment: str) -> str:
    blob = json.dumps({"point": point, "experiment": experiment, "hostnet": __version__,
                       "testbed": {k: v for k, v in fp.items() if k in ID_KEYS}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


class IncomparableTestbed(SweepError):
    """A campaign resumed or topped up on a testbed its runs cannot be compared with."""


def recorded_fingerprint(campaign: Campaign) -> dict | None:
    """The fingerprint a campaign's sweep.json recorded; what its runs' manifests say (receive
    path, kernels) where sweep.json predates a key or cannot be read (a sweep killed while writing
    it, before that write was atomic); None for a new campaign."""
    try:
        fp = dict(campaign.plan()["fingerprint"])
    except FileNotFoundError:
        if not campaign.path.is_dir():
            return None
        fp = {}
    except (ValueError, KeyError, TypeError):
        fp = {}  # torn or hand-edited (sweep.json is written atomically now): the runs' manifests say
    manifests = campaign.manifests() if not {"rx_steering", "kernels"} <= fp.keys() else []
    steering = {(m.get("testbed") or {}).get("rx_steering") for m in manifests} - {None}
    if "rx_steering" not in fp and len(steering) == 1:
        fp["rx_steering"] = steering.pop()
    kernels = {v.get("kernel") for m in manifests for v in (m.get("versions") or {}).values()} - {None}
    if "kernels" not in fp and kernels:
        fp["kernels"] = sorted(kernels)
    return fp or None


def incomparable(recorded: dict | None, current: dict) -> list[str]:
    """What differs between a campaign's recorded testbed and this one (the keys both name)."""
    if recorded is None:
        return []
    return [f"{k} {recorded[k]} there, {current[k]} here" for k in current
            if k in recorded and recorded[k] != current[k]]


def _status(run: Path) -> str | None:
    return run_status(run)




def unreachable(tb: Testbed) -> dict[str, str]:
    """The testbed's hosts that do not answer at all, with why ({} when every host answers)."""
    hosts = {id(h): h for h in [*tb.machines.values(), *(e.host for e in tb.endpoints.values())]}
    out = {}
    for host in hosts.values():
        try:
            host.run(["true"], check=False, timeout=30)
        except HostUnreachable as exc:
            out[host.name] = str(exc)
    return out


def _stop_leftovers(tb: Testbed) -> None:
    """The failed point's processes on a host that answers again (perf, iperf3 and the probes run
    in sessions of their own, so a lost SSH link does not end them): stopped by their mark before
    the next point measures beside them."""
    hosts = {id(h): h for h in [*tb.machines.values(), *(e.host for e in tb.endpoints.values())]}
    for host in hosts.values():
        tag = getattr(host, "tag", None)
        if isinstance(host, SshHost) and tag is not None:
            stopped = tag.kill_on(host)
            if stopped:
                tqdm.write(f"{host.name}: stopped {len(stopped)} process{'es' * (len(stopped) != 1)} the lost "
                           f"point left running")


def wait_and_restore(tb: Testbed, wait_s: float) -> list[str]:
    """After a point lost a host: wait up to wait_s for every host to answer, then put back at once
    every setting the campaign journaled (the failed point may have left some half-applied; the
    next point applies its config whole). Returns the restore's problems; raises HostUnreachable
    when a host still does not answer: the settings stay journaled for `hostnet restore`."""
    deadline = time.monotonic() + wait_s
    while lost := unreachable(tb):
        if time.monotonic() >= deadline:
            raise HostUnreachable(
                f"{'; '.join(lost.values())}: no answer for {wait_s:g} s, sweep stopped. The settings it "
                f"changed stay journaled in {tb.journal.path}; `hostnet restore` puts them back once "
                f"{' and '.join(lost)} answer{'s' if len(lost) == 1 else ''} again, and running the sweep "
                f"again resumes it")
        time.sleep(RECONNECT_POLL_S)
    _stop_leftovers(tb)
    # the same Journal journals the next point's changes: it reads its file anew for every record(),
    # and it keeps the lock, so no second controller takes the testbed between two points
    return tb.journal.restore(keep_lock=True)


def run_sweep(tb: Testbed, spec: SweepSpec, *, runs_dir, campaign: str, progress: bool = True,
              reconnect_wait_s: float = RECONNECT_WAIT_S, top_up: bool = False) -> dict:
    """Run (or resume) a sweep. Returns {"ran", "skipped", "failed", "campaign_dir", "restore_problems"}.

    A sweep records its plan in the campaign's sweep.json; a top-up round (top_up=True: one point of
    the campaign, topup.run_more) leaves the campaign's plan there untouched and is recorded by its
    caller under "top_ups".

    One sweep at a time per campaign (Campaign.lock). A point that loses a host ends failed with
    the reason and the sweep goes on once every host answers again (waiting up to
    reconnect_wait_s, settings restored then); a host that stays silent stops it (HostUnreachable).
    On a rehearsal testbed (emulated NICs) no unprofiled run is added: perf's cost there measures
    nothing, and each run costs minutes under TCG."""
    if tb.rehearsal and spec.unprofiled_repetitions:
        log.info("%s: no unprofiled runs on a rehearsal testbed (%s)", campaign, tb.rehearsal)
        spec = replace(spec, unprofiled_repetitions=0)
    points = spec.points()  # expanded once: every step below reads this list
    cfgs = {p["config"]: point_config(p) for p in points}
    tool, tools = _tools(spec, points, tb)
    # a bench records a missing perf unsupported (benches.py); flows need it
    needed = () if spec.workload == "time-budget" else tuple(REQUIRED_TOOLS["machines"])
    versions = preflight(tb, tools, machine_tools=needed)
    problems = [p for c in cfgs.values() for p in point_requirements(tb, c)]
    problems += [p for pt in points
                 for p in point_requirements(tb, point_config(pt), pt.get("ip_version"))]
    if any("udp_rate_gbps" in p for p in points):
        problems += udp_loss.requirements(tb)
    if any(p.get("recv_mode") == "mmap" for p in points):
        problems += zerocopy_receive_problems(tb)
    placements, unplaced = receiver_placements(tb, points)
    problems += unplaced
    if problems:  # refused before any host setting changes
        raise PreflightError("; ".join(dict.fromkeys(problems)))
    fp = fingerprint(tb, versions)
    where = Campaign(runs_dir, campaign)
    if differs := incomparable(recorded_fingerprint(where), fp):
        # runs of another kernel or receive path would be judged together with these, silently
        raise IncomparableTestbed(f"campaign {campaign} was recorded on another testbed ({'; '.join(differs)}): "
                                  f"its runs cannot be compared with this one's; record a new campaign")
    where.path.mkdir(parents=True, exist_ok=True)
    binaries = {t: native_binaries(tb, t) for t in tools if t in native.TOOLS}
    plan = _Campaign(spec, points, cfgs, tool, versions, fp, where, binaries, placements)
    with where.lock():
        return _run_plan(tb, plan, progress=progress, reconnect_wait_s=reconnect_wait_s, record_plan=not top_up)


# What earlier top-ups wrote into sweep.json (topup.py): a resume keeps it.
KEPT_RECORDS = ("top_ups", "decisive_top_ups")


def _records_kept(campaign: Campaign) -> dict:
    try:
        previous = campaign.plan()
    except (OSError, ValueError):
        return {}
    return {k: previous[k] for k in KEPT_RECORDS if isinstance(previous, dict) and k in previous}


@dataclass(frozen=True)
class _Campaign:
    """What a sweep has settled before its first run: the points (expanded once), their configs,
    the RPC tool, the tools' versions, the testbed's fingerprint, where the runs go."""
    spec: SweepSpec
    points: list[dict]
    configs: dict
    tool: str
    versions: dict
    fingerprint: dict
    where: Campaign
    binaries: dict = field(default_factory=dict)
    placements: dict = field(default_factory=dict)  # grid.placement -> the receiver's CPUs (receiver_placements)

    def rebuilt(self, tb: Testbed) -> "_Campaign":
        """The campaign with its native tools built again on every endpoint: a remote build lives in
        the host's /tmp (native.ensure), which a reboot empties."""
        return replace(self, binaries={t: native_binaries(tb, t) for t in self.binaries}) if self.binaries else self

    def testbed_for(self, tb: Testbed, point: dict) -> Testbed:
        """The testbed a point runs on: tb, or with grid.placement its receiver's application moved."""
        if "placement" not in point:
            return tb
        [receiver] = tb.receivers
        moved = replace(receiver, cpus=list(self.placements[point["placement"]]))
        return replace(tb, endpoints={**tb.endpoints, receiver.role: moved})

    def request(self, point: dict, pid: str, run: Path, repetition: int, profiled: bool) -> RunRequest:
        """The runner's request for one run of one point."""
        spec = self.spec
        cfg = self.configs[point["config"]] if set(point) == {"config"} else point_config(point)
        probing = Probing(profile=profiled, perf_freq_hz=spec.perf_freq_hz,
                          latency_sample_every=int(point.get("latency_sample_every", spec.latency_sample_every)))
        return RunRequest(cfg, point_workload(spec, point, self.tool, self.binaries), self.where.runs_dir,
                          self.where.name, experiment=spec.stored_for(point), repetition=repetition,
                          point={"id": pid, **point}, run_id=run.name, probing=probing, versions=self.versions)


def _run_plan(tb: Testbed, c: _Campaign, *, progress: bool, reconnect_wait_s: float, record_plan: bool) -> dict:
    spec, fp, cdir, campaign = c.spec, c.fingerprint, c.where.path, c.where.name
    order = [(p, f"r{rep}") for rep in range(spec.repetitions) for p in c.points]
    order += [(p, f"u{k}") for k in range(spec.unprofiled_repetitions) for p in c.points]
    random.Random(spec.seed).shuffle(order)  # without unprofiled runs: the order it always had
    plan = [(point_id(p, fp, spec.stored_as), p, rep) for p, rep in order]
    if record_plan:  # a kill mid-write leaves the old plan, never a torn one
        c.where.write_plan({"spec": asdict(spec), "fingerprint": fp, "hostnet": __version__, "rpc_tool": c.tool,
                            "order": [f"{pid}-{rep}" for pid, _, rep in plan], **_records_kept(c.where)})
    done = {"ran": 0, "skipped": 0, "failed": 0, "campaign_dir": str(cdir), "restore_problems": []}
    bar = tqdm(total=len(plan), desc=campaign, disable=not (progress and sys.stderr.isatty()))
    started = time.monotonic()
    with _Finisher(overlapping(tb), done) as finisher:
        for i, (pid, point, tag) in enumerate(plan):
            run, rep, profiled = cdir / f"{pid}-{tag}", int(tag[1:]), tag.startswith("r")
            shutil.rmtree(run.with_name(run.name + ".partial"), ignore_errors=True)  # died mid-way: redo
            status = _status(run)
            if status == "ok":
                done["skipped"] += 1
                bar.update(1)
                continue
            if status is not None:  # keep the failed (or incomplete) attempt for the record, out of the way
                kept = "incomplete" if status == INCOMPLETE else "failed"
                run.rename(run.with_name(f"{run.name}.{kept}-{int(time.time())}"))
            try:
                pending = start_point(c.testbed_for(tb, point), c.request(point, pid, run, rep, profiled),
                                      before_window=finisher.settle)
                finisher.add(pending, point, rep)
            except RunFailed as exc:
                finisher.settle()
                done["failed"] += 1
                tqdm.write(f"point {point} rep {rep} failed: {exc}")
                if isinstance(exc.__cause__, HostUnreachable) or unreachable(tb):
                    tqdm.write(f"a host stopped answering: waiting up to {reconnect_wait_s:g} s for it, "
                               "then restoring the settings")
                    try:
                        restore_problems = wait_and_restore(tb, reconnect_wait_s)
                    except HostUnreachable as lost:
                        bar.close()
                        raise HostUnreachable(f"sweep {campaign} stopped at run {i + 1} of {len(plan)} "
                                              f"({done['ran']} ran, {done['skipped']} already done, "
                                              f"{done['failed']} failed): {lost}") from exc
                    c = c.rebuilt(tb)  # a host that rebooted lost its native builds with its /tmp
                    done["restore_problems"] += restore_problems
                    for problem in restore_problems:
                        tqdm.write(f"could not restore: {problem}")
            bar.update(1)
            if bar.disable and progress:  # not a terminal: plain progress lines with an ETA
                per = (time.monotonic() - started) / max(1, i + 1 - done["skipped"])
                eta = per * (len(plan) - i - 1)
                log.info("[%d/%d] %s rep %s: ETA %.0f s", i + 1, len(plan), point, rep, eta)
    bar.close()
    return done


def overlapping(tb: Testbed) -> bool:
    """Whether a point's finish (perf's report, the tidy rows, the run directory) may overlap the
    next point's setup and warm-up: on local hosts (the embedded testbed). Over SSH each point
    finishes before the next starts: commands from two threads on one SSH connection are not
    something hostnet has tested."""
    return all_local(tb)


class _Finisher:
    """At most one point finishing in the background while the next one sets up; settle() waits
    for it (the next point calls it before its flows start, so the finishing work never falls in a
    window nor slows the flows' start) and counts it ran or failed. Without overlap, add() finishes
    at once."""

    def __init__(self, overlap: bool, done: dict):
        self.overlap, self.done = overlap, done
        self._pool = None
        self._pending = None

    def __enter__(self):
        if self.overlap:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hostnet-finish")
        return self

    def add(self, run, point: dict, rep: int) -> None:
        self.settle()
        if self._pool is None:
            self._record(run.finish, point, rep)
        else:
            self._pending = (self._pool.submit(run.finish), point, rep)

    def settle(self) -> None:
        if self._pending is not None:
            future, point, rep = self._pending
            self._pending = None
            self._record(future.result, point, rep)

    def _record(self, result, point: dict, rep: int) -> None:
        try:
            result()
            self.done["ran"] += 1
        except RunFailed as exc:
            self.done["failed"] += 1
            tqdm.write(f"point {point} rep {rep} failed: {exc}")

    def __exit__(self, *exc):
        try:
            self.settle()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)


def run_configs(tb: Testbed, spec: SweepSpec, *, runs_dir, campaign: str, progress: bool = True,
                reconnect_wait_s: float = RECONNECT_WAIT_S) -> list[Path]:
    """A sweep's successful runs (`hostnet run`, and the sections that need only the runs)."""
    out = run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign, progress=progress,
                    reconnect_wait_s=reconnect_wait_s)
    cdir = Path(out["campaign_dir"])
    return sorted(r for r in cdir.iterdir() if r.is_dir() and _status(r) == "ok")
