"""Offloads (hostnet.knobs.ethtool): `ethtool -k` parsed from veth, written with -K, fixed
features refused."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KnobError, Offload
from hostnet.knobs.ethtool import parse_features


def ethtool_host(features_text):
    state = {"text": features_text}

    def ethtool(argv, host):
        if argv[1] == "-k":
            return 0, state["text"], ""
        flag, value = argv[3], argv[4]
        name = {"tso": "tcp-segmentation-offload", "gro": "generic-receive-offload",
                "gso": "generic-segmentation-offload"}[flag]
        state["text"] = "\n".join(
            f"{name}: {value}" if line.startswith(name + ":") else line for line in state["text"].splitlines())
        return 0, "", ""
    return FakeHost(handlers={"ethtool": ethtool})


def test_offload_uses_ethtool_and_refuses_fixed_features():
    host = ethtool_host(fixture_text("ethtool_k_veth.txt"))
    tso = Offload("tso")
    assert tso.read(host, "veth0") == "on"
    tso.write(host, "veth0", "off")
    assert ["ethtool", "-K", "veth0", "tso", "off"] in host.commands
    assert tso.read(host, "veth0") == "off"
    lro = Offload("lro")
    ok, why = lro.available(host, "veth0")
    assert not ok and "fixed" in why
    with pytest.raises(KnobError, match="fixed off"):
        lro.write(host, "veth0", "on")
    with pytest.raises(KnobError, match="unknown offload"):
        Offload("turbo")


def test_ethtool_features_captured_from_veth():
    feats = parse_features(fixture_text("ethtool_k_veth.txt"))
    assert feats["tcp-segmentation-offload"] == (True, False)
    assert feats["generic-receive-offload"] == (False, False)
    assert feats["large-receive-offload"] == (False, True)  # fixed off on veth
