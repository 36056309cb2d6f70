"""The data dictionary: every metric a run's tidy.csv holds, its unit and what it measures.

A tidy row is (run_id, campaign, experiment, config, repetition, side, metric, category, flow,
value). `side` says whose number it is (SIDES); `category` qualifies some metrics (a CPU category of
a breakdown, a counter's name, a histogram bucket); `flow` numbers the flow of per-flow rows. The
unit is the metric name's suffix (UNITS), so a number never travels without it. docs/api.md's table
is generated from METRICS (`python -m hostnet.dictionary`), and a test keeps every metric of the
committed campaigns in it.
"""
from __future__ import annotations

# The paper's traffic patterns (Fig. 2): how a workload lays out its flows, and the `experiment`
# label of a pattern's campaign (measure/declarations.py names the workloads of each).
PATTERNS = ("single", "one-to-one", "incast", "outcast", "all-to-all")

# the two sides a run's CPU and breakdowns are split into (the first two of SIDES)
ENDPOINT_SIDES = ("sender", "receiver")

SIDES = {
    "sender": "the sending side's CPUs (an endpoint's, or on servers the sending host's)",
    "receiver": "the receiving side's CPUs",
    "both": "the run as a whole (throughput, the busier side's tpc, loss over both ends)",
    "flow": "one flow (the `flow` column numbers it)",
    "machine": "the machine the micro-benchmarks ran on",
    "machine:NAME": "one machine of the testbed by name (UDP loss runs: each machine's CPUs)",
}

# suffix -> unit; the longest suffix that ends a metric's name gives its unit
UNITS = {
    "_gbps": "Gbit/s", "_pct": "%", "_count": "count", "_usec": "µs", "_ns": "ns", "_s": "s", "_mhz": "MHz",
    "_ratio": "ratio", "_per_s": "1/s", "_per_pkt": "per packet", "_bytes_mean": "bytes", "_pps": "packets/s",
}

# metric -> what it measures ("per flow" metrics: flow_<metric>, below)
METRICS = {
    "throughput_gbps": "goodput of the run's flows over the measurement window (iperf3 or hostnet's clients)",
    "tpc_gbps": "throughput per core: throughput over the cores in use (side both: of the busier side, "
                "the paper's tpc; sender/receiver: of that side)",
    "tpc_nic_gbps": "tpc with the CPU a real NIC would take off the host (the ledger's NIC-equivalent CPU)",
    "cpu_util_pct": "CPU utilisation of the side's CPUs over the window, % of one core, summed (/proc/stat)",
    "cpu_util_nic_pct": "cpu_util_pct without the work a NIC would do (the testbed ledger, docs/measurement.md)",
    "cpu_user_pct": "user time of the side's CPUs, % of one core",
    "cpu_system_pct": "system time of the side's CPUs, % of one core",
    "cpu_irq_pct": "hard-interrupt time of the side's CPUs, % of one core",
    "cpu_softirq_pct": "softirq time of the side's (or machine's) CPUs, % of one core",
    "cpu_steal_pct": "time the hypervisor took from the side's CPUs, % of one core (not the stack's)",
    "cpu_busy_pct": "busy time of a machine's CPUs in a UDP loss run, % of one core (category: its role)",
    "cores_count": "cores the side used (CPUs busy over the window)",
    "breakdown_pct": "share of the side's busy perf samples in a CPU category, by leaf symbol (category)",
    "breakdown_attributed_pct": "share of busy samples per category, samples where interrupts come back on "
                                "attributed through the call chain (the irqs-off-callchain rule)",
    "breakdown_nic_pct": "breakdown_attributed_pct without the samples a NIC would take (ledger)",
    "ledger_pct": "share of the raw busy samples per ledger item (category: the item; docs/measurement.md)",
    "perf_busy_samples_count": "perf samples on the side's CPUs outside idle",
    "perf_foreign_samples_count": "perf samples of processes that are not the run's (foreign load)",
    "perf_reattributed_samples_count": "samples the call-chain rule moved off their leaf symbol",
    "perf_receive_path_samples_count": "samples in the receive path (NAPI poll, GRO, IP and TCP receive)",
    "perf_vm_exit_samples_count": "samples billed to code where the hypervisor returns control (VM exits)",
    "perf_sampling_coverage_ratio": "perf samples over busy time x sampling rate (1: every tick sampled)",
    "interrupts_delta_count": "interrupts on the side's CPUs over the window (category: /proc/interrupts row)",
    "counter_delta_count": "a kernel counter's change over the window (category: source:name, e.g. "
                           "snmp:Tcp.InSegs)",
    "retransmits_count": "TCP segments retransmitted (iperf3's count)",
    "gro_merge_ratio": "packets the link received per IP packet after GRO (segments merged per skb)",
    "post_gro_skb_bytes_mean": "mean size of the skbs GRO delivered (eBPF probe)",
    "post_gro_skb_bytes_hist_count": "skbs GRO delivered per size bucket (category: the bucket)",
    "rx_to_copy_latency_avg_usec": "mean time from the driver's receive to the copy to user space (eBPF)",
    "rx_to_copy_latency_p50_usec": "median of that latency",
    "rx_to_copy_latency_p99_usec": "99th percentile of that latency",
    "rx_to_copy_latency_hist_count": "skbs per latency bucket (category: the bucket)",
    "rx_to_copy_samples_count": "skbs the latency probe sampled",
    "flow_count": "flows the run started",
    "transactions_per_s": "RPCs completed per second (short-flow runs)",
    "sender_app_bytes_count": "bytes the sending application handed to the kernel (zcflow)",
    "sender_app_cpu_s": "CPU seconds the sending application's thread used (getrusage)",
    "receiver_app_bytes_count": "bytes the receiving application read or mapped (zcflow)",
    "receiver_app_cpu_s": "CPU seconds the receiving application's thread used (getrusage)",
    "receiver_mapped_bytes_count": "bytes TCP_ZEROCOPY_RECEIVE mapped instead of copying",
    "zerocopy_sends_count": "MSG_ZEROCOPY sends",
    "zerocopy_completed_count": "MSG_ZEROCOPY sends the kernel completed",
    "zerocopy_copied_count": "MSG_ZEROCOPY sends the kernel copied after all (SO_EE_CODE_ZEROCOPY_COPIED)",
    "target_gbps": "the UDP rate asked of the sender",
    "offered_gbps": "the UDP rate the sender achieved (datagrams sent over the window)",
    "delivered_gbps": "the UDP rate the receiving application got",
    "sent_gbps": "the rate of datagrams the sending host put on the wire",
    "sent_datagrams_count": "UDP datagrams sent (the sender's counters)",
    "offered_datagrams_count": "UDP datagrams that reached the receiving host",
    "delivered_datagrams_count": "UDP datagrams the receiving application read",
    "lost_datagrams_count": "UDP datagrams lost at the receiving host (category: where)",
    "lost_pct": "share of the datagrams that arrived lost at one place (category: where)",
    "loss_pct": "share of the datagrams sent that the receiving application never read",
    "unaccounted_datagrams_count": "datagrams sent that no counter saw arrive or drop",
    "udp_rcvbuf_errors_count": "datagrams dropped for a full socket receive buffer (Udp.RcvbufErrors)",
    "udp_send_errors_count": "datagrams the sending host failed to send (Udp.SndbufErrors and the like)",
    "time_squeeze_count": "times NAPI ran out of budget or time with work left (softnet_stat)",
    "iperf_loss_pct": "iperf's own loss figure (warm-up included)",
    "iperf_sent_datagrams_count": "datagrams iperf says it sent",
    "iperf_sent_gbps": "the rate iperf says it sent at",
    "udp_pps": "packets per second of the UDP batching benchmark",
    "udp_calls_per_pkt": "system calls per packet (sendmmsg/recvmmsg batching)",
    "udp_cpu_per_pkt_ns": "CPU time per packet",
    "udp_wall_per_pkt_ns": "wall time per packet",
    "cost_ns": "cost of one operation of a micro-benchmark (category: the operation)",
    "cpu_clock_mhz": "the CPU clock /proc/cpuinfo reports",
    "memcpy_gbps": "memcpy bandwidth (category: the copy size)",
    "foreign_cpu_pct": "CPU used by processes that are not the run's, % of one core (foreign load)",
    "flow_throughput_cv_pct": "per flow: coefficient of variation of its per-second throughput (steadiness)",
    "flow_latency_mean_usec": "per flow: mean RPC latency",
    "flow_latency_p50_usec": "per flow: median RPC latency",
    "flow_latency_p90_usec": "per flow: 90th percentile RPC latency",
    "flow_latency_p99_usec": "per flow: 99th percentile RPC latency",
}

# flow_<metric>: the metric measured for one flow (side "flow")
PER_FLOW = ("throughput_gbps", "retransmits_count", "transactions_per_s", "iperf_loss_pct", "iperf_sent_gbps",
            "iperf_sent_datagrams_count", "sender_app_bytes_count", "sender_app_cpu_s", "receiver_app_bytes_count",
            "receiver_app_cpu_s", "receiver_mapped_bytes_count", "zerocopy_sends_count", "zerocopy_completed_count",
            "zerocopy_copied_count")


def unit(metric: str) -> str:
    """A metric's unit, from the longest suffix of its name that UNITS knows ("" when none)."""
    suffix = max((s for s in UNITS if metric.endswith(s)), key=len, default="")
    return UNITS.get(suffix, "")


def meaning(metric: str) -> str | None:
    """What a metric measures; None for a metric the dictionary does not know."""
    if metric in METRICS:
        return METRICS[metric]
    base = metric.removeprefix("flow_")
    if metric.startswith("flow_") and base in PER_FLOW:
        return f"per flow: {meaning(base)}"
    return None


def entries() -> list[dict]:
    """Every metric: name, unit, meaning; in the order of METRICS, then the per-flow ones."""
    names = [*METRICS, *(f"flow_{m}" for m in PER_FLOW if f"flow_{m}" not in METRICS)]
    return [{"metric": m, "unit": unit(m), "meaning": meaning(m)} for m in names]


def markdown() -> str:
    rows = "\n".join(f"| `{e['metric']}` | {e['unit'] or '–'} | {e['meaning']} |" for e in entries())
    sides = "\n".join(f"| `{s}` | {what} |" for s, what in SIDES.items())
    return (f"| side | whose number |\n|---|---|\n{sides}\n\n"
            f"| metric | unit | what it measures |\n|---|---|---|\n{rows}\n")


if __name__ == "__main__":
    print(markdown(), end="")
