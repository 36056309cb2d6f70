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
class Section:
    notebook: str     # file name under notebooks/
    title: str        # the heading of its figures and of its part of the report
    paper: str        # where the finding comes from: a section of the paper or a companion study
    experiment: str   # the experiment (workload kind) its campaigns run; "" for a notebook that runs none
    module: str       # the hostnet module the notebook calls

    @property
    def stem(self) -> str:
        return self.notebook.removesuffix(".ipynb")

    def load_module(self) -> ModuleType:
        return importlib.import_module(self.module)


def _pattern_title(section: str, pattern: str, figure: str) -> str:
    return f"{section} {pattern}: throughput per core and CPU vs flows ({figure})"


SECTIONS: dict[str, Section] = {s.notebook: s for s in (
    Section("00-explore.ipynb", "Explore recorded campaigns: runs, points, categories, flame graphs", "all", "",
            "hostnet.explore"),
    Section("01-single-flow.ipynb", "§3.1 Single flow: the optimisation ladder", "§3.1", "single-flow",
            "hostnet.sections.single_flow"),
    Section("02-rx-buffer.ipynb", "§3.1 TCP Rx buffer: throughput per core and latency (Fig. 3e–f)", "§3.1",
            "single-flow", "hostnet.sections.rx_buffer"),
    Section("03-one-to-one.ipynb", _pattern_title("§3.2", "one-to-one", "Fig. 4"), "§3.2", "one-to-one",
            "hostnet.sections.patterns"),
    Section("04-incast.ipynb", _pattern_title("§3.3", "incast", "Fig. 5"), "§3.3", "incast",
            "hostnet.sections.patterns"),
    Section("05-all-to-all.ipynb", _pattern_title("§3.4", "all-to-all", "Fig. 6"), "§3.4", "all-to-all",
            "hostnet.sections.patterns"),
    Section("06-packet-loss.ipynb", "§3.5 Packet loss: throughput per core and loss recovery (Fig. 9)", "§3.5",
            "single-flow", "hostnet.sections.packet_loss"),
    Section("07-short-flows.ipynb",
            "§3.6 Short flows: RPC size vs throughput per core and CPU breakdown (Fig. 10)", "§3.6", "incast",
            "hostnet.sections.short_flows"),
    Section("08-mixed-flows.ipynb", "§3.7 Mixed long and short flows on one core (Fig. 11)", "§3.7", "mixed",
            "hostnet.sections.mixed_flows"),
    Section("09-numa.ipynb", "§3.6 NIC-local vs NIC-remote NUMA node for short flows (Fig. 10c)", "§3.6", "incast",
            "hostnet.sections.numa"),
    Section("10-dca-iommu.ipynb", "§3.8–3.9 DCA (DDIO) and the IOMMU (Fig. 12)", "§3.8–3.9", "single-flow",
            "hostnet.sections.dca_iommu"),
    Section("11-congestion-control.ipynb", "§3.10 Congestion control: throughput per core and CPU breakdown",
            "§3.10", "one-to-one", "hostnet.sections.congestion"),
    Section("12-outcast.ipynb", _pattern_title("appendix", "outcast", "Appendix (outcast)"), "appendix", "outcast",
            "hostnet.sections.patterns"),
    Section("13-time-budget.ipynb",
            "Time budget per packet at 10–400 Gbit/s, measured costs, batching (2015 talk, F18–F20)",
            "2015 talk", "udp-batch", "hostnet.sections.time_budget"),
    Section("14-end-host-loss.ipynb",
            "End-host loss (Marian et al., DSN 2010): where UDP is lost; TCP variants", "DSN 2010", "udp-loss",
            "hostnet.sections.end_host_loss"),
)}


def section(notebook: str) -> Section:
    """The registry entry of a notebook, by file name ("01-single-flow.ipynb") or stem."""
    key = notebook if notebook.endswith(".ipynb") else f"{notebook}.ipynb"
    if key not in SECTIONS:
        raise KeyError(f"{notebook!r} is not a registered notebook; one of {', '.join(SECTIONS)}")
    return SECTIONS[key]
