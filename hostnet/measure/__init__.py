"""Running experiments: a point's settings, its workload, the run and the campaign around it
(workloads and a run's rows are derive/'s, the floor below).

config     StackConfig, the paper's optimisation ladder
declarations the workloads by name (pattern, `hostnet run`'s) and the declared sweeps
udp_loss   the UDP workload's point setup (placement, settings) and what a host must allow
runner     one point -> one run directory
flows      a point's flows as processes: servers listening, clients started together, stopped
probing    what is measured beside the flows, and the window opened and closed on every host
preflight  the tools a point needs, checked before a host is touched
window     the measurement window's edges and coverage
sweep_spec a sweep's spec and what each point runs
sweep      a campaign: points x repetitions, shuffled, resumable
topup      more runs of the points an undecided verdict names, and the loop until decided
provenance the git commit a run's manifest records
benches    the time budget's workload kinds (microbenchmarks, UDP batching)
options    LiveOptions: where and how a live run runs (the environment read at the edges only)
"""
__all__ = ["benches", "config", "declarations", "flows", "options", "preflight", "probing", "provenance", "runner",
           "sweep", "sweep_spec", "topup", "udp_loss", "window"]
