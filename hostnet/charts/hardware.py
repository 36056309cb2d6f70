"""Figures of the sections that need hardware the embedded testbed lacks (sections/numa.py: two NUMA
nodes; sections/dca_iommu.py: DDIO and an IOMMU): what the paper and this testbed have, and where
a testbed ran the points, their median throughput per core."""
from __future__ import annotations

import altair as alt
import pandas as pd

from . import plots  # noqa: F401 (the hostnet theme and PNG renderer these charts are drawn in)
from .grid import TPC_TITLE


def median_tpc_bars(measured: pd.DataFrame, x: alt.X, tooltip: list, title: str, label: str) -> alt.Chart:
    """One bar per measured point: its median throughput per core over runs."""
    return alt.Chart(measured).mark_bar().encode(
        x=x, y=alt.Y("tpc_gbps:Q", title=TPC_TITLE), tooltip=tooltip,
    ).properties(width=300, height=240, title=alt.Title(title, subtitle=[label, "medians over runs"]))


def numa_charts(nodes: pd.DataFrame, measured: pd.DataFrame, label: str, placements) -> dict:
    """Fig. 10(c): NUMA nodes, the paper's servers vs this testbed's hosts (numa.nodes_table), and
    where measured (numa.measured_table), tpc per receiver placement in the order of `placements`."""
    need = pd.DataFrame({"needed": [2]})
    bars = alt.Chart(nodes).mark_bar(color="#4c78a8").encode(
        x=alt.X("testbed:N", title="testbed", sort=None, axis=alt.Axis(labelAngle=0, labelLimit=220)),
        y=alt.Y("numa_nodes:Q", title="NUMA nodes (count)", scale=alt.Scale(domain=[0, 4]),
                axis=alt.Axis(tickMinStep=1, format="d")),
        tooltip=["testbed", "numa_nodes", "nic_node"])
    rule = alt.Chart(need).mark_rule(color="#e45756", strokeDash=[4, 3]).encode(y="needed:Q")
    out = {"numa-nodes": alt.layer(bars, rule).properties(width=380, height=240, title=alt.Title(
        "Fig. 10(c) prerequisite: NUMA nodes, paper vs this testbed",
        subtitle=[label, "dashed: at least 2 nodes and a NIC on one of them are needed for NIC-local vs -remote"]))}
    if not measured.empty:
        out["numa-tpc"] = median_tpc_bars(
            measured, alt.X("placement:N", sort=list(placements), title="receiver application placement"),
            ["placement", "tpc_gbps", "runs"], "Fig. 10(c) analogue: 4 KB RPCs, NIC-local vs NIC-remote", label)
    return out


def dca_iommu_charts(status: pd.DataFrame, reference: pd.DataFrame, measured: pd.DataFrame, label: str) -> dict:
    """Fig. 12: the paper's directions for DCA off and the IOMMU on (reference rows of figure 12*),
    and where measured (dca_iommu.measured_table), tpc per (DDIO, IOMMU) point."""
    names = {"tpc_gbps": "throughput per core (Gbit/s)", "breakdown_pct": "CPU breakdown, {side} (% of CPU)",
             "breakdown_pct:mm": "memory management, {side} (% of CPU)"}
    claims = reference[reference.figure.str.startswith("12")].copy()
    claims["where"] = [names[m].format(side=s) for m, s in zip(claims.metric, claims.side, strict=True)]
    paper = alt.Chart(claims).mark_text(fontSize=12).encode(
        x=alt.X("config:N", title="configuration vs Default (DDIO on, IOMMU off)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("where:N", title="quantity (side)"), text="paper_direction:N",
        tooltip=["figure", "finding", "paper_direction", "paper_magnitude"],
    ).properties(width=380, height=200, title=alt.Title(
        "Fig. 12 (paper, directions only): DCA off and IOMMU on vs Default",
        subtitle=["the source text gives directions; bar heights were not in it", label]))
    out = {"dca-iommu-paper": paper}
    if not measured.empty:
        out["dca-iommu-tpc"] = median_tpc_bars(
            measured.assign(point=measured.ddio + ", IOMMU " + measured.iommu),
            alt.X("point:N", title="DDIO ways, IOMMU state"), list(measured.columns),
            "Fig. 12(a) analogue: throughput per core", label)
    return out
