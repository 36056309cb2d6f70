"""The paper's sections, one module each, and the registry that ties each to its notebook.

A section module offers what its notebook calls: collect (run live or pick the campaign to
replay), load, table, charts and verdict_table; common.py holds what they share (loading a
campaign without flagged runs, the testbed label, run quality, saving figures, report metadata).
Adding a section is a module here, a notebook in notebooks/, and an entry below
(docs/sections.md walks through it); tests check that notebooks and entries match one to one.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Select:
    """A notebook parameter that, in replay, picks recorded points: its values are matched against
    the manifests' `point[key]` (each value passed through `convert` first, e.g. KB to the bytes
    recorded) in the campaign named by the parameter `campaign`."""
    param: str
    key: str
    convert: str = ""          # "module:function" under hostnet.sections, or "kb" (x 1024); "" as given
    campaign: str = "campaign"


# What a live run takes that a replay cannot change: passed in replay, such a parameter would be
# recorded as if it had shaped the result. Every section's own ones are in its `run_only`.
LIVE_ONLY = ("testbed", "duration", "warmup", "repetitions")


@dataclass(frozen=True)
class Section:
    notebook: str     # file name under notebooks/
    title: str        # the heading of its figures and of its part of the report
    paper: str        # where the finding comes from: a section of the paper or a companion study
    # the experiment its campaigns hold: the label its runs are stored under, which its declared sweep
    # gives or names; "" for a notebook that runs none (test_declarations)
    experiment: str
    module: str       # the hostnet module the notebook calls
    selects: tuple[Select, ...] = ()   # parameters that pick recorded points in replay
    run_only: tuple[str, ...] = LIVE_ONLY  # parameters only a live run uses: refused in replay

    @property
    def stem(self) -> str:
        return self.notebook.removesuffix(".ipynb")

    def load_module(self) -> ModuleType:
        return importlib.import_module(self.module)


def _pattern_title(section: str, pattern: str, figure: str) -> str:
    return f"{section} {pattern}: throughput per core and CPU vs flows ({figure})"


_CONFIG = Select("config", "config")
_FLOWS = Select("flows", "flows")
_PATTERN = (_CONFIG, _FLOWS)
_PATTERN_RUN_ONLY = (*LIVE_ONLY, "perf_freq_hz", "separate_hosts")

SECTIONS: dict[str, Section] = {s.notebook: s for s in (
    Section("00-explore.ipynb", "Explore recorded campaigns: runs, points, categories, flame graphs", "all", "",
            "hostnet.sections.explore", run_only=()),
    Section("01-single-flow.ipynb", "§3.1 Single flow: the optimisation ladder", "§3.1", "single-flow",
            "hostnet.sections.single_flow", (Select("configs", "config"),), (*LIVE_ONLY, "perf_freq_hz", "rate_mbps")),
    Section("02-rx-buffer.ipynb", "§3.1 TCP Rx buffer: throughput per core and latency (Fig. 3e–f)", "§3.1",
            "single-flow", "hostnet.sections.rx_buffer", (_CONFIG, Select("sizes_kb", "rx_buffer_kb")),
            (*LIVE_ONLY, "latency_sample_every", "rx_rings", "rate_mbps")),
    Section("03-one-to-one.ipynb", _pattern_title("§3.2", "one-to-one", "Fig. 4"), "§3.2", "one-to-one",
            "hostnet.sections.patterns", _PATTERN, _PATTERN_RUN_ONLY),
    Section("04-incast.ipynb", _pattern_title("§3.3", "incast", "Fig. 5"), "§3.3", "incast",
            "hostnet.sections.patterns", _PATTERN, _PATTERN_RUN_ONLY),
    Section("05-all-to-all.ipynb", _pattern_title("§3.4", "all-to-all", "Fig. 6"), "§3.4", "all-to-all",
            "hostnet.sections.patterns", _PATTERN, _PATTERN_RUN_ONLY),
    Section("06-packet-loss.ipynb", "§3.5 Packet loss: throughput per core and loss recovery (Fig. 9)", "§3.5",
            "single-flow", "hostnet.sections.packet_loss", (_CONFIG, Select("loss_rates", "loss_rate"))),
    Section("07-short-flows.ipynb",
            "§3.6 Short flows: RPC size vs throughput per core and CPU breakdown (Fig. 10)", "§3.6", "incast",
            "hostnet.sections.short_flows",
            (_CONFIG, _FLOWS, Select("rpc_sizes", "rpc_size", "short_flows:recorded_size"))),
    Section("08-mixed-flows.ipynb", "§3.7 Mixed long and short flows on one core (Fig. 11)", "§3.7", "mixed",
            "hostnet.sections.mixed_flows",
            (_CONFIG, Select("short_flows", "short_flows"), Select("rpc_size", "rpc_size", "kb"))),
    Section("09-numa.ipynb", "§3.6 NIC-local vs NIC-remote NUMA node for short flows (Fig. 10c)", "§3.6", "numa",
            "hostnet.sections.numa", (Select("rpc_size", "rpc_size"),)),
    Section("10-dca-iommu.ipynb", "§3.8–3.9 DCA (DDIO) and the IOMMU (Fig. 12)", "§3.8–3.9", "dca-iommu",
            "hostnet.sections.dca_iommu", run_only=(*LIVE_ONLY, "config", "rate_mbps")),
    Section("11-congestion-control.ipynb", "§3.10 Congestion control: throughput per core and CPU breakdown",
            "§3.10", "one-to-one", "hostnet.sections.congestion",
            (_CONFIG, _FLOWS, Select("algorithms", "congestion_control"))),
    Section("12-outcast.ipynb", _pattern_title("appendix", "outcast", "Appendix (outcast)"), "appendix", "outcast",
            "hostnet.sections.patterns", _PATTERN, _PATTERN_RUN_ONLY),
    Section("13-time-budget.ipynb",
            "Time budget per packet at 10–400 Gbit/s, measured costs, batching (2015 talk, F18–F20)",
            "2015 talk", "udp-batch", "hostnet.sections.time_budget",
            (Select("batch_sizes", "batch"), Select("payload_bytes", "payload_bytes")),
            (*LIVE_ONLY, "micro_scale", "top_up_rounds")),
    Section("14-end-host-loss.ipynb",
            "End-host loss (Marian et al., DSN 2010): where UDP is lost; TCP variants", "DSN 2010", "udp-loss",
            "hostnet.sections.end_host_loss",
            (Select("rates_gbps", "udp_rate_gbps"), Select("buffers_kb", "socket_buffer_kb"),
             Select("placements", "app_cpu"), Select("algorithms", "congestion_control", campaign="cc_campaign"),
             Select("flows", "flows", campaign="cc_campaign"))),
    Section("15-beyond-2021.ipynb",
            "Beyond 2021: zero-copy send and receive on a current kernel, in the paper's breakdown",
            "beyond the paper", "zero-copy", "hostnet.sections.beyond",
            (_CONFIG, Select("send_modes", "send_mode"), Select("recv_modes", "recv_mode"), Select("mtu", "mtu"),
             Select("big_tcp_sizes", "big_tcp_bytes", campaign="big_tcp_campaign"),
             Select("big_tcp_ip_versions", "ip_version", campaign="big_tcp_campaign")), (*LIVE_ONLY, "mss")),
)}


def section(notebook: str) -> Section:
    """The registry entry of a notebook, by file name ("01-single-flow.ipynb") or stem."""
    key = notebook if notebook.endswith(".ipynb") else f"{notebook}.ipynb"
    if key not in SECTIONS:
        raise KeyError(f"{notebook!r} is not a registered notebook; one of {', '.join(SECTIONS)}")
    return SECTIONS[key]
