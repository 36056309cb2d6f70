"""IRQ affinity, irqbalance and XPS (hostnet.knobs.irq_xps), through the commands and files they touch."""
import pytest

from conftest import FakeHost
from hostnet.knobs import IrqAffinity, Irqbalance, KnobError, XpsCpus
from hostnet.knobs.irq_xps import parse_cpu_list


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
