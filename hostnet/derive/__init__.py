"""Deriving: a run's raw files -> its tidy rows, on the floor below measuring, so a stored run is
derived again offline (`hostnet rederive`) without any host. Nothing here reaches a host (a contract).

patterns   flows laid out in the paper's patterns over (host, core) slots
workloads  the workload kinds -> tool argv, and how each tool's output reads
tidy       a point's rows: flows, then CPU and counters; rederive() for a stored run
cpu        a side's CPU rows: utilisation, tpc, breakdowns, coverage, the testbed ledger
counters   counter deltas, interrupts, cache events, receive latency, foreign load
udp_loss   where a UDP point's datagrams were lost
"""
__all__ = ["counters", "cpu", "patterns", "tidy", "udp_loss", "workloads"]
