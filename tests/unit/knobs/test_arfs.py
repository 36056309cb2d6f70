"""ntuple rules for aRFS (hostnet.knobs.arfs): created, deleted on restore, validated; absent on veth."""
import pytest

from conftest import FakeHost, FakeMachine, fixture_text
from hostnet.knobs import Journal, KnobError, NtupleRule
from hostnet.knobs.arfs import parse_rule


def ethtool_returning(show_output, rc=0, err=""):
    return FakeHost(handlers={"ethtool": lambda argv, h: (rc, show_output, err) if argv[1] in ("-g", "-l", "-n")
                              else (0, "", "")})


def test_ntuple_rules_are_created_and_deleted_on_restore(tmp_path):
    host = FakeMachine(ifaces=("eth1",))
    j = Journal(tmp_path / "j")
    j.set(host, NtupleRule(), "eth1/7", "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 3")
    assert host.commands[-2][:3] == ["ethtool", "-N", "eth1"] and host.commands[-2][-2:] == ["loc", "7"]
    assert j.entries()[0]["prior"] == "absent"
    assert NtupleRule().read(host, "eth1/7") == "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 3"
    NtupleRule().write(host, "eth1/7", j.entries()[0]["prior"])  # what restore does
    assert ["ethtool", "-N", "eth1", "delete", "7"] in host.commands and host.state["ifaces"]["eth1"]["rules"] == {}
    veth = ethtool_returning("", rc=1, err=fixture_text("ethtool_n_veth.txt"))
    assert NtupleRule().read(veth, "veth0/1") == "absent"
    for bad in ("flow-type tcp4 dst-ip 1.2.3.999", "dst-port 5201", "flow-type tcp4 action 1; reboot"):
        with pytest.raises(KnobError):
            NtupleRule().validate("eth1/7", bad)


def test_an_existing_rule_is_read_as_its_spec_and_put_back_as_it_was(tmp_path):
    """Captured rules: the prior is the whole rule (masks inverted: 0 = matched), never just "present"."""
    assert parse_rule(fixture_text("ethtool_n_rule_idpf.txt")) == "flow-type tcp4 src-ip 10.0.0.1 action 0"
    with pytest.raises(KnobError, match="RSS Context ID"):  # a rule hostnet could not re-create: left alone
        parse_rule(fixture_text("ethtool_n_rule_mlx5_rss.txt"))
    host = FakeMachine(ifaces=("eth1",))
    host.state["ifaces"]["eth1"]["rules"][0] = {"flow-type": "tcp4", "src-ip": "10.0.0.1", "action": "0"}
    j = Journal(tmp_path / "j")
    j.set(host, NtupleRule(), "eth1/0", "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 1")
    assert j.entries()[0]["prior"] == "flow-type tcp4 src-ip 10.0.0.1 action 0"
    assert j.restore() == []
    assert host.state["ifaces"]["eth1"]["rules"] == {0: {"flow-type": "tcp4", "src-ip": "10.0.0.1", "action": "0"}}


def test_a_rule_the_driver_refuses_is_an_error_with_its_words_even_when_ethtool_exits_0():
    """e1000e (the NIC rehearsal's guests) has no ntuple filters: ethtool 6.1 said so on stderr and
    exited 0 for a rule placed with loc, so the refusal showed only as a read-back mismatch."""
    refused = fixture_text("nic-rehearsal/e1000e_ethtool_N.txt")
    host = FakeHost(handlers={"ethtool": lambda argv, h: (0, "", refused) if argv[1] == "-N" else (1, "", "")})
    with pytest.raises(KnobError, match="data0 refused ntuple rule .* at 0: rmgr: Cannot insert RX class rule: "
                                        "Operation not supported"):
        NtupleRule().write_unverified(host, "data0/0", "flow-type tcp4 dst-port 5201 action 0")
