"""Attributing timer-sampled (cpu-clock) samples to the code that really ran.

Without a hardware PMU, perf samples on a timer interrupt, which cannot fire while interrupts
are disabled. Time spent with interrupts off is therefore sampled where they come back on — the
LANDING symbols below — and, in a VM, the hypervisor exits of APIC/MSR writes are sampled in
native_write_msr. The rule (version ATTRIBUTION_RULE), for a sample whose leaf is a landing symbol:

1. Walk the call chain from the leaf toward the root.
2. An interrupt entry on the way (asm_sysvec_*, sysvec_*, common_interrupt) means the time went
   to handling that interrupt: single-target "call function" IPIs count as netdev (on these hosts
   99.9 % of them are sent by net_rps_send_ipi: RPS kicking the receive CPU), device interrupts as
   netdev, anything else (the local timer, multi-target IPIs) as etc. Stop. On hosts without RPS
   such IPIs are mostly remote wake-ups (scheduling); the rule would need the senders' mix there.
3. The first frame whose category is one of the stack's layers (data copy, TCP/IP, netdev, skb,
   memory, scheduling) names the code that ran with interrupts off, or that issued the MSR write
   (an IPI from net_rps_send_ipi is netdev). Stop.
4. Frames that are etc or lock (softirq entry, bh enable, timer and APIC helpers) are glue: skip.
5. No such frame: the leaf's own category stands.
Other samples keep their leaf's category.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

from .analysis import BREAKDOWN_ORDER, is_ours
from .parsers.perf_script import USER, Sample
from .taxonomy import IDLE, Taxonomy, strip_suffix

ATTRIBUTION_RULE = "irqs-off-callchain/2"
LANDING = frozenset({"handle_softirqs", "__do_softirq", "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq",
                     "__local_bh_enable_ip", "native_write_msr", "native_write_msr_safe",
                     # sending an IPI (VM exits): charged to whoever sends it
                     "x2apic_send_IPI", "generic_exec_single", "__smp_call_single_queue",
                     "smp_call_function_single_async"})
LAYERS = frozenset({"data_copy", "tcp/ip", "netdev", "skb", "mm", "sched"})
_IRQ_ENTRY = re.compile(r"^(asm_)?(sysvec_|common_interrupt)")


def _irq_category(frame: str) -> str:
    # single-target "call function" IPIs are what RPS sends; the multi-target vector
    # (sysvec_call_function: TLB shootdowns, text patching) is not network work
    if "call_function_single" in frame or frame.startswith(("asm_common_interrupt", "common_interrupt")):
        return "netdev"
    return "etc"


def attribute(frames: tuple[str, ...], taxonomy: Taxonomy) -> str:
    """Category of one sample (frames leaf first)."""
    if not frames:
        return "unclassified"
    leaf = frames[0]
    kernel = not leaf.endswith(USER)
    leaf_cat = taxonomy.classify(leaf, kernel)
    if strip_suffix(leaf) not in LANDING:
        return leaf_cat
    for frame in frames[1:]:
        if frame.endswith(USER):
            break
        if _IRQ_ENTRY.match(frame):
            return _irq_category(frame)
        cat = taxonomy.classify(frame)
        if cat in LAYERS:
            return cat
    return leaf_cat


def breakdown_from_stacks(samples: Iterable[tuple[Sample, int]], cpus, taxonomy: Taxonomy,
                          workload_comms) -> dict:
    """Like analysis.breakdown, with the attribution rule; also the leaf-only shares, for contrast."""
    cpus = set(cpus)
    attributed: dict[str, int] = defaultdict(int)
    leaf: dict[str, int] = defaultdict(int)
    idle = foreign = moved = 0
    for s, n in samples:
        if s.cpu not in cpus or not s.frames:
            continue
        leaf_cat = taxonomy.classify(s.frames[0], not s.frames[0].endswith(USER))
        if leaf_cat == IDLE:
            idle += n
            continue
        if not is_ours(s.comm, workload_comms):
            foreign += n
            continue
        cat = attribute(s.frames, taxonomy)
        attributed[cat] += n
        leaf[leaf_cat] += n
        moved += n if cat != leaf_cat else 0
    busy = sum(attributed.values())

    def pct(d):
        return {c: (100.0 * d.get(c, 0) / busy if busy else float("nan")) for c in BREAKDOWN_ORDER}
    return {"pct": pct(attributed), "leaf_pct": pct(leaf), "busy_samples": busy, "idle_samples": idle,
            "foreign_samples": foreign, "reattributed_samples": moved, "rule": ATTRIBUTION_RULE}
