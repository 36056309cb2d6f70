"""Sysctls and congestion control (hostnet.knobs.sysctl): scope, names, value shapes, and an
unsupported algorithm named with the available ones."""
import pytest

from conftest import FakeHost
from hostnet.knobs import KNOBS, AllowedCongestionControl, CongestionControl, KnobError, Sysctl
from hostnet.knobs.sysctl import sysctl_path


def test_sysctl_scope_and_names():
    assert Sysctl.scope_of("net.core.rps_sock_flow_entries") == "global"
    assert Sysctl.scope_of("net.ipv4.tcp_rmem") == "netns"
    with pytest.raises(KnobError):
        sysctl_path("net/../../x")
    ok, why = Sysctl().available(FakeHost(), "net.core.busy_poll")
    assert not ok and "not available" in why


def test_congestion_control_unsupported_names_available_ones():
    host = FakeHost(files={"/proc/sys/net/ipv4/tcp_available_congestion_control": "reno bbr cubic\n",
                           "/proc/sys/net/ipv4/tcp_congestion_control": "bbr\n"})
    with pytest.raises(KnobError, match="dctcp is unsupported.*reno bbr cubic"):
        CongestionControl().write(host, "net.ipv4.tcp_congestion_control", "dctcp")
    CongestionControl().write(host, "net.ipv4.tcp_congestion_control", "cubic")
    assert host.files["/proc/sys/net/ipv4/tcp_congestion_control"] == "cubic\n"


def test_an_algorithm_is_added_to_the_allowed_list_and_the_prior_list_written_back_whole():
    """A child namespace may default only to an allowed algorithm (EPERM here for cubic: allowed is
    "reno bbr"). The point adds its algorithm; the journal's restore writes the prior list exactly."""
    key = "net.ipv4.tcp_allowed_congestion_control"
    path = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    host = FakeHost(files={path: "reno bbr\n"})
    knob = AllowedCongestionControl()
    assert knob.scope_of(key) == "global"
    assert knob.resolve(host, key, "+cubic") == "reno bbr cubic"  # what the journal and the manifest hold
    knob.write(host, key, "+cubic")
    assert host.files[path] == "reno bbr cubic\n"
    knob.write(host, key, "+bbr")  # allowed already: left alone
    assert host.files[path] == "reno bbr cubic\n"
    knob.write(host, key, "reno bbr")  # the restore: the whole prior list
    assert host.files[path] == "reno bbr\n"
    for bad in ("+cubic; rm", "cubic\nbbr", ""):
        with pytest.raises(KnobError):
            knob.validate(key, bad)
    with pytest.raises(KnobError, match="key must be"):
        knob.validate("net.ipv4.tcp_congestion_control", "+cubic")


def test_sysctl_value_shapes():
    sysctl = KNOBS["sysctl"]
    sysctl.validate("net.ipv4.tcp_rmem", "4096 131072 6291456")
    for key, bad in (("net.ipv4.tcp_rmem", "6291456 4096 1"), ("net.core.netdev_budget", "300\n1"),
                     ("net.core.rmem_max", "-1"), ("net.ipv4.tcp_ecn", "1\n")):
        with pytest.raises(KnobError):
            sysctl.validate(key, bad)
