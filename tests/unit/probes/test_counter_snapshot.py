"""The endpoint counter snapshot in one command (hostnet.probes.counters._SNAPSHOT_SH), run by a real
sh on this machine's loopback: its sections are what the four separate commands print."""
import json

import pytest

from hostnet.hosts import HostError, LocalHost
from hostnet.probes.counters import EndpointCounterProbe, split_sections


def test_one_snapshot_command_gives_each_file_as_its_own_command_would():
    host = LocalHost()
    snap = EndpointCounterProbe("lo")._snap(host)
    assert snap["snmp.txt"].startswith("Ip: Forwarding") and snap["netstat.txt"].startswith("TcpExt:")
    assert json.loads(snap["link.json"])[0]["ifname"] == "lo"
    # loopback has no driver statistics: ethtool fails, and its section is empty, as before
    assert snap["ethtool_S.txt"] == ""
    assert float(snap["snmp_monotonic_s.txt"]) > 0


def test_a_snapshot_that_fails_is_an_error_naming_the_interface():
    with pytest.raises(HostError, match='Device "nosuchif0" does not exist'):
        EndpointCounterProbe("nosuchif0")._snap(LocalHost())


def test_sections_split_on_the_marker_only():
    text = "M ethtool_S\nNIC statistics:\n     rx: 1\nM snmp\nIp: 1\nM link\n[]\nM netstat\nTcpExt: M snmp\n"
    assert split_sections(text, "M") == {"ethtool_S": "NIC statistics:\n     rx: 1\n", "snmp": "Ip: 1\n",
                                         "link": "[]\n", "netstat": "TcpExt: M snmp\n"}
