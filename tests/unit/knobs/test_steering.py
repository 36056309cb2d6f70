"""RPS (hostnet.knobs.steering): CPU masks normalised, queue keys and values validated."""
import pytest

from conftest import FakeHost
from hostnet.knobs import KnobError, RpsCpus, cpu_mask


def test_rps_mask_normalised_and_validated():
    assert cpu_mask([1]) == "2" and cpu_mask([0, 1]) == "3" and cpu_mask([4]) == "10"
    k = RpsCpus()
    host = FakeHost(files={"/sys/class/net/v0/queues/rx-0/rps_cpus": "00000000\n"})
    k.write(host, "v0/rx-0", "2")
    assert host.files["/sys/class/net/v0/queues/rx-0/rps_cpus"] == "2\n"
    with pytest.raises(KnobError, match="IFACE/rx-N"):
        k.path("../../etc/passwd")
    with pytest.raises(KnobError, match="hex"):
        k.validate("v0/rx-0", "2; reboot")
