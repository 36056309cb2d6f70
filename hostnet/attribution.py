"""Attributing timer-sampled (cpu-clock) samples to the code that really ran.

Without a hardware PMU, perf samples on a timer interrupt, which cannot fire while interrupts
are disabled. Time spent with interrupts off is therefore sampled where they come back on — the
LANDING symbols below — and, in a VM, the hypervisor exits of APIC/MSR writes are sampled in
native_write_msr. The rule (version ATTRIBUTION_RULE), for a sample whose leaf is a landing symbol:

1. Walk the call chain from the leaf toward the root.
2. An interrupt entry on the way (asm_sysvec_*, sysvec_*, common_interrupt) means the time went
   to handling that interrupt: device interrupts count as netdev; single-target "call function"
   IPIs count as whatever sent most of them in the same capture (`ipi_category`: netdev when
   net_rps_send_ipi sends them — RPS kicking the receive CPU, 99.9 % on the embedded testbed —
   sched when remote wake-ups do, as on hosts without RPS); anything else (the local timer,
   multi-target IPIs) as etc. Stop.
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

ATTRIBUTION_RULE = "irqs-off-callchain/3"
# what, in a call chain above an IPI send, says who sent it
_IPI_SEND = re.compile(r"^(x2apic_send_IPI|native_send_call_func_single_ipi|__smp_call_single_queue|"
                       r"send_call_function_single_ipi|smp_call_function_single_async|generic_exec_single)")
LANDING = frozenset({"handle_softirqs", "__do_softirq", "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq",
                     "__local_bh_enable_ip", "native_write_msr", "native_write_msr_safe",
                     # sending an IPI (VM exits): charged to whoever sends it
                     "x2apic_send_IPI", "generic_exec_single", "__smp_call_single_queue",
                     "smp_call_function_single_async"})
LAYERS = frozenset({"data_copy", "tcp/ip", "netdev", "skb", "mm", "sched"})
_IRQ_ENTRY = re.compile(r"^(asm_)?(sysvec_|common_interrupt)")


def _irq_category(frame: str, ipi_category: str) -> str:
    if frame.startswith(("asm_common_interrupt", "common_interrupt")):
        return "netdev"
    # the multi-target vector (sysvec_call_function: TLB shootdowns, text patching) is not network work
    return ipi_category if "call_function_single" in frame else "etc"


def ipi_senders(samples: Iterable[tuple[Sample, int]], taxonomy: Taxonomy) -> dict[str, int]:
    """Category of the code that sent single-target IPIs, by samples taken while sending them."""
    out: dict[str, int] = defaultdict(int)
    for s, n in samples:
        frames = [strip_suffix(f) for f in s.frames]
        if not any(_IPI_SEND.match(f) for f in frames):
            continue
        if any(f == "net_rps_send_ipi" for f in frames):
            out["netdev"] += n
        elif any(f.startswith(("ttwu_", "try_to_wake_up", "__wake_up")) for f in frames):
            out["sched"] += n
        else:
            out["etc"] += n
    return dict(out)


def ipi_category_of(senders: dict[str, int]) -> str:
    """netdev when the capture shows RPS sending the IPIs (or shows none), else the main sender."""
    return max(senders, key=senders.get) if senders else "netdev"


def attribute(frames: tuple[str, ...], taxonomy: Taxonomy, ipi_category: str = "netdev") -> str:
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
            return _irq_category(frame, ipi_category)
        cat = taxonomy.classify(frame)
        if cat in LAYERS:
            return cat
    return leaf_cat


def breakdown_from_stacks(samples: Iterable[tuple[Sample, int]], cpus, taxonomy: Taxonomy,
                          workload_comms) -> dict:
    """Like analysis.breakdown, with the attribution rule; also the leaf-only shares, for contrast."""
    cpus = set(cpus)
    samples = list(samples)
    senders = ipi_senders(samples, taxonomy)  # from every CPU: IPIs are sent on one, handled on another
    ipi_category = ipi_category_of(senders)
    attributed: dict[str, int] = defaultdict(int)
    leaf: dict[str, int] = defaultdict(int)
    by_sym: dict[tuple[str, str], int] = defaultdict(int)
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
        cat = attribute(s.frames, taxonomy, ipi_category)
        attributed[cat] += n
        leaf[leaf_cat] += n
        by_sym[(s.frames[0], cat)] += n
        moved += n if cat != leaf_cat else 0
    busy = sum(attributed.values())
    top = sorted(by_sym.items(), key=lambda kv: -kv[1])[:15]

    def pct(d):
        return {c: (100.0 * d.get(c, 0) / busy if busy else float("nan")) for c in BREAKDOWN_ORDER}
    return {"pct": pct(attributed), "leaf_pct": pct(leaf), "busy_samples": busy, "idle_samples": idle,
            "foreign_samples": foreign, "reattributed_samples": moved, "rule": ATTRIBUTION_RULE,
            "ipi_senders": senders, "ipi_category": ipi_category,
            "top_symbols": [(sym, cat, 100.0 * n / busy) for (sym, cat), n in top]}
