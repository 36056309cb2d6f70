"""Attributing timer-sampled (cpu-clock) samples to the code that really ran.

Without a hardware PMU, perf samples on a timer interrupt, which cannot fire while interrupts
are disabled. Time spent with interrupts off is therefore sampled where they come back on — the
LANDING symbols below — and, in a VM, the hypervisor exits of APIC/MSR writes are sampled in
native_write_msr. The rule (version ATTRIBUTION_RULE), for one sample, frames leaf first:

0. The instrument and the testbed come first: a sample of the profiler's own process or code
   (taxonomy "testbed": perf, its unwinder, eBPF probes) anywhere in the kernel chain is
   testbed; so is the loss injector's nftables chain (nft_do_chain) when the point injects loss.
1. A leaf that is a library routine (rb_*, memcmp) takes the layer of its first caller in one of
   the stack's layers (TCP's rbtrees are TCP/IP, CFS's are scheduling); any other leaf that is
   not a landing symbol keeps its own category.
2. A landing leaf: walk the call chain from the leaf toward the root.
   a. An IPI send on the way (x2apic_send_IPI, __smp_call_single_queue, ...), or the leaf is
      __napi_schedule (with threaded NAPI: waking the peer's NAPI thread, with interrupts off):
      on the embedded testbed the time is the wake-up and the send's VM exit, testbed — the
      stand-in for a NIC raising its interrupt; on real hosts walk on to the sender.
   b. An interrupt entry (asm_sysvec_*, sysvec_*, common_interrupt): device interrupts count as
      netdev; single-target "call function" and reschedule IPIs count as testbed on the embedded
      testbed (entry and VM exit, not network work), elsewhere as whatever sent most of them in
      the same capture (`ipi_category`: netdev for RPS, sched for remote wake-ups); anything else
      (the local timer, multi-target IPIs) as etc. Stop.
   c. The first frame whose category is one of the stack's layers (data copy, TCP/IP, netdev,
      skb, memory, scheduling) names the code that ran with interrupts off. Stop.
   d. Frames that are etc or lock (softirq entry, bh enable, timer and APIC helpers) are glue: skip.
3. No such frame: the leaf's own category stands.
4. On the embedded testbed, a NAPI thread's (napi/<dev>) own scheduling — its sleep, wake-up and
   context switch to and from the application on the same core — is testbed: a NIC's NAPI runs in
   softirq in whatever the interrupt found running, with no thread to switch to. Its waking the
   application (sock_def_readable -> try_to_wake_up) is stack work a NIC's softirq does too: sched.

On the embedded testbed each attributed sample is then either stack work or one item of the testbed
ledger (ledger.py), which bills the emulation's own work where real hardware would put it.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

from . import ledger
from .metrics import BREAKDOWN_ORDER, PROFILER_COMMS, is_ours
from ..parsers.perf_script import USER, Sample
from ..taxonomy import IDLE, TESTBED, Taxonomy, strip_suffix

ATTRIBUTION_RULE = "irqs-off-callchain/8"
# what, in a call chain above an IPI send, says who sent it
_IPI_SEND = re.compile(r"^(x2apic_send_IPI|native_send_call_func_single_ipi|__smp_call_single_queue|"
                       r"send_call_function_single_ipi|smp_call_function_single_async|generic_exec_single)")
LANDING = frozenset({"handle_softirqs", "__do_softirq", "_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq",
                     "__local_bh_enable_ip", "native_write_msr", "native_write_msr_safe",
                     # sending an IPI (VM exits): charged to whoever sends it
                     "x2apic_send_IPI", "generic_exec_single", "__smp_call_single_queue",
                     "smp_call_function_single_async",
                     # scheduling a NAPI instance: with threaded NAPI, waking its thread (an IPI when remote)
                     "__napi_schedule"})
LAYERS = frozenset({"data_copy", "tcp/ip", "netdev", "skb", "mm", "sched"})
_IRQ_ENTRY = re.compile(r"^(asm_)?(sysvec_|common_interrupt)")
# Structural probes of a receive path (docs/receive-path.md): a sample inside TCP's data-receive
# functions, by call chain (ACKs never reach them, so where they run is where data is received);
# and a leaf that is a trapped MSR/APIC write (a VM exit in a guest).
RECEIVE_PATH = re.compile(r"^(tcp_data_queue|tcp_queue_rcv|tcp_event_data_recv|tcp_data_queue_ofo|tcp_ofo_queue|"
                          r"tcp_try_coalesce)$")
VM_EXIT_LEAF = re.compile(r"^(native_write_msr|native_write_msr_safe|native_apic_msr_write|x2apic_send_IPI.*|"
                          r"native_send_call_func_.*)$")
_LOSS_INJECTOR = re.compile(r"^(nft_do_chain|nft_)")
# library routines whose time belongs to whoever called them: rbtrees (TCP's retransmit and
# out-of-order queues, but also timers and CFS), memcmp
_GLUE = re.compile(r"^(rb_.*|__rb_.*|memcmp)$")
# a NAPI thread waking someone else (the application), not switching itself
_WAKES_OTHERS = frozenset({"try_to_wake_up", "__wake_up", "__wake_up_sync_key", "__wake_up_common",
                           "sock_def_readable", "wake_up_process"})


def _irq_category(frame: str, ipi_category: str, embedded: bool) -> str:
    if frame.startswith(("asm_common_interrupt", "common_interrupt")):
        return "netdev"
    single = "call_function_single" in frame or "reschedule_ipi" in frame
    if embedded and single:
        return TESTBED
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


def attribute(frames: tuple[str, ...], taxonomy: Taxonomy, ipi_category: str = "netdev", *,
              embedded: bool = False, loss_injector: bool = False, comm: str = "") -> str:
    """Category of one sample (frames leaf first); embedded: the sample is from the embedded
    testbed (VM exits of IPIs, and the NAPI threads' own scheduling, are its own);
    loss_injector: the point ran hostnet's nft drop."""
    cat = _attribute(frames, taxonomy, ipi_category, embedded=embedded, loss_injector=loss_injector, comm=comm)
    if embedded and cat == "sched" and comm.startswith("napi/") and not _WAKES_OTHERS.intersection(
            strip_suffix(f) for f in frames):
        return TESTBED  # threaded NAPI's own sleep, wake-up and context switch: a NIC's softirq has none
    return cat


def is_instrument(frames: tuple[str, ...], taxonomy: Taxonomy, *, loss_injector: bool = False,
                  comm: str = "") -> bool:
    """The profiler's own process or code (taxonomy "testbed") anywhere in the kernel chain, or the
    loss injector's nftables chain when the point injects loss: the instrument, not the stack."""
    if comm in PROFILER_COMMS:
        return True
    chain = [strip_suffix(f) for f in frames if not f.endswith(USER)]
    return any(taxonomy.classify(f) == TESTBED for f in chain) or (
        loss_injector and any(_LOSS_INJECTOR.match(f) for f in chain))


def _attribute(frames: tuple[str, ...], taxonomy: Taxonomy, ipi_category: str, *, embedded: bool,
               loss_injector: bool, comm: str) -> str:
    if not frames:
        return "unclassified"
    leaf = frames[0]
    kernel = not leaf.endswith(USER)
    if is_instrument(frames, taxonomy, loss_injector=loss_injector, comm=comm):
        return TESTBED
    leaf_cat = taxonomy.classify(leaf, kernel)
    if _GLUE.match(strip_suffix(leaf)):  # a library routine: its caller's layer (TCP's rbtrees are TCP's)
        return next((c for c in (taxonomy.classify(f) for f in frames[1:] if not f.endswith(USER)) if c in LAYERS),
                    leaf_cat)
    if strip_suffix(leaf) not in LANDING:
        return leaf_cat
    if embedded and strip_suffix(leaf) == "__napi_schedule":
        return TESTBED  # veth waking the peer's NAPI thread: the stand-in for a NIC raising its IRQ
    for i, frame in enumerate(frames):
        if frame.endswith(USER):
            break
        name = strip_suffix(frame)
        if embedded and _IPI_SEND.match(name):
            return TESTBED
        if i == 0:
            continue
        if _IRQ_ENTRY.match(name):
            return _irq_category(name, ipi_category, embedded)
        cat = taxonomy.classify(frame)
        if cat in LAYERS:
            return cat
    return leaf_cat


def breakdown_from_stacks(samples: Iterable[tuple[Sample, int]], cpus, taxonomy: Taxonomy,
                          workload_comms, *, embedded: bool = False, loss_injector: bool = False,
                          gso_for_tso: bool = False, gro_off: bool = False, rehearsal: bool = False) -> dict:
    """Like analysis.breakdown, with the attribution rule; also the leaf-only shares, for contrast.
    embedded and loss_injector as for attribute(); on the embedded testbed also each sample's
    testbed-ledger item ("stack": {category: samples of no item}, "ledger": {(item, category):
    samples}; gso_for_tso and gro_off as for ledger.item), and on a rehearsal's (emulated NICs)
    its emulation traps (ledger.rehearsal_item)."""
    cpus = set(cpus)
    samples = list(samples)
    senders = ipi_senders(samples, taxonomy)  # from every CPU: IPIs are sent on one, handled on another
    ipi_category = ipi_category_of(senders)
    attributed: dict[str, int] = defaultdict(int)
    leaf: dict[str, int] = defaultdict(int)
    by_sym: dict[tuple[str, str], int] = defaultdict(int)
    stack: dict[str, int] = defaultdict(int)
    items: dict[tuple[str, str], int] = defaultdict(int)
    idle = foreign = moved = receive_path = vm_exit = 0
    for s, n in samples:
        if s.cpu not in cpus or not s.frames:
            continue
        leaf_cat = taxonomy.classify(s.frames[0], not s.frames[0].endswith(USER))
        if leaf_cat == IDLE:
            idle += n
            continue
        if not (is_ours(s.comm, workload_comms) or s.comm in PROFILER_COMMS):
            foreign += n
            continue
        cat = attribute(s.frames, taxonomy, ipi_category, embedded=embedded, loss_injector=loss_injector,
                        comm=s.comm)
        leaf_cat = TESTBED if s.comm in PROFILER_COMMS else leaf_cat
        attributed[cat] += n
        leaf[leaf_cat] += n
        names = [strip_suffix(f) for f in s.frames]
        it = ledger.item([f for f, raw in zip(names, s.frames, strict=True) if not raw.endswith(USER)], cat,
                         # attribute() bills the instrument as testbed, so only a testbed sample may be it
                         instrument=cat == TESTBED and is_instrument(s.frames, taxonomy,
                                                                     loss_injector=loss_injector, comm=s.comm),
                         gso_for_tso=gso_for_tso, gro_off=gro_off) if embedded else (
            ledger.rehearsal_item(names) if rehearsal else None)
        if it is None:
            stack[cat] += n
        else:
            items[(it, cat)] += n
        receive_path += n if any(RECEIVE_PATH.match(f) for f in names) else 0
        vm_exit += n if VM_EXIT_LEAF.match(names[0]) else 0
        by_sym[(s.frames[0], cat)] += n
        moved += n if cat != leaf_cat else 0
    busy = sum(attributed.values())
    top = sorted(by_sym.items(), key=lambda kv: -kv[1])[:15]

    def pct(d):
        return {c: (100.0 * d.get(c, 0) / busy if busy else float("nan")) for c in BREAKDOWN_ORDER}
    return {"pct": pct(attributed), "leaf_pct": pct(leaf), "busy_samples": busy, "idle_samples": idle,
            "foreign_samples": foreign, "reattributed_samples": moved, "rule": ATTRIBUTION_RULE,
            "receive_path_samples": receive_path, "vm_exit_samples": vm_exit,
            "ipi_senders": senders, "ipi_category": ipi_category, "stack": dict(stack), "ledger": dict(items),
            "top_symbols": [(sym, cat, 100.0 * n / busy) for (sym, cat), n in top]}
