"""DDIO ways and the IOMMU state (hostnet.knobs.platform): unavailable on AMD and in VMs, built
on Intel; the IOMMU is read-only."""
import pytest

from conftest import FakeHost
from hostnet.knobs import DdioWays, Iommu, KnobError
from hostnet.knobs.platform import iommu_state


def test_ddio_unavailable_on_amd_and_in_vms_and_built_on_intel():
    amd = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: AuthenticAMD\nflags\t\t: fpu hypervisor\n"})
    ok, why = DdioWays().available(amd)
    assert not ok and "AuthenticAMD" in why
    vm = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu hypervisor\n"})
    assert "virtual machine" in DdioWays().available(vm)[1]
    metal = FakeHost(files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n"},
                     handlers={"rdmsr": lambda a, h: (0, "600\n", ""), "wrmsr": lambda a, h: (0, "", "")})
    assert DdioWays().read(metal) == "0x600"
    assert ["rdmsr", "-a", "0xc8b"] in metal.commands  # every CPU, as write() sets every CPU
    DdioWays().write_unverified(metal, "llc_ways", "0x7ff")
    assert ["wrmsr", "-a", "0xc8b", "0x7ff"] in metal.commands
    with pytest.raises(KnobError):
        DdioWays().validate("llc_ways", "7ff; reboot")


def test_iommu_is_read_only():
    assert iommu_state("root=/dev/vda intel_iommu=on", ["dmar0"]) == "on"
    assert iommu_state("intel_iommu=off", ["dmar0"]) == "off"
    assert iommu_state("iommu=pt", ["dmar0"]) == "passthrough"
    assert iommu_state("console=ttyS0", []) == "off"
    host = FakeHost(files={"/proc/cmdline": "console=ttyS0\n"}, handlers={"ls": lambda a, h: (2, "", "")})
    ok, why = Iommu().available(host)
    assert not ok and "reboot" in why and "now: off" in why
    with pytest.raises(KnobError, match="read-only"):
        Iommu().write(host, "state", "on")


def test_ddio_zero_reads_as_0x0_and_cpus_that_disagree_are_refused():
    def metal(rdmsr_out):
        return FakeHost(files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n"},
                        handlers={"rdmsr": lambda a, h: (0, rdmsr_out, ""), "wrmsr": lambda a, h: (0, "", "")})
    assert DdioWays().read(metal("0\n0\n")) == "0x0"
    assert DdioWays().normalize(DdioWays().read(metal("0\n0\n"))) == "0x0"
    with pytest.raises(KnobError, match="differ across CPUs .0x600, 0x7f0."):
        DdioWays().read(metal("600\n7f0\n"))


def test_ddio_masks_relative_to_the_hosts_own_resolve_from_the_journals_prior():
    """A sweep point names a mask without knowing the host: own-mask is the prior written back,
    lowest-way its lowest way alone; a prior of 0x0 (already minimal or off) has neither."""
    knob, host = DdioWays(), FakeHost("rx")
    for value in ("own-mask", "lowest-way", "0x600"):
        knob.validate("llc_ways", value)
    with pytest.raises(KnobError, match="own-mask or lowest-way"):
        knob.validate("llc_ways", "half")
    assert knob.resolve(host, "llc_ways", "own-mask", "0x600") == "0x600"
    assert knob.resolve(host, "llc_ways", "lowest-way", "0x600") == "0x200"
    assert knob.resolve(host, "llc_ways", "0x7ff", "0x600") == "0x7ff"
    for prior in ("0x0", "0x", None):
        with pytest.raises(KnobError, match="already minimal or off"):
            knob.resolve(host, "llc_ways", "lowest-way", prior)
