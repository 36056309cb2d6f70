"""BIG TCP's size limits as knobs (hostnet.knobs.link.LinkLimits, one per GSO/GRO pair): `bigtcp show`
captured on a veth, the one argv a pair is written with, the driver's limit and a kernel without the
IPv4 limits named."""
import re

import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KNOBS, KnobError
from hostnet.knobs import link

TOOL = "/opt/hostnet/bigtcp-0123456789"


def _host(state: dict, refuse: str = "") -> FakeHost:
    def bigtcp(argv, h):
        if argv[1] == "show":
            return 0, state["text"], ""
        if refuse:
            return 1, "", refuse
        for attr, value in zip(argv[3::2], argv[4::2], strict=True):
            state["text"] = re.sub(rf" {attr}=\d+", f" {attr}={value}", state["text"])
        return 0, "", ""
    host = FakeHost(handlers={TOOL: bigtcp})
    link._BUILT[host] = TOOL  # what native.ensure built on it
    return host


def test_show_parses_every_limit_and_names_what_the_kernel_lacks():
    sizes = link.parse_bigtcp(fixture_text("bigtcp_show_veth.txt"))
    assert sizes == {"tso_max_size": 524280, "gso_max_size": 65536, "gro_max_size": 65536,
                     "gso_ipv4_max_size": 65536, "gro_ipv4_max_size": 65536}
    raised = link.parse_bigtcp(fixture_text("bigtcp_show_veth_185000.txt"))
    assert (raised["gso_max_size"], raised["gso_ipv4_max_size"], raised["gro_ipv4_max_size"]) == (185000, 185000, 65536)
    old = "bigtcp dev=eth0 tso_max_size=65536 gso_max_size=65536 gro_max_size=65536 " \
          "gso_ipv4_max_size=unsupported gro_ipv4_max_size=unsupported\n"
    assert link.parse_bigtcp(old)["gso_ipv4_max_size"] is None
    with pytest.raises(KnobError, match="gro_ipv4_max_size is missing or not a byte count"):
        link.parse_bigtcp("bigtcp dev=eth0 tso_max_size=1 gso_max_size=1 gro_max_size=1 gso_ipv4_max_size=1\n")
    with pytest.raises(KnobError, match="expected one 'bigtcp ...' line"):
        link.parse_bigtcp(fixture_text("bigtcp_set_refused.txt"))


def test_a_pair_is_one_bigtcp_argv_generic_limit_first_and_reads_back():
    state = {"text": fixture_text("bigtcp_show_veth.txt")}
    host = _host(state)
    KNOBS["link.gso_limits"].write(host, "hns", "185000/185000")
    assert [TOOL, "set", "hns", "gso_max_size", "185000", "gso_ipv4_max_size", "185000"] in host.commands
    assert KNOBS["link.gso_limits"].read(host, "hns") == "185000/185000"
    assert KNOBS["link.gro_limits"].read(host, "hns") == "65536/65536"
    # 0 is a value a restore must put back (the IPv4 GRO limit after gro_max_size 0)
    KNOBS["link.gro_limits"].write(host, "hns", "0/0")
    assert KNOBS["link.gro_limits"].read(host, "hns") == "0/0"


def test_the_drivers_limit_and_the_kernels_refusal_are_named():
    host = _host({"text": fixture_text("bigtcp_show_veth.txt").replace("tso_max_size=524280", "tso_max_size=131072")})
    with pytest.raises(KnobError, match="at most tso_max_size 131072 bytes, not 185000"):
        KNOBS["link.gro_limits"].write(host, "hnr", "65536/185000")
    with pytest.raises(KnobError, match="is not GENERIC/IPV4, two byte counts from 0 to 524280"):
        KNOBS["link.gro_limits"].write(host, "hnr", "600000/600000")
    with pytest.raises(KnobError, match="is not GENERIC/IPV4"):
        KNOBS["link.gro_limits"].validate("hnr", "185000")
    refused = _host({"text": fixture_text("bigtcp_show_veth.txt")}, refuse=fixture_text("bigtcp_set_refused.txt"))
    with pytest.raises(KnobError, match="the kernel refused: Invalid argument"):
        KNOBS["link.gso_limits"].write(refused, "hns", "185000/185000")


def test_a_kernel_without_ipv4_big_tcp_is_unsupported_not_guessed():
    old = "bigtcp dev=eth0 tso_max_size=524280 gso_max_size=65536 gro_max_size=65536 " \
          "gso_ipv4_max_size=unsupported gro_ipv4_max_size=unsupported\n"
    ok, why = KNOBS["link.gro_limits"].available(_host({"text": old}), "eth0")
    assert not ok and "reports no gro_ipv4_max_size (BIG TCP for IPv4 needs Linux 6.3" in why


def test_a_host_without_a_compiler_is_named(monkeypatch):
    from hostnet import native
    from hostnet.native import build
    bare = FakeHost(name="bare", handlers={})
    monkeypatch.setattr(build, "ensure", lambda tool, host: (_ for _ in ()).throw(
        native.NativeBuildError("bare: no C compiler (cc or gcc not found)")))
    with pytest.raises(KnobError, match="no C compiler"):
        KNOBS["link.gso_limits"].read(bare, "eth0")
