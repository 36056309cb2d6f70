"""Receive->copy latency and post-GRO skb sizes from a kernel with the rx_prof series.

The counters in /proc/net/rx_prof only grow: the probe reads them when the window opens and when
it closes, and analysis takes the difference (subtract_maps). Selection (port), sampling and the
histograms are switched on through the journaled sysctl knob, so they are off again afterwards.
"""
from __future__ import annotations

from ..hosts import Host
from ..knobs import KNOBS, Journal
from .kernel_source import EBPF, KERNEL, RX_PROF_FILE, latency_source
from .latency import LatencyProbe


def settings(port: int, sample_every: int) -> dict[str, str]:
    """The sysctls a measurement of one flow's port needs."""
    if not 0 < port < 65536 or sample_every < 1:
        raise ValueError(f"port {port} / sample_every {sample_every} out of range")
    return {"net.core.rx_prof_port": str(port), "net.core.rx_prof_skb_len": "1",
            "net.core.rx_prof_lat_sample": str(sample_every)}


class RxProfProbe:
    name = "rx_prof"
    pids: list[int] = []

    def __init__(self, port: int, journal: Journal, sample_every: int = 1):
        self.sysctls = settings(port, sample_every)
        self.journal = journal

    def prepare(self, host: Host) -> None:
        for key, value in self.sysctls.items():
            self.journal.set(host, KNOBS["sysctl"], key, value)

    def start(self, host: Host) -> None:
        self._open = host.read_text(RX_PROF_FILE)

    def stop(self, host: Host) -> dict[str, str]:
        return {"rx_prof_open.txt": self._open, "rx_prof.txt": host.read_text(RX_PROF_FILE)}

    def abort(self) -> None:
        """Nothing runs: the journal turns the sysctls off again."""


def latency_probe_for(host: Host, ports: list[int], ifaces: list[str], comm: str, journal: Journal,
                      sample_every: int):
    """-> (probe, source, why): the kernel's rx_prof when present and one flow is measured (it
    selects a single port), else the bpftrace probe."""
    source, why = latency_source(host)
    if source == KERNEL and len(ports) == 1:
        return RxProfProbe(ports[0], journal, sample_every), KERNEL, why
    if source == KERNEL:
        why = f"{why}, but rx_prof selects one port and this point has {len(ports)} flows"
    return LatencyProbe(ifaces, comm, journal, sample_every), EBPF, why
