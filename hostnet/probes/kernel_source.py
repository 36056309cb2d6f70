"""Which source measures receive->copy latency and post-GRO skb sizes on a host.

A kernel built with kernel_patch/ (rx_prof) exports both in /proc/net/rx_prof; any other kernel
is measured with bpftrace on tracepoints (probes/latency.py). Detection only reads the host.
"""
from __future__ import annotations

from ..hosts import Host, HostError
from ..parsers import ParseError
from ..parsers.rx_prof import parse_rx_prof

RX_PROF_FILE = "/proc/net/rx_prof"
# Global sysctls of the series (net.core.*, initial namespace only).
RX_PROF_SYSCTLS = ("packet_loss_gen", "rx_prof_port", "rx_prof_ifindex", "rx_prof_skb_len",
                   "rx_prof_lat_sample", "gso_honour_off")
KERNEL = "kernel:rx_prof"
EBPF = "ebpf:bpftrace"


def rx_prof_status(host: Host) -> tuple[bool, str]:
    """(present, why): present only when the file parses and every sysctl of the series exists."""
    try:
        text = host.read_text(RX_PROF_FILE)
    except HostError:
        return False, f"{RX_PROF_FILE} missing: stock kernel (no kernel_patch/ series)"
    try:
        parse_rx_prof(text, RX_PROF_FILE)
    except ParseError as exc:
        return False, f"{RX_PROF_FILE} has an unknown format ({exc})"
    missing = []
    for name in RX_PROF_SYSCTLS:
        try:
            host.read_text(f"/proc/sys/net/core/{name}")
        except HostError:
            missing.append(name)
    if missing:
        return False, f"sysctls missing: {', '.join('net.core.' + m for m in missing)}"
    return True, "kernel_patch/ series present"


def latency_source(host: Host) -> tuple[str, str]:
    """(source, why): the patched kernel's own histograms when present, else bpftrace."""
    present, why = rx_prof_status(host)
    if present:
        return KERNEL, why
    if host.which("bpftrace"):
        return EBPF, why
    return "none", f"{why}; bpftrace missing too"
