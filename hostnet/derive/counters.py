"""A run's counter rows from its raw files: snmp, netstat, link, ethtool and softnet deltas over
the window, interrupts, cache events where perf stat has them, receive-to-copy latency (bpftrace
or the patched kernel's rx_prof), and other processes' CPU (foreign load)."""
from __future__ import annotations

from ..analysis import metrics
from ..parsers.bpftrace import parse_bpftrace_maps, subtract_maps
from ..parsers.counters import (
    deltas, interrupt_deltas, parse_ethtool_stats, parse_interrupts, parse_ip_link_stats, parse_perf_stat,
    parse_snmp, parse_softnet_stat, softnet_deltas)
from ..parsers.procpids import parse_snapshot
from ..parsers.rx_prof import parse_rx_prof
from ..store import Rows


# The counters worth a row in the tidy table (everything stays in raw/).
COUNTERS = {
    "snmp": ("Ip.InReceives", "Tcp.RetransSegs", "Tcp.InSegs", "Tcp.OutSegs", "Tcp.InErrs", "Udp.InDatagrams",
             "Udp.InErrors", "Udp.RcvbufErrors", "Udp.OutDatagrams", "Udp.SndbufErrors"),
    "netstat": ("TcpExt.TCPBacklogDrop", "TcpExt.TCPRcvQDrop", "TcpExt.TCPOFOQueue", "TcpExt.TCPSACKReorder",
                "TcpExt.TCPLossProbes", "TcpExt.TCPRcvCoalesce"),
    "link": ("rx.packets", "rx.dropped", "tx.dropped", "rx.errors", "tx.errors"),
}


def receive_latency_rows(out: Rows, raw: dict) -> None:
    """Receive -> copy latency and post-GRO sizes: from bpftrace, or from a kernel with kernel_patch/."""
    for machine, files in raw.items():
        if "bpftrace_latency.txt" in files:
            final = parse_bpftrace_maps(files["bpftrace_latency.txt"], f"{machine}.bpftrace_latency.txt")
            # runs recorded before the opening dump was kept have none: the final dump is the window
            opened = (parse_bpftrace_maps(files["bpftrace_latency_open.txt"], f"{machine}.bpftrace_latency_open.txt")
                      if "bpftrace_latency_open.txt" in files else {})
            latency_rows(out.add, subtract_maps(final, opened))
        if "rx_prof.txt" in files:
            window = subtract_maps(parse_rx_prof(files["rx_prof.txt"], f"{machine}.rx_prof.txt"),
                                   parse_rx_prof(files["rx_prof_open.txt"], f"{machine}.rx_prof_open.txt"))
            for metric, value, category in rx_prof_rows(window):
                out.add("receiver", metric, value, category)


def latency_rows(add, maps: dict) -> None:
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


def note_foreign_load(out: Rows, m: dict, raw: dict, our_pids) -> None:
    """Other processes' CPU over the window, per machine (LoadProbe's files): a row each, and the
    manifest's load notes and contaminated flag (analysis.flags reads it)."""
    notes = {}
    for machine, files in raw.items():
        load = metrics.foreign_load(parse_snapshot(files["pids_before.txt"], f"{machine}.pids_before.txt"),
                                     parse_snapshot(files["pids_after.txt"], f"{machine}.pids_after.txt"),
                                     our_pids, int(files["clk_tck.txt"].strip() or 100), float(m["window"]["seconds"]),
                                     f"{machine}.pids")
        notes[machine] = load
        out.add("machine:" + machine, "foreign_cpu_pct", load["foreign_cpu_pct"])
    out.notes["load"] = notes
    out.notes["contaminated"] = any(v["contaminated"] for v in notes.values())


# /proc/interrupts rows worth a tidy row: the IPIs (RES, CAL, TLB) and the local timer
INTERRUPT_ROWS = ("RES", "CAL", "TLB", "LOC")


def interrupt_rows(out: Rows, side: str, machines: dict[str, set[int]], raw: dict) -> None:
    """Interrupts taken on the side's CPUs over the window (runs recorded before the probe have none)."""
    totals: dict[str, int] = {}  # a row the kernel does not have (TLB is x86's) is left out, not zero
    for machine, cpu_set in machines.items():
        if "interrupts_before.txt" not in raw[machine]:
            return
        before = parse_interrupts(raw[machine]["interrupts_before.txt"], f"{machine}.interrupts_before.txt")
        after = parse_interrupts(raw[machine]["interrupts_after.txt"], f"{machine}.interrupts_after.txt")
        delta = interrupt_deltas(before, after, INTERRUPT_ROWS, f"{machine}.interrupts")
        for name, per_cpu in delta.items():
            totals[name] = totals.get(name, 0) + sum(per_cpu.get(c, 0) for c in cpu_set)
    for name, v in totals.items():
        out.add(side, "interrupts_delta_count", v, name)


def counter_rows(out: Rows, m: dict, cpus: dict, raw: dict, ep_raw: dict) -> None:
    """Counter deltas over the window: snmp, netstat, link and ethtool drops per endpoint, softnet
    per side, and cache events where perf stat has them (recorded unsupported, never zero)."""
    for role, f in ep_raw.items():
        parsed = {
            "snmp": deltas(parse_snmp(f["before.snmp.txt"]), parse_snmp(f["after.snmp.txt"]), f"{role}.snmp"),
            "netstat": deltas(parse_snmp(f["before.netstat.txt"], "netstat"),
                              parse_snmp(f["after.netstat.txt"], "netstat"), f"{role}.netstat"),
            "link": deltas(parse_ip_link_stats(f["before.link.json"]), parse_ip_link_stats(f["after.link.json"]),
                           f"{role}.link"),
        }
        for source, names in COUNTERS.items():
            for name in names:
                if name in parsed[source]:
                    out.add(role, "counter_delta_count", parsed[source][name], f"{source}:{name}")
        ip_packets = parsed["snmp"].get("Ip.InReceives", 0)
        if role.startswith("receiver") and ip_packets > 0 and "rx.packets" in parsed["link"]:
            # frames the device took per packet IP saw: what GRO merged (1.0: nothing)
            out.add(role, "gro_merge_ratio", parsed["link"]["rx.packets"] / ip_packets)
        # drop and error counters only: driver statistics may include gauges, which can go down
        eth_before, eth_after = ({k: v for k, v in parse_ethtool_stats(f[n], f"{role}.{n}").items()
                                  if "drop" in k or "err" in k} for n in ("before.ethtool_S.txt",
                                                                          "after.ethtool_S.txt"))
        eth = deltas(eth_before, eth_after, f"{role}.ethtool_S.txt")
        for name, value in eth.items():
            if "drop" in name or "err" in name:
                out.add(role, "counter_delta_count", value, f"ethtool:{name}")
    cache_support = {}
    for side, machines in cpus.items():
        totals: dict[str, int] = {}
        cache: dict[str, float | None] = {}
        for machine, cpu_set in machines.items():
            delta = softnet_deltas(parse_softnet_stat(raw[machine]["softnet_before.txt"]),
                                   parse_softnet_stat(raw[machine]["softnet_after.txt"]), f"{machine}.softnet_stat")
            for cpu in cpu_set:
                for k, v in delta.get(cpu, {}).items():
                    totals[k] = totals.get(k, 0) + v
            cache_text = raw[machine].get("perf_stat_cache.txt")  # absent: no cache probe on this run
            for event, per_cpu in (parse_perf_stat(cache_text, f"{machine}.perf_stat_cache.txt").items()
                                   if cache_text is not None else ()):
                vals = [per_cpu.get(c) for c in cpu_set]
                cache[event] = None if any(v is None for v in vals) else sum(vals)
        for k, v in totals.items():
            out.add(side, "counter_delta_count", v, f"softnet:{k}")
        interrupt_rows(out, side, machines, raw)
        for event, v in cache.items():
            cache_support[event] = v is not None
            if v is not None:
                out.add(side, "cache_events_count", v, event)
    out.notes["cache_counters"] = ("supported" if cache_support and all(cache_support.values())
                           else "unsupported (perf stat: <not supported>; no hardware PMU)")


def rx_prof_rows(maps: dict) -> list[tuple[str, float, str]]:
    """(metric, value, category) rows from a window's rx_prof difference, named like the bpftrace
    rows. Quantiles are log2 bucket lower edges, the mean uses bucket midpoints."""
    lat, size = maps["rx_copy_latency_ns"], maps["post_gro_skb_len"]
    out = [("rx_to_copy_samples_count", lat.total, "")]
    if lat.total:
        out.append(("rx_to_copy_latency_avg_usec", lat.mean() / 1000, ""))
        for q in (0.5, 0.99):
            out.append((f"rx_to_copy_latency_p{int(q * 100)}_usec", lat.quantile(q) / 1000, ""))
    # ns buckets (the kernel's resolution), unlike bpftrace's us buckets: a metric of their own
    for hist, metric in ((lat, "rx_to_copy_latency_ns_hist_count"), (size, "post_gro_skb_bytes_hist_count")):
        for lo, hi, n in hist.buckets:
            out.append((metric, n, f"{lo}-{hi}"))
    if size.total:
        out.append(("post_gro_skb_bytes_mean", size.mean(), ""))
    return out
