"""Reading what a run measured: pure functions over tidy tables, samples and call chains.

metrics      utilisation, throughput-per-core, breakdowns, foreign load, summaries
attribution  cpu-clock samples attributed through their call chain
ledger       the testbed ledger: raw and NIC-equivalent accounting
verdicts     the one verdict rule; a section's rules return Verdicts (table + points wanted)
flags        which stored runs analysis leaves out (flagged/usable)
compare      two campaigns point by point
run_summary  what `hostnet run` prints of each run
profiles     a profile a researcher brings -> the paper's breakdown
budget       the per-packet time budget's arithmetic
time_budget_tables  the time budget's tables (notebook 13)
profile_files  a brought profile read, whatever its format

Nothing here runs a command or reaches a host (a contract): a brought perf.data is read through
the Perf its caller passes (probes.perf.PerfOnHost); measure/ calls these while it derives a run's
rows, so this floor sits below it.
"""
__all__ = ["attribution", "budget", "compare", "flags", "ledger", "metrics", "profile_files", "profiles",
           "run_summary", "time_budget_tables", "verdicts"]
