"""A point's flows as processes: planned over the testbed's (host, core) slots, servers started and
listening before any client, clients started together (per host in one go, hosts side by side),
stopped once they have run their time; a host that stops answering is not tried again."""
from __future__ import annotations

import signal
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from ..derive.patterns import Flow
from ..derive.workloads import LongFlows, MixedFlows, RpcFlows, flow_part
from ..hosts import HostError, HostUnreachable
from ..parsers import ss
from ..testbed import Testbed
from .window import FlowStarts


READY_TIMEOUT_S = 10.0  # how long the flows' servers have to listen


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
            on_reachable(p, self.lost, p.close)


def on_reachable(proc, lost: dict[int, str], action):
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


def start_servers(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> None:
    for f in flows:
        ep = tb.endpoints[f.receiver]
        procs.servers[f.index] = ep.host.start(workload.server_argv(f, ep.address(workload.ip_version)))
    wait_listening(tb, flows, procs.servers, getattr(workload, "listen_proto", "tcp"), workload.ip_version)


def start_clients(tb: Testbed, workload, flows: list[Flow], procs: FlowProcs) -> FlowStarts:
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
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            for future in [pool.submit(start, g) for g in groups]:
                future.result()
    return starts


def stop_flows(workload, flows: list[Flow], procs: FlowProcs) -> None:
    for i, c in procs.clients.items():
        c.wait(timeout=workload.total_s() + 30)
        part = flow_part(workload, flows[i])
        if part.server_exits:
            procs.servers[i].wait(timeout=10)
        else:
            procs.servers[i].stop(getattr(part, "server_stop_signal", signal.SIGINT))
