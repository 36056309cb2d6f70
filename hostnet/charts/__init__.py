"""Figures from tidy tables: one theme, offline SVG/PNG, a render cache, flame graphs.

plots        altair figure builders, panel() for charts shown together
drawn        what a drawn chart shows (marks, views, plot areas), for the chart tests
chart_cache  rendered charts on disk by spec and renderer versions
flamegraph   folded stacks -> an interactive page or an icicle chart
profiles     charts of a profile a researcher brings (analysis.profiles)
grid         the one-grid-key sections' figures: tpc with CIs and the breakdown per grid value
rx_buffer    Fig. 3(e)/(f): tpc and latency vs the Rx buffer
congestion   §3.10: tpc and the breakdown per congestion control
hardware     NUMA and DCA/IOMMU: what the paper and the testbed have, tpc where measured
explore      00-explore's CPU by category per point
"""
__all__ = ["chart_cache", "congestion", "drawn", "explore", "flamegraph", "grid", "hardware", "plots", "profiles",
           "rx_buffer"]
