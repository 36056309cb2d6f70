"""ntuple rules for aRFS (hostnet.knobs.arfs): created, deleted on restore, validated; absent on veth."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import Journal, KnobError, NtupleRule


def ethtool_returning(show_output, rc=0, err=""):
    return FakeHost(handlers={"ethtool": lambda argv, h: (rc, show_output, err) if argv[1] in ("-g", "-l", "-n")
                              else (0, "", "")})


def test_ntuple_rules_are_created_and_deleted_on_restore(tmp_path):
    state = {"present": False}

    def ethtool(argv, host):
        if argv[1] == "-n":
            return (0, "Filter: 7\n", "") if state["present"] else (1, "", "Cannot get RX classification rule")
        state["present"] = argv[3] != "delete"
        return 0, "", ""
    # ip: a host without default routes, so the management guard lets eth1 be changed
    host = FakeHost(handlers={"ethtool": ethtool, "ip": lambda argv, h: (0, "[]", "")})
    j = Journal(tmp_path / "j")
    j.set(host, NtupleRule(), "eth1/7", "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 3")
    assert host.commands[-2][:3] == ["ethtool", "-N", "eth1"] and host.commands[-2][-2:] == ["loc", "7"]
    assert j.entries()[0]["prior"] == "absent"
    NtupleRule().write(host, "eth1/7", j.entries()[0]["prior"])  # what restore does
    assert ["ethtool", "-N", "eth1", "delete", "7"] in host.commands and not state["present"]
    veth = ethtool_returning("", rc=1, err=fixture_text("ethtool_n_veth.txt"))
    assert NtupleRule().read(veth, "veth0/1") == "absent"
    for bad in ("flow-type tcp4 dst-ip 1.2.3.999", "dst-port 5201", "flow-type tcp4 action 1; reboot"):
        with pytest.raises(KnobError):
            NtupleRule().validate("eth1/7", bad)
