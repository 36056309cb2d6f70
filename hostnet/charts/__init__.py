"""Figures from tidy tables: one theme, offline SVG/PNG, a render cache, flame graphs.

plots        altair figure builders, panel() for charts shown together
drawn        what a drawn chart shows (marks, views, plot areas), for the chart tests
chart_cache  rendered charts on disk by spec and renderer versions
flamegraph   folded stacks -> an interactive page or an icicle chart
profiles     charts of a profile a researcher brings (analysis.profiles)
encodings    what every figure shares: category colours, the share axis, CI bars, the caveat
grid         the one-grid-key sections' figures: tpc with CIs and the breakdown per grid value
rx_buffer, congestion, hardware (NUMA, DCA/IOMMU), explore, patterns, end_host_loss, beyond, time_budget
             a section's figures (its notebooks' builders)
"""
__all__ = ["beyond", "chart_cache", "congestion", "drawn", "encodings", "end_host_loss", "explore", "flamegraph",
           "grid", "hardware", "patterns", "plots", "profiles", "rx_buffer", "time_budget"]
