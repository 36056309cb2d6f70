"""The eBPF latency probe (hostnet.probes.latency): its bpftrace script refuses injection."""
import pytest

from hostnet.probes.latency import script


def test_script_refuses_injection():
    assert 'str(args->name) == "veth0"' in script(["veth0"], "iperf3")
    assert "nsecs % 8" in script(["veth0"], "iperf3", 8)
    for bad in (['x" || 1 == 1 || "'], ["a b"]):
        with pytest.raises(ValueError):
            script(bad, "iperf3")
    with pytest.raises(ValueError):
        script(["veth0"], 'iperf3"; system("id')
