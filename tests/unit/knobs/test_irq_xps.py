"""IRQ affinity, irqbalance and XPS (hostnet.knobs.irq_xps), through the commands and files they touch."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import IrqAffinity, Irqbalance, KnobError, XpsCpus
from hostnet.knobs.irq_xps import parse_cpu_list, queue_irqs


def test_irq_affinity_and_cpu_lists():
    assert parse_cpu_list("0-2,5") == [0, 1, 2, 5]
    host = FakeHost(files={"/proc/irq/45/smp_affinity_list": "0-3\n"})
    k = IrqAffinity()
    k.write(host, "45", "1")
    assert host.files["/proc/irq/45/smp_affinity_list"] == "1\n"
    with pytest.raises(KnobError):
        k.validate("45", "1;2")
    with pytest.raises(KnobError, match="IRQ number"):
        k.read(host, "../../etc/passwd")


def test_irqbalance_unavailable_without_daemon():
    ok, why = Irqbalance().available(FakeHost())
    assert not ok and "not installed" in why
    host = FakeHost(handlers={"irqbalance": None, "systemctl": lambda a, h: (0, "active\n", "")})
    host.handlers.pop("irqbalance")
    host.handlers["irqbalance"] = lambda a, h: (0, "", "")
    assert Irqbalance().read(host) == "running"
    Irqbalance().write_unverified(host, "service", "stopped")
    assert ["systemctl", "stop", "irqbalance"] in host.commands


def test_xps_key_shape():
    assert XpsCpus().path("eth1/tx-3") == "/sys/class/net/eth1/queues/tx-3/xps_cpus"
    with pytest.raises(KnobError):
        XpsCpus().path("eth1/rx-3")


def _sysfs(tmp_path, virtio: bool):
    pci = tmp_path / "pci0000:00" / "0000:00:0c.0"
    dev = pci / "virtio10" if virtio else pci
    (pci / "msi_irqs").mkdir(parents=True)
    for irq in (48, 49, 50):
        (pci / "msi_irqs" / str(irq)).write_text("msix\n")
    dev.mkdir(exist_ok=True)
    (tmp_path / "bus" / ("virtio" if virtio else "pci")).mkdir(parents=True)
    (dev / "subsystem").symlink_to(tmp_path / "bus" / ("virtio" if virtio else "pci"))
    (tmp_path / "net" / "data0").mkdir(parents=True)
    (tmp_path / "net" / "data0" / "device").symlink_to(dev)
    return tmp_path / "net"


def test_queue_irqs_finds_a_virtio_nic_s_vectors_on_its_pci_function(tmp_path):
    """The NIC rehearsal's virtio-net guests: /sys/class/net/IFACE/device is the virtio device, with
    no msi_irqs of its own; its vectors (virtioN-input.0, -output.0, -config) are the PCI function's,
    one level up. Found there, a virtio NIC is no longer taken for one without interrupts (veth).
    The fixed script runs in this machine's sh over a fake sysfs tree."""
    import subprocess
    for virtio in (True, False):
        net = _sysfs(tmp_path / str(virtio), virtio)

        def sh(argv, host, net=net):
            script = argv[2].replace("/sys/class/net", str(net))
            out = subprocess.run(["sh", "-c", script, "sh", *argv[4:]], capture_output=True, text=True)
            return out.returncode, out.stdout, out.stderr
        assert queue_irqs(FakeHost(handlers={"sh": sh}), "data0") == [48, 49, 50], virtio
    veth = FakeHost(handlers={"sh": lambda argv, h: (2, "", "ls: cannot access: No such file or directory")})
    assert queue_irqs(veth, "veth0") == []


def test_a_nic_without_msi_is_found_on_its_legacy_intx_line(tmp_path):
    """The NIC rehearsal's e1000 (82540EM) has no msi_irqs: its interrupt is the legacy line in
    device/irq (captured: 20, `IO-APIC 20-fasteoi data0`), which irq_cpus now places instead of
    silently nothing. A device whose irq reads 0 has none."""
    import subprocess
    pci = tmp_path / "pci0000:00" / "0000:00:03.0"
    pci.mkdir(parents=True)
    (pci / "irq").write_text(fixture_text("nic-rehearsal/e1000_device_irq.txt"))
    (tmp_path / "bus" / "pci").mkdir(parents=True)
    (pci / "subsystem").symlink_to(tmp_path / "bus" / "pci")
    (tmp_path / "net" / "data0").mkdir(parents=True)
    (tmp_path / "net" / "data0" / "device").symlink_to(pci)

    def sh(argv, host):
        script = argv[2].replace("/sys/class/net", str(tmp_path / "net"))
        out = subprocess.run(["sh", "-c", script, "sh", *argv[4:]], capture_output=True, text=True)
        return out.returncode, out.stdout, out.stderr
    host = FakeHost(handlers={"sh": sh})
    assert queue_irqs(host, "data0") == [20]
    (pci / "irq").write_text("0\n")
    assert queue_irqs(host, "data0") == []
