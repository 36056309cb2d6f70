"""NIC rings and channels (hostnet.knobs.nic): bounded by the device's maxima, unsupported on
veth with the reason. This machine has no NIC with rings: tested through the commands built."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import Channels, KnobError, RingSize


# `ethtool -g` of a NIC, in ethtool 6.1's layout (this VM has no NIC with rings to capture from).
NIC_RINGS = """Ring parameters for eth1:
Pre-set maximums:
RX:\t\t8192
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t8192
Current hardware settings:
RX:\t\t1024
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t1024
"""


def ethtool_returning(show_output, rc=0, err=""):
    return FakeHost(handlers={"ethtool": lambda argv, h: (rc, show_output, err) if argv[1] in ("-g", "-l", "-n")
                              else (0, "", "")})


def test_rings_bounded_by_device_maximum():
    host = ethtool_returning(NIC_RINGS)
    rx = RingSize("rx")
    assert rx.read(host, "eth1") == "1024"
    with pytest.raises(KnobError, match="at most 8192"):
        rx.write_unverified(host, "eth1", "16384")
    assert not any(c[1] == "-G" for c in host.commands)
    rx.write_unverified(host, "eth1", "4096")
    assert ["ethtool", "-G", "eth1", "rx", "4096"] in host.commands


def test_rings_unsupported_on_veth_says_why():
    host = ethtool_returning(fixture_text("ethtool_g_veth.txt"), rc=1)
    ok, why = RingSize("rx").available(host, "veth0")
    assert not ok and "does not support ethtool -g" in why and "Operation not supported" in why


def test_channels_parsed_from_veth():
    host = ethtool_returning(fixture_text("ethtool_l_veth.txt"))
    assert Channels("rx").read(host, "veth0") == "1"
    with pytest.raises(KnobError, match="at most 2"):
        Channels("rx").write_unverified(host, "veth0", "3")
    Channels("tx").write_unverified(host, "veth0", "2")
    assert ["ethtool", "-L", "veth0", "tx", "2"] in host.commands
    with pytest.raises(KnobError, match="no channels combined"):
        Channels("combined").read(host, "veth0")
