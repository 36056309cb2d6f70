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

import pandas as pd

from . import analysis, capabilities, config as stackconfig, taxonomy, udp_loss
from .hosts import HostError
from .parsers import ParseError
from .parsers.perf_report import parse_perf_report
from .parsers.procpids import parse_snapshot
from .parsers.procstat import parse_proc_stat, proc_stat_interval
from .attribution import breakdown_from_stacks
from .parsers.bpftrace import parse_bpftrace_maps, subtract_maps
from .parsers.perf_script import parse_folded
from .parsers.rx_prof import parse_rx_prof
from .probes import LoadProbe, PerfProbe, ProcStatProbe
from .parsers.counters import (deltas, parse_ethtool_stats, parse_ip_link_stats, parse_perf_stat,
                               parse_snmp, parse_softnet_stat)
from .probes.counters import CacheProbe, EndpointCounterProbe, SoftnetProbe
from .probes.latency import LatencyProbe
from .probes.rx_prof import RxProfProbe, latency_probe_for, rows as rx_prof_rows
from .store import RunDir
from .testbed import Testbed
from .workloads import Flow, LongFlows, MixedFlows, RpcFlows, UdpRate, cores_note, flow_class, flow_part, workload_comms

REQUIRED_TOOLS = {"roles": [], "machines": ["perf"]}  # plus each workload's own tool
# Time between stopping the probes and the end of iperf3's run, and after its warm-up,
# so the window lies inside the steady state of the flows.
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


def _wait_listening(tb: Testbed, flows: list[Flow], servers, proto: str = "tcp") -> None:
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
    run_id = run_id or f"{cfg.name.replace('+', '_')}-n{len(flows)}-r{repetition}-{uuid.uuid4().hex[:6]}"
    rd = RunDir(runs_dir, campaign, run_id)
    rd.manifest["point"] = point or {"config": cfg.name}
    rd.manifest.update(experiment=experiment, config=cfg.describe(), config_label=cfg.label(tb.kind),
                       repetition=repetition, workload=workload.describe(), testbed=tb.describe(),
                       flows=[f.__dict__ for f in flows], cores=cores_note(flows),
                       side_cpus={s: {m: sorted(c) for m, c in d.items()} for s, d in cpus.items()},
                       versions=versions, controller=platform.node(),
                       probes={"perf": {"event": "cpu-clock", "freq_hz": perf_freq_hz,
                                        "mode": "timer (no hardware PMU assumed)"} if profile else "off"})
    servers: dict[int, object] = {}
    clients: dict[int, object] = {}
    early: dict[str, LatencyProbe | RxProfProbe] = {}
    try:
        rd.manifest["applied"] = stackconfig.apply(tb, cfg)
        if isinstance(workload, UdpRate):  # receive CPU (RPS) and socket buffer ceiling for this point
            rd.manifest["placement"] = udp_loss.placement(tb, workload)
            rd.manifest["applied"].update(stackconfig.apply_settings(tb, udp_loss.settings(tb, workload)))
        for f in flows:
            ep = tb.endpoints[f.receiver]
            servers[f.index] = ep.host.start(workload.server_argv(f, ep.ip))
        _wait_listening(tb, flows, servers, getattr(workload, "listen_proto", "tcp"))
        if latency_sample_every:  # bpftrace's start-up must not fall inside the window
            for machine, ifaces in _receiver_ifaces(tb, flows).items():
                ports = [f.port for f in flows if tb.endpoints[f.receiver].machine == machine]
                lat, source, why = latency_probe_for(tb.machines[machine], ports, ifaces, workload.client_comm,
                                                     tb.journal, latency_sample_every)
                rd.manifest["probes"].setdefault("latency", {})[machine] = {"source": source, "why": why}
                lat.prepare(tb.machines[machine])
                early[machine] = lat
        t0 = time.time()
        for f in flows:
            clients[f.index] = tb.endpoints[f.sender].host.start(workload.client_argv(f, tb.endpoints[f.receiver].ip))
        # Started in this order and stopped in reverse: the slow starters (perf, bpftrace) are
        # running before the /proc snapshots open the CPU window, which closes first.
        probes = {m: [CacheProbe(), PerfProbe(perf_freq_hz)] if profile else [] for m in tb.machines}
        used = list(dict.fromkeys([f.sender for f in flows] + [f.receiver for f in flows]))
        ep_probes = {role: EndpointCounterProbe(tb.endpoints[role].iface) for role in used}
        for machine, lat in early.items():  # its SIGUSR1 dump opens its window
            probes[machine].append(lat)
        for m in tb.machines:
            probes[m] += [*(extra_probes() if extra_probes else []), SoftnetProbe(), LoadProbe(), ProcStatProbe()]
        time.sleep(max(0.0, t0 + workload.warmup_s + EDGE_S - time.time()))
        for m, ps in probes.items():
            for p in ps:
                p.start(tb.machines[m])
        for role, p in ep_probes.items():
            p.start(tb.endpoints[role].host)
        win_start = time.time()
        time.sleep(max(0.0, t0 + workload.total_s() - EDGE_S - time.time()))
        win_end = time.time()
        ep_raw = {role: p.stop(tb.endpoints[role].host) for role, p in ep_probes.items()}
        raw: dict[str, dict[str, str]] = {}
        for m, ps in probes.items():
            raw[m] = {}
            for p in reversed(ps):
                raw[m].update(p.stop(tb.machines[m]))
        for i, c in clients.items():
            c.wait(timeout=workload.total_s() + 30)
            if flow_part(workload, flows[i]).server_exits:
                servers[i].wait(timeout=10)
            else:
                servers[i].stop(getattr(flow_part(workload, flows[i]), "server_stop_signal", signal.SIGINT))
        rd.manifest["window"] = {"start": win_start, "end": win_end, "seconds": win_end - win_start,
                                 "clients_started": t0}
        try:  # a short window is flagged, and analysis leaves the run out, rather than failing the point
            check_window(win_end - win_start, workload.duration_s, len(flows))
        except WindowTooShort as exc:
            rd.manifest["short_window"] = str(exc)
        for f in flows:
            tool = flow_part(workload, f).tool
            rd.write_raw(_client_file(workload, f), clients[f.index].stdout() + (
                clients[f.index].stderr() if tool != "iperf3" else ""))
            rd.write_raw(f"{tool}_client_{f.index}.stderr.txt", clients[f.index].stderr())
            rd.write_raw(f"{tool}_server_{f.index}.txt", servers[f.index].stdout() + servers[f.index].stderr())
        for m, files in raw.items():
            for name, text in files.items():
                rd.write_raw(f"{m}.{name}", text)
        for role, files in ep_raw.items():
            for name, text in files.items():
                rd.write_raw(f"{role}.{name}", text)
        our_pids = [os.getpid()] + [p.pid for p in (*servers.values(), *clients.values())] + [
            pid for ps in probes.values() for p in ps for pid in getattr(p, "pids", [])]
        kernel = next(iter(versions.values()))["kernel"]
        tidy = _analyse(cfg, workload, rd, flows, cpus, raw, our_pids, kernel)
        tidy = pd.concat([tidy, pd.DataFrame(_counter_rows(rd.manifest, cfg, cpus, raw, ep_raw))],
                         ignore_index=True)
        if not profile:
            rd.manifest["cache_counters"] = "not recorded (profile off)"
        if isinstance(workload, UdpRate):
            tidy = pd.concat([tidy, pd.DataFrame(udp_loss.window_rows(rd.manifest, raw, ep_raw))],
                             ignore_index=True)
        return rd.finish("ok", tidy)
    except BaseException as exc:  # failed points still leave a readable run directory
        rd.manifest["traceback"] = traceback.format_exc()
        for name, group in (("server", servers), ("client", clients)):
            for i, p in group.items():
                p.stop()
                rd.write_raw(f"{name}{i}.output.txt", " ".join(p.argv) + "\n" + p.stdout() + p.stderr())
        path = rd.finish("failed", error=f"{type(exc).__name__}: {exc}")
        if isinstance(exc, (HostError, ParseError, stackconfig.ConfigError, WindowTooShort)):
            raise RunFailed(f"{exc} (run directory: {path})") from exc
        raise
    finally:
        for p in (*servers.values(), *clients.values()):
            p.close()
        for lat in early.values():  # stopped already on success; on failure, do not leave it running
            lat.abort()


def _receiver_ifaces(tb: Testbed, flows: list[Flow]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for role in dict.fromkeys(f.receiver for f in flows):
        ep = tb.endpoints[role]
        out[ep.machine].append(ep.iface)
    return out


def _client_file(workload, flow: Flow) -> str:
    part = flow_part(workload, flow)
    return f"{part.tool}_client_{flow.index}.{part.client_suffix}"


def _analyse(cfg, workload, rd: RunDir, flows: list[Flow], cpus: dict, raw: dict, our_pids,
             kernel: str) -> pd.DataFrame:
    tax = taxonomy.load(taxonomy.series_for(kernel))
    rows = []
    m = rd.manifest

    def add(side, metric, value, category="", flow=""):
        rows.append({"run_id": m["run_id"], "campaign": m["campaign"], "experiment": m["experiment"],
                     "config": cfg.name, "repetition": m["repetition"], "side": side, "metric": metric,
                     "category": category, "flow": flow, "value": value})

    sums: dict[str, float] = defaultdict(float)
    for f in flows:
        name = _client_file(workload, f)
        for metric, value in flow_part(workload, f).parse_client((rd.path / "raw" / name).read_text(), name).items():
            add("flow", f"flow_{metric}", value, flow_class(workload, f), flow=str(f.index))
            if not metric.startswith("latency_") and not metric.endswith("_cv_pct"):
                sums[metric] += value
    total = sums["throughput_gbps"]
    for metric, value in sums.items():
        add("sender" if metric == "retransmits_count" else "both", metric, value)
    add("both", "flow_count", len(flows))
    busy: dict[str, float] = {}
    for side, machines in cpus.items():
        util: dict[str, float] = defaultdict(float)
        records = []
        for machine, cpu_set in machines.items():
            files = raw[machine]
            before = parse_proc_stat(files["proc_stat_before.txt"], "proc_stat_before.txt")
            after = parse_proc_stat(files["proc_stat_after.txt"], "proc_stat_after.txt")
            # wall minus idle where the snapshots' times were kept (runs before that: ticks)
            interval, clk = proc_stat_interval(files)
            m.setdefault("cpu_util_method", {})[machine] = "wall-minus-idle" if interval else "busy-ticks"
            for k, v in analysis.side_utilization(before, after, cpu_set, interval, clk).items():
                util[k] += v
            records += [(r, cpu_set) for r in parse_perf_report(files.get("perf_report.txt", ""))]
        busy[side] = util["busy_pct"]
        add(side, "cpu_util_pct", util["busy_pct"])
        add(side, "cores_count", sum(len(c) for c in machines.values()))
        for f in ("user", "system", "softirq", "irq"):
            add(side, f"cpu_{f}_pct", util[f"{f}_pct"])
        if not all("perf_report.txt" in raw[machine] for machine in machines):
            continue  # not profiled: no breakdown
        # perf rows of this side's CPUs on each of its machines
        mine = [r for r, cpu_set in records if r.cpu in cpu_set]
        bd = analysis.breakdown(mine, {r.cpu for r in mine} or {-1}, tax, workload_comms(workload))
        for cat, pct in bd["pct"].items():
            add(side, "breakdown_pct", pct, cat)
        stacks = [(smp, n) for machine, cpu_set in machines.items() if "perf_folded.txt" in raw[machine]
                  for smp, n in parse_folded(raw[machine]["perf_folded.txt"]) if smp.cpu in cpu_set]
        if stacks:  # the IRQs-off attribution (attribution.py), over this side's CPUs on every machine
            att = breakdown_from_stacks(stacks, {smp.cpu for smp, _ in stacks}, tax, workload_comms(workload))
            for cat, pct in att["pct"].items():
                add(side, "breakdown_attributed_pct", pct, cat)
            add(side, "perf_reattributed_samples_count", att["reattributed_samples"])
            m["attribution_rule"] = att["rule"]
            m.setdefault("ipi_category", {})[side] = {"chosen": att["ipi_category"], "senders": att["ipi_senders"]}
        add(side, "perf_busy_samples_count", bd["busy_samples"])
        add(side, "perf_foreign_samples_count", bd["foreign_samples"])
        m.setdefault("top_symbols", {})[side] = bd["top_symbols"]
    for machine, files in raw.items():
        if "bpftrace_latency.txt" in files:
            final = parse_bpftrace_maps(files["bpftrace_latency.txt"], f"{machine}.bpftrace_latency.txt")
            opened = parse_bpftrace_maps(files.get("bpftrace_latency_open.txt", ""), f"{machine}.latency_open")
            _latency_rows(add, subtract_maps(final, opened))
        if "rx_prof.txt" in files:  # a kernel with kernel_patch/ measured it instead of bpftrace
            window = subtract_maps(parse_rx_prof(files["rx_prof.txt"], f"{machine}.rx_prof.txt"),
                                   parse_rx_prof(files["rx_prof_open.txt"], f"{machine}.rx_prof_open.txt"))
            for metric, value, category in rx_prof_rows(window):
                add("receiver", metric, value, category)
    load_notes = {}
    for machine, files in raw.items():
        load = analysis.foreign_load(parse_snapshot(files["pids_before.txt"]),
                                     parse_snapshot(files["pids_after.txt"]), our_pids,
                                     int(files["clk_tck.txt"].strip() or 100), float(m["window"]["seconds"]))
        load_notes[machine] = load
        add("machine:" + machine, "foreign_cpu_pct", load["foreign_cpu_pct"])
    m["load"] = load_notes
    m["contaminated"] = any(v["contaminated"] for v in load_notes.values())
    cv = [r["value"] for r in rows if r["metric"] == "flow_throughput_cv_pct"]
    m["unsteady"] = bool(cv) and max(cv) > analysis.STEADY_CV_LIMIT_PCT
    side, tpc = analysis.throughput_per_core(total, busy)
    m["bottleneck"] = side
    m["taxonomy"] = tax.version
    add("both", "tpc_gbps", tpc)
    return pd.DataFrame(rows)



def _latency_rows(add, maps: dict) -> None:
    """Receive -> copy latency (avg from exact stats, quantiles from 1 us / 100 us histograms)."""
    stats = maps.get("lat_stats")
    if not stats or not stats.get("count"):
        add("receiver", "rx_to_copy_samples_count", 0)
        return
    add("receiver", "rx_to_copy_samples_count", stats["count"])
    add("receiver", "rx_to_copy_latency_avg_usec", stats["average"] / 1000)
    fine, coarse = maps.get("lat_fine_us"), maps.get("lat_coarse_us")
    for q in (0.5, 0.99):
        v = fine.quantile(q) if fine else None
        if v is None or v >= 1000:  # past the fine histogram's range
            v = coarse.quantile(q) if coarse else None
        if v is not None:
            add("receiver", f"rx_to_copy_latency_p{int(q * 100)}_usec", v)
    for name, metric in (("lat_us", "rx_to_copy_latency_hist_count"), ("skb_len", "post_gro_skb_bytes_hist_count")):
        if name in maps:
            for lo, hi, n in maps[name].buckets:
                add("receiver", metric, n, f"{lo}-{'' if hi is None else hi}")
    if "skb_len" in maps and maps["skb_len"].total:
        add("receiver", "post_gro_skb_bytes_mean", maps["skb_len"].mean())


# The counters worth a row in the tidy table (everything stays in raw/).
COUNTERS = {
    "snmp": ("Tcp.RetransSegs", "Tcp.InSegs", "Tcp.OutSegs", "Tcp.InErrs", "Udp.InDatagrams", "Udp.InErrors",
             "Udp.RcvbufErrors", "Udp.OutDatagrams", "Udp.SndbufErrors"),
    "netstat": ("TcpExt.TCPBacklogDrop", "TcpExt.TCPRcvQDrop", "TcpExt.TCPOFOQueue", "TcpExt.TCPSACKReorder",
                "TcpExt.TCPLossProbes", "TcpExt.TCPRcvCoalesce"),
    "link": ("rx.dropped", "tx.dropped", "rx.errors", "tx.errors"),
}


def _counter_rows(m: dict, cfg, cpus: dict, raw: dict, ep_raw: dict) -> list[dict]:
    rows = []

    def add(side, metric, value, category=""):
        rows.append({"run_id": m["run_id"], "campaign": m["campaign"], "experiment": m["experiment"],
                     "config": cfg.name, "repetition": m["repetition"], "side": side, "metric": metric,
                     "category": category, "flow": "", "value": value})

    for role, f in ep_raw.items():
        parsed = {
            "snmp": deltas(parse_snmp(f["before.snmp.txt"]), parse_snmp(f["after.snmp.txt"])),
            "netstat": deltas(parse_snmp(f["before.netstat.txt"], "netstat"),
                              parse_snmp(f["after.netstat.txt"], "netstat")),
            "link": deltas(parse_ip_link_stats(f["before.link.json"]), parse_ip_link_stats(f["after.link.json"])),
        }
        for source, names in COUNTERS.items():
            for name in names:
                if name in parsed[source]:
                    add(role, "counter_delta_count", parsed[source][name], f"{source}:{name}")
        eth = deltas(parse_ethtool_stats(f["before.ethtool_S.txt"]), parse_ethtool_stats(f["after.ethtool_S.txt"]))
        for name, value in eth.items():
            if "drop" in name or "err" in name:
                add(role, "counter_delta_count", value, f"ethtool:{name}")
    cache_support = {}
    for side, machines in cpus.items():
        totals: dict[str, int] = {}
        cache: dict[str, float | None] = {}
        for machine, cpu_set in machines.items():
            before = parse_softnet_stat(raw[machine]["softnet_before.txt"])
            after = parse_softnet_stat(raw[machine]["softnet_after.txt"])
            for cpu in cpu_set:
                for k in after.get(cpu, {}):
                    totals[k] = totals.get(k, 0) + after[cpu][k] - before.get(cpu, {}).get(k, 0)
            for event, per_cpu in parse_perf_stat(raw[machine].get("perf_stat_cache.txt", "")).items():
                vals = [per_cpu.get(c) for c in cpu_set]
                cache[event] = None if any(v is None for v in vals) else sum(vals)
        for k, v in totals.items():
            add(side, "counter_delta_count", v, f"softnet:{k}")
        for event, v in cache.items():
            cache_support[event] = v is not None
            if v is not None:  # an unsupported event is recorded as such, never as a zero
                add(side, "cache_events_count", v, event)
    m["cache_counters"] = ("supported" if cache_support and all(cache_support.values())
                           else "unsupported (perf stat: <not supported>; no hardware PMU)")
    return rows
