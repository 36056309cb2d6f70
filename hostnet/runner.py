"""run_point: one measurement point (config x workload x repetition) -> one run directory."""
from __future__ import annotations

import os
import platform
import time
import traceback
import uuid
from pathlib import Path

import pandas as pd

from . import analysis, config as stackconfig, taxonomy
from .hosts import HostError
from .parsers import ParseError
from .parsers.iperf3 import parse_iperf3
from .parsers.perf_report import parse_perf_report
from .parsers.procpids import parse_snapshot
from .parsers.procstat import parse_proc_stat
from .probes import LoadProbe, PerfProbe, ProcStatProbe
from .store import RunDir
from .testbed import Testbed
from .workloads import LongFlow

REQUIRED_TOOLS = {"roles": ["iperf3"], "machines": ["perf"]}
# Time between stopping the probes and the end of iperf3's run, and after its warm-up,
# so the window lies inside the steady state of the flow.
EDGE_S = 0.25


class PreflightError(RuntimeError):
    pass


def preflight(tb: Testbed) -> dict:
    """Refuse before any host is touched: root, tools present. Returns tool versions."""
    if tb.kind == "embedded" and os.geteuid() != 0:
        raise PreflightError("a live run on the embedded testbed needs root; run as root (sudo)")
    versions = {}
    for ep in tb.endpoints.values():
        for tool in REQUIRED_TOOLS["roles"]:
            if not ep.host.which(tool):
                raise PreflightError(f"{tool} is missing on {ep.host.name}; run `make install`")
    for name, host in tb.machines.items():
        for tool in REQUIRED_TOOLS["machines"]:
            if not host.which(tool):
                raise PreflightError(f"{tool} is missing on {name}; run `make install` (Debian: linux-perf)")
        versions[name] = {
            "perf": host.run(["perf", "--version"], check=False).stdout.strip(),
            "iperf3": host.run(["iperf3", "--version"], check=False).stdout.splitlines()[0:1],
            "kernel": host.run(["uname", "-r"]).stdout.strip(),
        }
    return versions


def run_point(tb: Testbed, cfg: stackconfig.StackConfig, workload: LongFlow, *, runs_dir,
              campaign: str, repetition: int = 0, experiment: str = "single-flow",
              perf_freq_hz: int = PerfProbe().freq_hz, versions: dict | None = None) -> Path:
    """Apply cfg whole, run the workload, probe one shared window, write one run directory.

    Any failure still leaves a run directory, with status "failed" and the tool's error.
    """
    versions = versions or preflight(tb)
    run_id = f"{cfg.name.replace('+', '_')}-r{repetition}-{uuid.uuid4().hex[:6]}"
    rd = RunDir(runs_dir, campaign, run_id)
    rd.manifest.update(experiment=experiment, config=cfg.describe(), config_label=cfg.label(tb.kind),
                       repetition=repetition, workload=workload.describe(), testbed=tb.describe(),
                       versions=versions, controller=platform.node(),
                       probes={"perf": {"event": "cpu-clock", "freq_hz": perf_freq_hz,
                                        "mode": "timer (no hardware PMU assumed)"}})
    procs = []
    try:
        rd.manifest["applied"] = stackconfig.apply(tb, cfg)
        s, r = tb.sender, tb.receiver
        server = r.host.start(workload.server_argv(r.ip, r.cpus[0]))
        procs.append(server)
        time.sleep(0.3)
        if server.poll() is not None:
            raise HostError(f"iperf3 server exited at start: {server.stderr().strip() or server.stdout().strip()}")
        client = s.host.start(workload.client_argv(r.ip, s.cpus[0]))
        procs.append(client)
        t0 = time.time()
        probes = {m: (ProcStatProbe(), LoadProbe(), PerfProbe(perf_freq_hz)) for m in tb.machines}
        time.sleep(workload.warmup_s + EDGE_S)
        win_start = time.time()
        for m, ps in probes.items():
            for p in ps:
                p.start(tb.machines[m])
        perf_started = time.time()
        time.sleep(max(0.0, t0 + workload.total_s() - EDGE_S - time.time()))
        raw: dict[str, dict[str, str]] = {}
        win_end = time.time()
        for m, ps in probes.items():
            raw[m] = {}
            for p in ps:
                raw[m].update(p.stop(tb.machines[m]))
        client.wait(timeout=workload.total_s() + 30)
        server.wait(timeout=10)
        rd.manifest["window"] = {"start": win_start, "end": win_end, "seconds": win_end - win_start,
                                 "perf_started": perf_started, "client_started": t0}
        rd.write_raw("iperf3_client.json", client.stdout())
        rd.write_raw("iperf3_client.stderr.txt", client.stderr())
        rd.write_raw("iperf3_server.txt", server.stdout() + server.stderr())
        for m, files in raw.items():
            for name, text in files.items():
                rd.write_raw(f"{m}.{name}", text)
        our_pids = [p.pid for p in procs] + [os.getpid()] + [
            pid for ps in probes.values() for p in ps for pid in getattr(p, "pids", [])]
        tidy = _analyse(tb, cfg, rd, raw, our_pids, kernel=next(iter(versions.values()))["kernel"])
        return rd.finish("ok", tidy)
    except BaseException as exc:  # failed points still leave a readable run directory
        rd.manifest["traceback"] = traceback.format_exc()
        for i, p in enumerate(procs):
            p.stop()
            rd.write_raw(f"proc{i}.output.txt", " ".join(p.argv) + "\n" + p.stdout() + p.stderr())
        path = rd.finish("failed", error=f"{type(exc).__name__}: {exc}")
        if isinstance(exc, (HostError, ParseError, stackconfig.ConfigError)):
            raise RunFailed(f"{exc} (run directory: {path})") from exc
        raise
    finally:
        for p in procs:
            p.close()


class RunFailed(RuntimeError):
    pass


def _analyse(tb: Testbed, cfg, rd: RunDir, raw: dict, our_pids, kernel: str) -> pd.DataFrame:
    ip = parse_iperf3((rd.path / "raw" / "iperf3_client.json").read_text())
    gbps = ip.received_bps / 1e9
    tax = taxonomy.load(taxonomy.series_for(kernel))
    rows = []
    m = rd.manifest

    def add(side, metric, value, category=""):
        rows.append({"run_id": m["run_id"], "campaign": m["campaign"], "experiment": m["experiment"],
                     "config": cfg.name, "repetition": m["repetition"], "side": side, "metric": metric,
                     "category": category, "value": value})

    add("both", "throughput_gbps", gbps)
    add("sender", "retransmits_count", ip.retransmits)
    add("sender", "tool_cpu_pct", ip.sender_cpu_pct)
    add("receiver", "tool_cpu_pct", ip.receiver_cpu_pct)
    busy = {}
    load_notes = {}
    for role, ep in tb.endpoints.items():
        files = raw[ep.machine]
        before = parse_proc_stat(files["proc_stat_before.txt"], "proc_stat_before.txt")
        after = parse_proc_stat(files["proc_stat_after.txt"], "proc_stat_after.txt")
        util = analysis.side_utilization(before, after, ep.cpus)
        busy[role] = util["busy_pct"]
        add(role, "cpu_util_pct", util["busy_pct"])
        for f in ("user", "system", "softirq", "irq"):
            add(role, f"cpu_{f}_pct", util[f"{f}_pct"])
        bd = analysis.breakdown(parse_perf_report(files["perf_report.txt"]), ep.cpus, tax, ["iperf3"])
        for cat, pct in bd["pct"].items():
            add(role, "breakdown_pct", pct, cat)
        add(role, "perf_busy_samples_count", bd["busy_samples"])
        add(role, "perf_foreign_samples_count", bd["foreign_samples"])
        m.setdefault("top_symbols", {})[role] = bd["top_symbols"]
    for machine, files in raw.items():
        load = analysis.foreign_load(parse_snapshot(files["pids_before.txt"]),
                                     parse_snapshot(files["pids_after.txt"]), our_pids,
                                     int(files["clk_tck.txt"].strip() or 100), m_window(m))
        load_notes[machine] = load
        add("machine:" + machine, "foreign_cpu_pct", load["foreign_cpu_pct"])
    m["load"] = load_notes
    m["contaminated"] = any(v["contaminated"] for v in load_notes.values())
    side, tpc = analysis.throughput_per_core(gbps, busy)
    m["bottleneck"] = side
    m["taxonomy"] = tax.version
    add("both", "tpc_gbps", tpc)
    return pd.DataFrame(rows)


def m_window(manifest: dict) -> float:
    return float(manifest["window"]["seconds"])
