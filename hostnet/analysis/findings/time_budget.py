"""The 2015 talk's per-packet time budget (notebook 13): F18 (the budget's arithmetic, against the
talk's printed numbers), F19 (batching amortises the system call) and F20 (one skb's alloc+free
exceeds the budget of 10G minimum frames), on the campaign's tables (time_budget_tables) and runs."""
from __future__ import annotations

import pandas as pd

from .. import budget, verdicts
from ..time_budget_tables import NO_CLOCK, InSitu, cost, syscall_cost, talk
from ..verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED


def half_last_digit(printed) -> float:
    """Half a unit of the last printed digit: '14.88' -> 0.005, '123.0' -> 0.05, '815' -> 0.5."""
    text = str(printed).strip()
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return 0.5 * 10.0 ** -decimals


def f18(ref: pd.DataFrame, mhz: float | None) -> verdicts.Judgement:
    """The budget's arithmetic gives the talk's intervals and packet rate, each to within half of
    its last printed digit (ref: talk_numbers); cycles at this host's clock where it is known."""
    checks = [("interval_1538B_100G_ns", budget.interval_ns(1518, 100)),
              ("interval_1538B_40G_ns", budget.interval_ns(1518, 40)),
              ("interval_1538B_10G_ns", budget.interval_ns(1518, 10)),
              ("interval_84B_10G_ns", budget.interval_ns(64, 10)),
              ("mpps_84B_10G", budget.packets_per_s(64, 10) / 1e6)]
    # the talk rounds to its last printed digit; half of it, per quantity, is the agreement we ask for
    printed = ref.set_index("quantity").value
    agree = all(abs(v - float(printed[q])) <= half_last_digit(printed[q]) + 1e-9 for q, v in checks)
    pps_1538 = budget.packets_per_s(1518, 100) / 1e6
    pps_gap = 100 * (talk(ref, "mpps_1538B_100G") / pps_1538 - 1)
    small = checks[3][1]  # the 84 B interval at 10 Gbit/s, as computed
    here = (f" and {budget.cycles(small, mhz):.0f} at this host's {mhz:.0f} MHz" if mhz
            else f"; cycles at this host's clock: {NO_CLOCK}")
    shows = (f"computed: {checks[0][1]:.2f} ns for 1538 B on the wire at 100 Gbit/s, {small:.1f} ns and "
             f"{checks[4][1]:.2f} Mpps for 84 B at 10 Gbit/s, {checks[2][1]:.1f} / {checks[1][1]:.1f} ns at 10 / 40 "
             f"Gbit/s; {small:.1f} ns is {budget.cycles(small, 3000):.1f} cycles at 3 GHz{here}. (The talk's "
             f"packet rates for 1538 B, e.g. {talk(ref, 'mpps_1538B_100G'):.2f} Mpps at 100G, are {pps_gap:.1f} % "
             f"above the arithmetic's {pps_1538:.2f}.)")
    return verdicts.Judgement(REPRODUCED if agree else NOT_REPRODUCED, shows)


def f19(ref: pd.DataFrame, costs: pd.DataFrame, batches: pd.DataFrame, batch: pd.DataFrame | None = None, *,
        micro_flagged: bool = False, batch_flagged: bool = False) -> verdicts.Judgement:
    """Batching (sendmmsg) lowers the sender's CPU time per packet, batch 1 against 32 (or the largest
    size), judged on the batching runs themselves (`batch`: their tidy rows; batches: batch_table),
    with the system call's cost (costs: cost_table) beside it. micro_flagged / batch_flagged: the
    microbenchmarks' / batching runs are all flagged for foreign load (shown anyway); batching runs
    from a loaded machine leave F19 inconclusive. An inconclusive judgement names the two batch
    sizes a top-up repeats, where more runs would decide it."""
    sc = syscall_cost(costs)
    snd = batches[batches.side == "sender"].set_index("batch") if len(batches) else pd.DataFrame()
    if sc is None or 1 not in snd.index or len(snd) < 2:
        return verdicts.Judgement(NOT_TESTABLE, "the campaign lacks the syscall cost or batch sizes to compare")
    top = 32 if 32 in snd.index else int(snd.index.max())
    points = ()  # batch sizes a top-up repeats: only an undecided comparison of clean runs names them
    one, big = snd.loc[1], snd.loc[top]
    saved = one.cpu_ns_per_pkt - big.cpu_ns_per_pkt
    shows = (f"a system call costs {sc.median_ns:.0f} ns here (range {sc.min_ns:.0f}-{sc.max_ns:.0f}; the talk: "
             f"{talk(ref, 'syscall_noaudit_ns'):.0f}-{talk(ref, 'syscall_audit_ns'):.0f} ns). Sending at batch {top} "
             f"costs {big.cpu_ns_per_pkt:.0f} ns of CPU per packet (range {big.cpu_ns_min:.0f}-{big.cpu_ns_max:.0f}) "
             f"vs {one.cpu_ns_per_pkt:.0f} ({one.cpu_ns_min:.0f}-{one.cpu_ns_max:.0f}) at batch 1: {saved:.0f} ns "
             f"saved, against {sc.median_ns * (1 - 1 / top):.0f} ns of system calls amortised; packet rate "
             f"{big.pps_median / 1e6:.3f} vs {one.pps_median / 1e6:.3f} Mpps ({big.speedup:.2f}x)")
    # Judged on the sender's CPU time per packet, which is what amortising a call saves; its packet
    # rate also depends on how fast the receiving side drains the veth (see the notebook).
    if micro_flagged:
        shows += "; the system-call cost comes from runs flagged for foreign load (no clean run)"
    if batch_flagged:  # ranges from a loaded machine say nothing about batching
        verdict = INCONCLUSIVE
        shows += "; every batching run was flagged for foreign load, so these ranges are not from clean runs"
    elif batch is None:
        verdict = INCONCLUSIVE
        shows += "; to decide: the batching runs themselves (per-run values), not their summary"
    else:
        j = verdicts.direction(verdicts.difference(
            verdicts.clean_values(batch, "udp_cpu_per_pkt_ns", "sender", batch=1),
            verdicts.clean_values(batch, "udp_cpu_per_pkt_ns", "sender", batch=top)), want=">",
            what=f"sender CPU per packet, batch 1 → {top}", unit="ns", fmt=".0f",
            points=[{"batch": 1}, {"batch": top}])
        verdict, shows, points = j.verdict, f"{shows}; {j.text}", j.points
        if j.verdict == INCONCLUSIVE:
            shows += (f" (the most batching can save here, {sc.median_ns * (1 - 1 / top):.0f} ns, is "
                      f"{100 * sc.median_ns * (1 - 1 / top) / one.cpu_ns_per_pkt:.0f} % of the per-packet cost)")
    if sc.median_ns >= 100:
        ratio = sc.median_ns / talk(ref, "syscall_noaudit_ns")
        shows += f"; a call costs over 100 ns on this VM, {ratio:.1f}x the talk's"
    return verdicts.Judgement(verdict, shows, points=points)


def f20(ref: pd.DataFrame, costs: pd.DataFrame, in_situ: InSitu | None = None,
        micro: pd.DataFrame | None = None) -> verdicts.Judgement:
    """The talk's claim: one skb's alloc+free (77 ns, derived with pktgen) exceeds the 67.2 ns budget of
    10G minimum frames. Judged on the quantity the talk gives, one skb-like alloc+free, timed per clean
    run by the microbenchmark (`micro`: its tidy rows; a user-space stand-in: glibc malloc of a zeroed
    256 B head and a 2 KB buffer; the kernel's allocators cannot be timed here without modules); memory
    management per packet in situ (mm_per_packet: both hosts' mm per TCP segment, a different and larger
    quantity) is shown as context, not judged."""
    limit = budget.interval_ns(64, 10)
    fast, bulk = cost(costs, "malloc"), cost(costs, "malloc256")
    slab = (f"256 B same object {fast.median_ns:.0f} ns (talk, SLUB: {talk(ref, 'kmem_cache_fast_ns'):.0f})"
            if fast is not None else "")
    context = ("the talk's slab fast path: " + slab
               + (f", 256 at a time {bulk.median_ns:.0f} ns (talk: {talk(ref, 'kmem_cache_256_ns'):.0f})"
                  if bulk is not None else ""))
    if in_situ is not None and not in_situ.rows.empty:
        rows = in_situ.rows
        context += (f"; in situ, not judged ({rows.config.iloc[0]} single flow, {rows.campaign.iloc[0]}): "
                    f"memory management per TCP packet, both hosts, {rows.mm_ns_per_pkt.mean():.0f} ns")
    elif in_situ is not None and in_situ.why:
        context += f"; in situ, nothing to show: {in_situ.why}"
    runs = ([] if micro is None else
            micro[(micro.metric == "cost_ns") & (micro.category == "skballoc")].value.astype(float).tolist())
    if not runs:
        return verdicts.Judgement(NOT_TESTABLE, f"no skb-like alloc+free timed (microbenchmark skballoc); {context}")
    j = verdicts.direction(verdicts.against_level(runs, limit), want="<",
                           what=f"skb-like alloc+free (user-space stand-in: 256 B zeroed + 2 KB, glibc malloc) "
                                f"against the {limit:.1f} ns budget (talk, pktgen-derived: "
                                f"{talk(ref, 'mm_pktgen_derived_ns'):.0f} ns)", unit="ns", fmt=".0f")
    return verdicts.Judgement(j.verdict, f"{j.text}; {context}")
