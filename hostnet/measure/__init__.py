"""Running experiments: a point's settings, its workload, the run and the campaign around it.

config     StackConfig, the paper's optimisation ladder
workloads  flows and patterns -> tool argv, and their output parsers
udp_loss   the UDP workload's hooks (placement, settings, loss locations)
runner     one point -> one run directory
tidy       a run's raw files -> its tidy rows
sweep      a campaign: points x repetitions, shuffled, resumable
topup      more runs of the points an undecided verdict names
options    LiveOptions: where and how a live run runs (the environment read at the edges only)
"""
__all__ = ["config", "options", "runner", "sweep", "tidy", "topup", "udp_loss", "workloads"]
