"""Loss injection (hostnet.knobs.loss): the nftables ruleset, counters from a real table, and
removal of only hostnet's table."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KnobError, NftLoss
from hostnet.knobs.loss import parse_loss_table, ruleset


def test_loss_ruleset_and_counters_from_a_real_table():
    text = ruleset("veth1", 0.01)
    assert 'iifname "veth1"' in text and "mod 1000000 < 10000" in text and text.count("table inet hostnet_loss") == 3
    parsed = parse_loss_table(fixture_text("nft_loss_table.json"))
    assert parsed["rate"] == pytest.approx(0.01)
    assert parsed["seen_packets"] == 94592 and parsed["dropped_packets"] == 966
    assert 0.009 < parsed["dropped_packets"] / parsed["seen_packets"] < 0.011
    with pytest.raises(KnobError):
        ruleset('x" drop; flush ruleset; "', 0.1)
    for bad in ("1.5", "-0.1", "lots"):
        with pytest.raises(KnobError):
            NftLoss().validate("veth1", bad)


def test_loss_zero_deletes_only_our_table():
    listed = {"present": True}

    def nft(argv, host):
        if argv[1] == "list":
            return (0, "", "") if listed["present"] else (1, "", "No such file")
        if argv[1] == "delete":
            listed["present"] = False
        return 0, "", ""
    host = FakeHost(handlers={"nft": nft})
    NftLoss().write_unverified(host, "veth1", "0")
    assert ["nft", "delete", "table", "inet", "hostnet_loss"] in host.commands
    NftLoss().write_unverified(host, "veth1", "0")
    assert host.commands.count(["nft", "delete", "table", "inet", "hostnet_loss"]) == 1
