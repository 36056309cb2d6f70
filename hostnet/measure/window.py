"""The measurement window's model: when it may open and close around the flows (edge_s), whether
every flow covered it (FlowStarts, check_coverage), and whether it was long enough (check_window)."""
from __future__ import annotations

from collections import defaultdict

from ..hosts import LocalHost
from ..testbed import Testbed


# Time between closing the window and the end of the flows' run, so the window's closing
# snapshots are taken while every flow still sends. The window opens when the warm-up ends: the
# warm-up is the opening margin, and the slow starters (perf, bpftrace) are running by then.
# Local closing snapshots take ~0.05-0.1 s; a loaded machine more: on the VM's 2026-11-26 kernel build
# (every step ~35 % slower) a first point's closing took 0.40 s against 0.17 s to open.
EDGE_S = 0.4


# Over SSH every closing snapshot is a round trip (perf's disable, the counters, /proc; ~0.1 s each
# through an sshd here, 20-30 s in all to a TCG guest): the flows must outlast them all, and a run
# they did not is failed (WindowNotCovered). The edge is then 1.5x the previous point's closing time
# and 1.5x this point's opening time (closing takes the same round trips plus perf's disable:
# 30.6 s against 32.1 s to open behind the TCG guests' IOMMU, 18-23 s against 21-23 s on their
# e1000e, 2026-12-01), at least EDGE_REMOTE_S, and EDGE_REMOTE_FIRST_S before any point has closed
# (edge_s). A margin is not what makes a window covered: a client seen running after the close is
# (check_coverage), so the edge only trades window length against the risk of a failed run. At 3x
# the opening time a 90 s flow on the e1000e guests was left no window at all.
EDGE_REMOTE_S = 0.8
EDGE_REMOTE_FIRST_S = 2.0
EDGE_FACTOR = 1.5


class WindowTooShort(RuntimeError):
    """The probes started so late (many flows, a loaded machine) that little of the run was measured."""


def check_window(window_s: float, duration_s: float, n_flows: int) -> None:
    """Refuse numbers from a window under a quarter of the run: the probes started late (a loaded
    machine, many flows), so little of the run was measured."""
    if window_s < duration_s / 4:
        raise WindowTooShort(f"measurement window {window_s:.2f} s is under a quarter of the {duration_s} s run: "
                             f"starting {n_flows} flows and the probes took too long; use a longer duration")


class FlowStarts:
    """When each client started: the controller's clock before and after its start command (the
    start lies between), and the sending host's own clock. The window is placed with the
    controller's brackets, so no two clocks need agree."""

    def __init__(self):
        self.flows: dict[int, dict] = {}

    def add(self, index: int, sent: float, returned: float, host: str, at: float) -> None:
        self.flows[index] = {"sent": sent, "returned": returned, "host": host, "host_clock": at}

    @property
    def first_sent(self) -> float:
        return min(f["sent"] for f in self.flows.values())

    @property
    def last_returned(self) -> float:
        return max(f["returned"] for f in self.flows.values())

    def spread_s(self) -> float:
        """The start spread on each host's own clock (start_many's times), the largest over hosts;
        across hosts, the controller's bracket (last start returned - first sent) bounds it."""
        per_host: dict[str, list[float]] = defaultdict(list)
        for f in self.flows.values():
            per_host[f["host"]].append(f["host_clock"])
        on_hosts = max(max(ts) - min(ts) for ts in per_host.values())
        return on_hosts if len(per_host) == 1 else max(on_hosts, self.last_returned - self.first_sent)

    def describe(self) -> dict:
        return {"clients_started": self.first_sent, "clients_all_started": self.last_returned,
                "start_spread_s": self.spread_s(), "flow_starts": {str(i): f for i, f in sorted(self.flows.items())}}


class WindowNotCovered(RuntimeError):
    """A flow was not running over the whole measurement window."""


def may_have_ended(starts: FlowStarts, closed: float, total_s: float) -> set[int]:
    """The flows the bound cannot vouch for: a client runs total_s from its start, which came after
    its start command was sent, so one sent more than total_s before the close may have ended."""
    return {i for i, f in starts.flows.items() if f["sent"] + total_s < closed}


def check_coverage(starts: FlowStarts, opened: float, closed: float, total_s: float,
                   running_after_close: set[int] = frozenset()) -> None:
    """Every flow ran over the whole window: it had started before the first probe opened the window
    (its start command had returned) and cannot have ended before the last probe closed it
    (may_have_ended). A client seen still running after the window closed (running_after_close: the
    runner looks at those may_have_ended names, one round trip each over SSH) covered the close,
    whatever that bound says: on a loaded machine or a TCG guest a client starts, and so ends, later
    than its start command was sent, by more than the window's edge."""
    late = {i: f["returned"] - opened for i, f in starts.flows.items() if f["returned"] > opened}
    if late:
        i = max(late, key=late.get)
        raise WindowNotCovered(f"flow {i} started up to {late[i]:.3f} s after the measurement window opened "
                               f"({len(late)} of {len(starts.flows)} flows late): the window is not covered by "
                               f"every flow")
    early = {i: closed - (starts.flows[i]["sent"] + total_s)
             for i in may_have_ended(starts, closed, total_s) - set(running_after_close)}
    if early:
        i = max(early, key=early.get)
        raise WindowNotCovered(f"flow {i} may have ended {early[i]:.3f} s before the measurement window closed "
                               f"({len(early)} of {len(starts.flows)} flows): the window is not covered by every flow")


def all_local(tb: Testbed) -> bool:
    """Every host of the testbed is this machine (the embedded testbed): no SSH round trips."""
    return all(isinstance(h, LocalHost) for h in [*tb.machines.values(), *(e.host for e in tb.endpoints.values())])


def edge_s(tb: Testbed, opening_s: float = 0.0) -> float:
    """How long before the first flow can end the window closes: at least EDGE_S (local hosts) or
    EDGE_REMOTE_S (SSH), EDGE_FACTOR x how long this point's window took to open (closing takes the
    same snapshots, plus turning perf and bpftrace off) and x how long the previous point's took to
    close; over SSH EDGE_REMOTE_FIRST_S until a point has closed."""
    local = all_local(tb)
    if tb.closing_s is not None:
        known = EDGE_FACTOR * tb.closing_s
    else:
        known = EDGE_S if local else EDGE_REMOTE_FIRST_S
    return max(EDGE_S if local else EDGE_REMOTE_S, known, EDGE_FACTOR * opening_s)
