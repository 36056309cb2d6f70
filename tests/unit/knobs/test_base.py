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


def test_a_setting_that_already_reads_as_the_value_is_read_not_written():
    class Counting(FakeHost):
        writes = 0

        def write_text(self, path, text):
            self.writes += 1
            super().write_text(path, text)
    host = Counting(files={sysctl_path("net.ipv4.tcp_rmem"): "4096\t131072\t6291456\n"})
    Sysctl().write(host, "net.ipv4.tcp_rmem", "4096  131072 6291456")  # the same, as normalize reads it
    assert host.writes == 0
    Sysctl().write(host, "net.ipv4.tcp_rmem", "4 5 6")
    assert host.writes == 1 and host.read_text(sysctl_path("net.ipv4.tcp_rmem")).split() == ["4", "5", "6"]


def test_a_host_that_stops_answering_during_the_first_read_is_not_written_to():
    from hostnet.hosts import HostUnreachable

    class Gone(FakeHost):
        def read_text(self, path):
            raise HostUnreachable("fake: ssh: connect to host: Connection refused")

        def write_text(self, path, text):
            raise AssertionError("written after the host stopped answering")
    with pytest.raises(KnobError, match="Connection refused") as err:
        Sysctl().write(Gone(), "net.ipv4.tcp_rmem", "4 5 6")
    assert isinstance(err.value.__cause__, HostUnreachable)  # what a sweep waits for the host on
