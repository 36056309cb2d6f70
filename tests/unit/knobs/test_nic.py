"""NIC rings, channels and coalescing (hostnet.knobs.nic): bounded by the device's maxima,
unsupported on veth with the reason, and as an emulated e1000e answers (the NIC rehearsal's guests,
tests/fixtures/nic-rehearsal/); tested through the commands built."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import Channels, Coalesce, KnobError, RingSize
from hostnet.knobs.nic import parse_coalesce


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


@pytest.mark.parametrize("knob,fixture,flag", [
    (RingSize("rx"), "ethtool_g_veth.txt", "-g"),  # veth has no rings
    (Channels("combined"), "nic-rehearsal/e1000e_ethtool_l.txt", "-l"),  # e1000e has no channels
])
def test_a_device_without_the_setting_says_why_in_the_driver_s_words(knob, fixture, flag):
    host = ethtool_returning(fixture_text(fixture), rc=1)
    ok, why = knob.available(host, "data0")
    assert not ok and f"does not support ethtool {flag}" in why and "Operation not supported" in why


def test_channels_parsed_from_veth():
    host = ethtool_returning(fixture_text("ethtool_l_veth.txt"))
    assert Channels("rx").read(host, "veth0") == "1"
    with pytest.raises(KnobError, match="at most 2"):
        Channels("rx").write_unverified(host, "veth0", "3")
    Channels("tx").write_unverified(host, "veth0", "2")
    assert ["ethtool", "-L", "veth0", "tx", "2"] in host.commands
    with pytest.raises(KnobError, match="no channels combined"):
        Channels("combined").read(host, "veth0")


# --- captured from the NIC rehearsal's guests (tests/fixtures/nic-rehearsal/README.md) ---

def rehearsal(name: str) -> str:
    return fixture_text(f"nic-rehearsal/{name}")


def test_e1000e_rings_read_and_bounded_by_the_driver_s_maximum():
    host = ethtool_returning(rehearsal("e1000e_ethtool_g.txt"))
    assert RingSize("rx").read(host, "data0") == "256"
    with pytest.raises(KnobError, match="at most 4096"):
        RingSize("rx").write_unverified(host, "data0", "8192")
    assert not any(c[1] == "-G" for c in host.commands)  # refused before the driver is asked


def test_coalesce_parsed_from_e1000e():
    got = parse_coalesce(rehearsal("e1000e_ethtool_c.txt"))
    assert got["rx-usecs"] == "3" and got["tx-usecs"] == "n/a" and got["adaptive-rx"] == "n/a"
    assert "coalesce parameters for data0" not in got and "cqe" not in got


def test_coalesce_reads_a_field_the_driver_has_and_refuses_one_it_lacks():
    host = ethtool_returning(rehearsal("e1000e_ethtool_c.txt"))
    host.handlers["ethtool"] = lambda argv, h: (0, rehearsal("e1000e_ethtool_c.txt"), "")
    assert Coalesce("rx-usecs").read(host, "data0") == "3"
    ok, why = Coalesce("tx-usecs").available(host, "data0")
    assert not ok and "no coalescing setting tx-usecs" in why


def test_coalesce_a_value_the_driver_refuses_is_an_error_with_its_words():
    refused = rehearsal("e1000e_ethtool_C_rx-usecs_7.txt")
    host = FakeHost(handlers={"ethtool": lambda argv, h: (0, rehearsal("e1000e_ethtool_c.txt"), "")
                              if argv[1] == "-c" else (1, "", refused)})
    with pytest.raises(KnobError, match="Invalid argument"):
        Coalesce("rx-usecs").write(host, "data0", "7")
    assert ["ethtool", "-C", "data0", "rx-usecs", "7"] in host.commands


def test_coalesce_a_value_the_driver_rounds_is_caught_on_read_back():
    text = rehearsal("e1000e_ethtool_c.txt")  # rx-usecs stays 3 whatever is written: a rounding driver
    host = FakeHost(handlers={"ethtool": lambda argv, h: (0, text, "")})
    with pytest.raises(KnobError, match="reads back '3' after writing '30'"):
        Coalesce("rx-usecs").write(host, "data0", "30")


def test_coalesce_validates_before_writing():
    with pytest.raises(KnobError, match="not a count"):
        Coalesce("rx-usecs").validate("data0", "fast")
    with pytest.raises(KnobError, match="on or off"):
        Coalesce("adaptive-rx").validate("data0", "1")
    with pytest.raises(KnobError, match="field must be one of"):
        Coalesce("rx-nsecs")
