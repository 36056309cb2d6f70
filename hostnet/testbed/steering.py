"""Receive steering on the embedded testbed: where each side's receive processing runs.

A NIC raises one interrupt per batch and runs NAPI (GRO, IP, TCP receive) on the core its IRQ is
steered to. veth has no interrupt, so the embedded testbed stands in for one in one of three ways,
a property of the testbed recorded in every manifest and shown in figure labels:

- "napi-thread": each veth runs NAPI in a kernel thread pinned to its side's CPUs, like an IRQ's
  affinity. veth is in NAPI mode with GRO on; steps without GRO keep it on with gro_max_size 0, so
  it merges nothing (an XDP program would also give NAPI, at the price of a copy of every packet).
  veth hands a TSO-sized skb around NAPI to the sender's CPU backlog, so here the sender segments
  in software (GSO stands in for TSO) and every transmitting veth has TSO off; a pfifo on it
  gives backpressure instead of drops when the peer's thread lags.
- "rps": RPS on each veth rx queue moves receive processing to the receiving side's CPUs, one
  inter-processor interrupt per packet batch handed over (a trapped APIC write in a VM).
- "none": the kernel default: veth delivers into the sending CPU's backlog, so the receiver's
  stack runs on the sender's CPU.

Real servers ("nic") keep their NIC's own IRQ steering.
"""
from __future__ import annotations


from ..knobs import KNOBS, cpu_mask
from ..knobs.setting import SWITCH_PLACE, Place, Setting

NAPI_THREAD, RPS, NONE, NIC = "napi-thread", "rps", "none", "nic"
EMBEDDED_MODES = (NAPI_THREAD, RPS, NONE)
# The default for the embedded testbed; docs/receive-path.md has the measurements behind it.
DEFAULT = NAPI_THREAD
PFIFO_LIMIT = 1000  # packets: the backpressure qdisc on each transmitting veth (napi-thread)


class SteeringError(ValueError):
    pass


def check(mode: str) -> str:
    if mode not in EMBEDDED_MODES:
        raise SteeringError(f"receive steering {mode!r}: one of {', '.join(EMBEDDED_MODES)}")
    return mode


def describe(mode: str) -> str:
    """One line for testbed notes and figure labels."""
    return {NAPI_THREAD: "threaded NAPI pinned to each side's CPUs (GSO stands in for TSO)",
            RPS: "RPS to each side's CPUs (an IPI per handed-over batch)",
            NONE: "kernel default (receive processing on the sender's CPU)",
            NIC: "the NIC's IRQ steering"}[mode]


def sends_tso(mode: str, tso: bool) -> bool:
    """Whether the sender's veth really does TSO: not with napi-thread (see the module doc)."""
    return tso and mode != NAPI_THREAD


def receive_gro(mode: str, gro: bool) -> tuple[bool, str | None]:
    """How a receiving veth realises a step's GRO: (the GRO flag, its gro_max_size, None = as the
    host had it). napi-thread needs NAPI mode, which GRO gives: a step without GRO keeps GRO on with
    gro_max_size 0, so nothing merges (docs/embedded-testbed.md: the ledger). XDP would give NAPI too,
    but veth then copies every non-linear skb into a page-pool page, a copy no NIC makes."""
    if mode != NAPI_THREAD:
        return gro, None
    return True, None if gro else "0"


def settings(tb, arfs_entries: int | None) -> list[Setting]:
    """The embedded testbed's steering knobs for one point (after offloads and MTU): RPS masks,
    RFS tables (arfs_entries, or None without aRFS), and for napi-thread the ACK path's NAPI,
    threads, their affinity and the backpressure qdisc. Pure: no host touched."""
    mode = tb.rx_steering
    out: list[Setting] = []
    endpoints = tb.senders + tb.receivers
    for ep in endpoints:
        out.append(Setting(Place.of_role(ep.role), KNOBS["rps_cpus"], f"{ep.iface}/rx-0",
                           cpu_mask(ep.cpus) if mode == RPS else "0"))
    for r in tb.receivers:
        out.append(Setting(Place.of_role(r.role), KNOBS["rps_flow_cnt"], f"{r.iface}/rx-0", str(arfs_entries or 0)))
    out.append(Setting(Place.of_machine(tb.receiver.machine), KNOBS["sysctl"], "net.core.rps_sock_flow_entries",
                       str(arfs_entries) if arfs_entries else None))
    if mode != NAPI_THREAD:
        return out
    # ACKs (and replies) take the same path back: the receiver's veth transmits without TSO,
    # and the sender's veth runs NAPI (GRO on) in a thread on the sender's CPUs.
    for s in tb.senders:
        out.append(Setting(Place.of_role(s.role), KNOBS["offload.gro"], s.iface, "on"))
    for r in tb.receivers:
        out.append(Setting(Place.of_role(r.role), KNOBS["offload.tso"], r.iface, "off"))
    if tb.switch is not None:  # bridged: the port that transmits into each endpoint, too
        for port in tb.switch_ports:
            out += [Setting(SWITCH_PLACE, KNOBS["offload.tso"], port, "off"),
                    Setting(SWITCH_PLACE, KNOBS["qdisc"], port, f"pfifo limit {PFIFO_LIMIT}")]
    for ep in endpoints:
        at = Place.of_role(ep.role)
        out += [Setting(at, KNOBS["qdisc"], ep.iface, f"pfifo limit {PFIFO_LIMIT}"),
                Setting(at, KNOBS["napi_threaded"], ep.iface, "1"),
                Setting(at, KNOBS["napi_affinity"], ep.iface, ",".join(map(str, ep.cpus)))]
    return out
