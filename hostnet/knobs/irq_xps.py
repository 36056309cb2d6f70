"""XPS masks, IRQ affinity and irqbalance: where transmit queues and NIC interrupts run."""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from .base import is_count, Knob, KnobError
from .steering import RpsCpus

_CPU_LIST = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z")


class XpsCpus(RpsCpus):
    """Transmit packet steering: which CPUs use tx queue N. Key "IFACE/tx-N"."""

    name = "xps_cpus"
    filename = "xps_cpus"
    direction = "tx"


def parse_cpu_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]."""
    text = text.strip()
    if not _CPU_LIST.match(text):
        raise KnobError(f"{text!r} is not a CPU list like 0-3,6")
    cpus = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


# A virtio NIC's device is the virtio device; its MSI-X vectors belong to the PCI function above it
# (the NIC rehearsal's virtio-net guests: device/msi_irqs does not exist, and the NIC looked like veth).
# A device without MSI (the rehearsal's e1000, or a host booted with pci=nomsi) has its legacy INTx
# line in device/irq instead: without it, irq_cpus was silently not applied there either.
_MSI_IRQS = ('d=/sys/class/net/$1/device; case "$(readlink "$d/subsystem")" in */virtio) d=$d/..;; esac; '
             'if [ -d "$d/msi_irqs" ]; then ls "$d/msi_irqs"; else cat "$d/irq"; fi')


def queue_irqs(host: Host, iface: str) -> list[int]:
    """The MSI(-X) interrupts of a NIC (a virtio NIC's are its PCI function's), or its legacy INTx
    line where it has no MSI (a line other devices may share: its affinity moves theirs too); empty
    for virtual devices such as veth (no device, or IRQ 0)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", iface):
        raise KnobError(f"not an interface name: {iface!r}")
    res = host.run(["sh", "-c", _MSI_IRQS, "sh", iface], check=False)
    return sorted(int(x) for x in res.stdout.split() if is_count(x) and int(x)) if res.returncode == 0 else []


class IrqAffinity(Knob):
    """/proc/irq/N/smp_affinity_list. Key: the IRQ number."""

    name = "irq_affinity"
    scope = "global"

    def _path(self, key: str) -> str:
        if not is_count(str(key)):
            raise KnobError(f"irq_affinity: key must be an IRQ number, not {key!r}")
        return f"/proc/irq/{key}/smp_affinity_list"

    def read(self, host: Host, key: str) -> str:
        try:
            return host.read_text(self._path(key)).strip()
        except HostError as exc:
            raise KnobError(f"{host.name}: IRQ {key} has no affinity file ({exc})") from exc

    def normalize(self, value: str) -> str:
        return ",".join(map(str, parse_cpu_list(str(value))))

    def validate(self, key: str, value: str) -> None:
        self._path(key)
        parse_cpu_list(str(value))

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.write_text(self._path(key), f"{value}\n")


class Irqbalance(Knob):
    """Whether the irqbalance daemon runs (it would move IRQs under a measurement).

    Key: "service". Values: "running" / "stopped". Needs systemd to start/stop it.
    """

    name = "irqbalance"
    scope = "global"

    def available(self, host: Host, key: str = "service") -> tuple[bool, str]:
        if not host.which("irqbalance"):
            return False, f"{host.name}: irqbalance is not installed (nothing to stop)"
        if not host.which("systemctl"):
            return False, f"{host.name}: no systemctl to stop/start irqbalance"
        return True, ""

    def read(self, host: Host, key: str = "service") -> str:
        res = host.run(["systemctl", "is-active", "irqbalance"], check=False)
        return "running" if res.stdout.strip() == "active" else "stopped"

    def validate(self, key: str, value: str) -> None:
        if value not in ("running", "stopped"):
            raise KnobError(f"irqbalance: value must be running or stopped, not {value!r}")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.run(["systemctl", "start" if value == "running" else "stop", "irqbalance"])
