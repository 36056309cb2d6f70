"""Knob.write (hostnet.knobs.base): a value that does not read back is an error."""
import pytest

from conftest import FakeHost
from hostnet.knobs import KnobError, Sysctl
from hostnet.knobs.sysctl import sysctl_path


def sysctl_host(**values):
    return FakeHost(files={sysctl_path(k): f"{v}\n" for k, v in values.items()})


def test_read_back_mismatch_is_an_error():
    host = sysctl_host(**{"net.ipv4.tcp_rmem": "1 2 3"})

    class Sticky(Sysctl):
        def write_unverified(self, host, key, value):  # the kernel silently ignores the write
            pass
    with pytest.raises(KnobError, match="reads back"):
        Sticky().write(host, "net.ipv4.tcp_rmem", "4 5 6")
