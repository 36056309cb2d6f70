"""Every NIC-facing knob tried against a real driver: set and read back, or refused with the
driver's own words, all through the testbed's journal and put back at the end. Run on the NIC
rehearsal's guests (guests.py: e1000e, virtio-net) it is the table docs/nic-rehearsal.md keeps; on a
researcher's servers it shows, before a campaign, what their NIC accepts.

A trial's outcome is "set" (written and read back as asked), "refused" (the knob or the driver said
no: the message says which) or "unsupported" (the device has no such setting: nothing was tried).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hosts import Host, HostError
from ..knobs import KNOBS, Knob, KnobError, queue_irqs
from ..knobs.nic import parse_ethtool_sections
from ..parsers.counters import parse_irq_names
from .base import Testbed


@dataclass
class Trial:
    knob: str
    key: str
    asked: str
    outcome: str  # set | refused | unsupported
    before: str | None
    after: str | None
    restored: bool | None  # reads as `before` again after the journal's restore (None: nothing changed)
    message: str

    def row(self) -> dict:
        return asdict(self)


def plan(host: Host, iface: str) -> list[tuple[Knob, str, str]]:
    """(knob, key, value) for one data interface: values a server's NIC takes, and some it should
    refuse (a ring above its maximum, a coalescing value drivers cannot program, channels a
    one-queue NIC does not have, an aRFS filter on a NIC without ntuple)."""
    rx_max = parse_ethtool_sections(host.run(["ethtool", "-g", iface], check=False).stdout).get("max", {}).get("rx", "")
    ring_max = int(rx_max) if rx_max.isdigit() else 0
    trials = [(KNOBS["ring.rx"], iface, "512"), (KNOBS["ring.tx"], iface, "512"),
              (KNOBS["ring.rx"], iface, str(8 * ring_max if ring_max else 8192)),
              (KNOBS["coalesce.rx-usecs"], iface, "30"), (KNOBS["coalesce.rx-usecs"], iface, "7"),
              (KNOBS["coalesce.tx-usecs"], iface, "30"), (KNOBS["coalesce.adaptive-rx"], iface, "on"),
              (KNOBS["offload.tso"], iface, "off"), (KNOBS["offload.gso"], iface, "off"),
              (KNOBS["offload.gro"], iface, "off"), (KNOBS["offload.lro"], iface, "on"),
              (KNOBS["offload.ntuple"], iface, "on"),
              (KNOBS["channels.combined"], iface, "2"),
              (KNOBS["ntuple_rule"], f"{iface}/0", "flow-type tcp4 dst-port 5201 action 0"),
              (KNOBS["mtu"], iface, "9000")]
    last_cpu = str(int(host.run(["nproc"]).stdout.strip() or 1) - 1)  # a vector moved where the host has a CPU
    return trials + [(KNOBS["irq_affinity"], str(irq), last_cpu) for irq in queue_irqs(host, iface)]


def try_one(tb: Testbed, host: Host, knob: Knob, key: str, value: str) -> Trial:
    ok, why = knob.available(host, key)
    if not ok:
        return Trial(knob.name, key, value, "unsupported", None, None, None, why)
    before = knob.read(host, key)
    try:
        tb.journal.set(host, knob, key, value)
    except KnobError as exc:
        return Trial(knob.name, key, value, "refused", before, _read(knob, host, key), None, str(exc))
    return Trial(knob.name, key, value, "set", before, _read(knob, host, key), None, "")


def _read(knob: Knob, host: Host, key: str) -> str | None:
    try:
        return knob.read(host, key)
    except (KnobError, HostError):
        return None


def run(tb: Testbed, role: str = "receiver") -> tuple[list[Trial], dict[int, str]]:
    """Try every planned knob on `role`'s data interface, then restore the journal and check each
    setting reads as it did. Returns the trials and the NIC's MSI-X vectors by the names its
    driver gave them (/proc/interrupts)."""
    e = tb.endpoints[role]
    names = parse_irq_names(e.host.read_text("/proc/interrupts"))
    vectors = {irq: names.get(irq, "?") for irq in queue_irqs(e.host, e.iface)}
    trials = []
    try:
        for knob, key, value in plan(e.host, e.iface):
            trials.append(try_one(tb, e.host, knob, key, value))
    finally:
        problems = tb.journal.restore(keep_lock=True)
    if problems:
        raise KnobError("could not restore: " + "; ".join(problems))
    for t in trials:
        if t.before is not None and t.after != t.before:
            t.restored = KNOBS[t.knob].normalize(_read(KNOBS[t.knob], e.host, t.key) or "") == \
                KNOBS[t.knob].normalize(t.before)
    return trials, vectors


def markdown(trials: list[Trial], driver: str) -> str:
    lines = [f"| knob ({driver}) | key | asked | outcome | before → after | restored | the driver's / knob's words |",
             "|---|---|---|---|---|---|---|"]
    for t in trials:
        change = f"{t.before} → {t.after}" if t.before is not None else ""
        restored = "" if t.restored is None else ("yes" if t.restored else "NO")
        lines.append(f"| {t.knob} | {t.key} | {t.asked} | {t.outcome} | {change} | {restored} | "
                     f"{t.message.replace('|', '/')[:160]} |")
    return "\n".join(lines)
