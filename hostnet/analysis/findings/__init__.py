"""Each finding's rule as one small function, a module per section: given a campaign's tidy rows
(clean runs only) and what the section knows of its testbed, a verdicts.Judgement, or None where
the campaign holds nothing to judge it on. A section's verdict_table only composes them."""
__all__ = ["beyond", "congestion", "dca_iommu", "end_host_loss", "mixed_flows", "numa", "packet_loss", "patterns",
           "rx_buffer", "short_flows", "single_flow", "time_budget"]
