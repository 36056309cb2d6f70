"""Platform features the paper varies but a VM or an AMD host lacks: DDIO ways and the IOMMU.

Both say why they are unavailable instead of guessing; the IOMMU is read-only (kernel command
line + reboot).
"""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from .base import Knob, KnobError

DDIO_MSR = "0xc8b"  # IIO LLC WAYS on Intel Xeon Scalable parts with DDIO
OWN_MASK, LOWEST_WAY = "own-mask", "lowest-way"
RELATIVE_MASKS = (OWN_MASK, LOWEST_WAY)


class DdioWays(Knob):
    """Key: "llc_ways". Value: the way mask as hex (e.g. 0x600, the usual 2-way default), or one
    relative to the host's own mask (the journal's prior), which a sweep point names without
    knowing the host: OWN_MASK (write the prior back) or LOWEST_WAY (its lowest way alone)."""

    name = "ddio_ways"
    scope = "global"

    def available(self, host: Host, key: str = "llc_ways") -> tuple[bool, str]:
        try:
            cpuinfo = host.read_text("/proc/cpuinfo")
        except HostError as exc:
            return False, str(exc)
        vendor = re.search(r"vendor_id\s*:\s*(\S+)", cpuinfo)
        if not vendor or vendor.group(1) != "GenuineIntel":
            return False, (f"{host.name}: DDIO is an Intel Xeon feature; this CPU is "
                           f"{vendor.group(1) if vendor else 'unknown'}")
        if "hypervisor" in cpuinfo.split("flags", 1)[-1].split("\n", 1)[0]:
            return False, f"{host.name}: a virtual machine cannot reach the IIO MSR"
        if not (host.which("rdmsr") and host.which("wrmsr")):
            return False, f"{host.name}: rdmsr/wrmsr missing (Debian: msr-tools) or msr module not loaded"
        return True, ""

    def read(self, host: Host, key: str = "llc_ways") -> str:
        """The mask every CPU reads (write() sets all of them); a host whose CPUs disagree is refused,
        since one journaled value could not put each back."""
        ok, why = self.available(host, key)
        if not ok:
            raise KnobError(why)
        out = host.run(["rdmsr", "-a", DDIO_MSR]).stdout.split()
        try:
            masks = {int(word, 16) for word in out}
        except ValueError as exc:
            raise KnobError(f"{host.name}: rdmsr {DDIO_MSR} printed {' '.join(out)[:80]!r}, not hex") from exc
        if len(masks) != 1:
            raise KnobError(f"{host.name}: DDIO ways differ across CPUs ({', '.join(map(hex, sorted(masks)))}); "
                            f"hostnet changes only a uniform mask, so that a restore puts every CPU back")
        return hex(masks.pop())

    def normalize(self, value: str) -> str:
        return hex(int(str(value), 16))

    def validate(self, key: str, value: str) -> None:
        if value not in RELATIVE_MASKS and not re.fullmatch(r"0x[0-9a-fA-F]{1,5}", str(value)):
            raise KnobError(f"ddio_ways: {value!r} is not a hex way mask like 0x600, {OWN_MASK} or {LOWEST_WAY}")

    def resolve(self, host: Host, key: str, value: str, prior: str | None = None) -> str:
        if value not in RELATIVE_MASKS:
            return value
        mask = int(prior, 16) if prior and prior.strip("0x") else 0  # an all-zero mask reads as "0x"
        if mask == 0:
            # already minimal or off: neither "the host's own DDIO" nor "one way of it" would be true
            raise KnobError(f"{host.name}: DDIO way mask reads {prior or '0x0'} (already minimal or off); "
                            f"{value} needs the host's own mask")
        return hex(mask) if value == OWN_MASK else hex(mask & -mask)

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        host.run(["wrmsr", "-a", DDIO_MSR, str(value)])


def iommu_state(cmdline: str, iommu_devices: list[str]) -> str:
    """'on' when the kernel has an active IOMMU, 'off' when disabled or absent."""
    flags = dict(tok.split("=", 1) for tok in cmdline.split() if "=" in tok)
    if flags.get("intel_iommu") == "off" or flags.get("amd_iommu") == "off" or flags.get("iommu") == "off":
        return "off"
    if flags.get("iommu") == "pt":
        return "passthrough"
    return "on" if iommu_devices else "off"


class Iommu(Knob):
    """Read-only: whether DMA goes through an IOMMU. Key: "state"."""

    name = "iommu"
    scope = "global"

    def read(self, host: Host, key: str = "state") -> str:
        cmdline = host.read_text("/proc/cmdline")
        res = host.run(["ls", "/sys/class/iommu"], check=False)
        return iommu_state(cmdline, res.stdout.split() if res.returncode == 0 else [])

    def available(self, host: Host, key: str = "state") -> tuple[bool, str]:
        return False, (f"{host.name}: the IOMMU is set on the kernel command line (intel_iommu=on|off, "
                       f"amd_iommu=...) and needs a reboot; hostnet only reads it (now: {self.read(host)})")

    def write_unverified(self, host: Host, key: str, value: str) -> None:
        raise KnobError("iommu is read-only: change the kernel command line and reboot")
