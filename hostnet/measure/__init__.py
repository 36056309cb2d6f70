"""Running experiments: a point's settings, its workload, the run and the campaign around it.

config     StackConfig, the paper's optimisation ladder
experiments  the experiments by name: pattern, `hostnet run`'s, declarations
workloads  flows and patterns -> tool argv, and their output parsers
udp_loss   the UDP workload's hooks (placement, settings, loss locations)
runner     one point -> one run directory
tidy       a run's raw files -> its tidy rows
sweep      a campaign: points x repetitions, shuffled, resumable
topup      more runs of the points an undecided verdict names, and the loop until decided
provenance the git commit a run's manifest records
benches    the time budget's workload kinds (microbenchmarks, UDP batching)
options    LiveOptions: where and how a live run runs (the environment read at the edges only)
"""
__all__ = ["benches", "config", "experiments", "options", "provenance", "runner", "sweep", "tidy", "topup", "udp_loss",
           "workloads"]
