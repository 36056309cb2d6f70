"""What is measured beside a point's flows, and when: which probes run on each machine (Probing),
the slow starters armed before the clients, the latency probe prepared, then one shared window
opened and closed on every host side by side (measure_window; the window's model is window.py's)."""
from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..derive.patterns import Flow
from ..probes import LoadProbe, PerfProbe, ProcStatProbe
from ..probes.counters import CacheProbe, EndpointCounterProbe, InterruptsProbe, SoftnetProbe
from ..probes.perf import LEAD_S, PerfOptions
from ..probes.rx_prof import latency_probe_for
from ..store import RunDir
from ..testbed import Testbed
from .window import FlowStarts, all_local, edge_s


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


def prepare_latency(tb: Testbed, workload, flows: list[Flow], rd: RunDir, sample_every: int) -> dict:
    """Latency probes started before the clients: bpftrace's start-up must not fall inside the window."""
    early = {}
    if not sample_every:
        return early
    for machine, ifaces in receiver_ifaces(tb, flows).items():
        ports = [f.port for f in flows if tb.endpoints[f.receiver].machine == machine]
        lat, source, why = latency_probe_for(tb.machines[machine], ports, ifaces, workload.client_comm,
                                             tb.journal, sample_every)
        rd.manifest["probes"].setdefault("latency", {})[machine] = {"source": source, "why": why,
                                                                    "sample_every": sample_every}
        lat.prepare(tb.machines[machine])
        early[machine] = lat
    return early


def window_probes(tb: Testbed, flows: list[Flow], cpus: dict, early: dict, probing: Probing):
    """({machine: probes}, {role: counter probe}). Started in this order and stopped in reverse:
    the slow starters (perf, bpftrace) are running before the /proc snapshots open the CPU
    window, which closes first. Probes with arm() are started before the clients (arm)."""
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


def arm(tb: Testbed, probes: dict) -> None:
    """Probes that take long to start (perf opening its events on every CPU) start now, idle,
    so their start-up overlaps the warm-up instead of delaying the window."""
    for m, ps in probes.items():
        for p in ps:
            if hasattr(p, "arm"):
                p.arm(tb.machines[m])


def measure_window(tb: Testbed, workload, starts: FlowStarts, probes: dict, ep_probes: dict):
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

    on_each_host(tb, probes, ep_probes, open_probes)
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

    ep_raw = on_each_host(tb, probes, ep_probes, close_probes)
    closed = time.time()
    tb.closing_s = closed - end
    return raw, ep_raw, (opened, start, end, closed), no_window


def on_each_host(tb: Testbed, probes: dict, ep_probes: dict, step: Callable[[list[str], list[str]], dict]) -> dict:
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
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        futures = [pool.submit(step, machines, roles) for machines, roles in groups.values()]
        out: dict = {}
        for f in futures:  # every host's step has ended here; the first failure is raised
            out.update(f.result())
        return out


def receiver_ifaces(tb: Testbed, flows: list[Flow]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for role in dict.fromkeys(f.receiver for f in flows):
        ep = tb.endpoints[role]
        out[ep.machine].append(ep.iface)
    return out
