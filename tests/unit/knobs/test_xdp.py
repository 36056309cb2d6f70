"""hostnet's XDP program as a knob (hostnet.knobs.xdp): read from captured `ip -d -j link`, the
argv it attaches and detaches with, and refusal to touch a program hostnet did not attach."""
import json

import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import KnobError, XdpProgram
from hostnet.knobs.xdp import parse_xdp


def test_parse_captured_link_with_and_without_the_program():
    assert parse_xdp(fixture_text("ip_d_j_link_veth_xdp.json"), "hxr") == "pass"
    assert parse_xdp(fixture_text("ip_d_j_link_veth_noxdp.json"), "hxs") == "off"


def test_someone_elses_program_is_named_and_left_alone():
    link = json.loads(fixture_text("ip_d_j_link_veth_xdp.json"))
    link[0]["xdp"]["attached"][0]["prog"]["name"] = "xdp_firewall"
    text = json.dumps(link)
    assert parse_xdp(text, "hxr") == "foreign:1:154"
    host = FakeHost(handlers={"ip": lambda argv, h: (0, text, "")})
    with pytest.raises(KnobError, match="hostnet did not attach"):
        XdpProgram().write(host, "hxr", "off")
    assert all(a[1:3] != ["link", "set"] for a in host.commands)


def test_attach_and_detach_argv(monkeypatch):
    state = {"xdp": False}
    on, off = fixture_text("ip_d_j_link_veth_xdp.json"), fixture_text("ip_d_j_link_veth_noxdp.json")

    def ip(argv, h):
        if argv[1:3] == ["link", "set"]:
            state["xdp"] = argv[-1] != "off"
            return 0, "", ""
        return 0, (on if state["xdp"] else off).replace('"hxs"', '"hxr"'), ""
    monkeypatch.setattr("hostnet.native.build.ensure", lambda tool, host=None: f"/build/{tool}.o")
    host = FakeHost(handlers={"ip": ip})
    XdpProgram().write(host, "hxr", "pass")
    attach = ["ip", "link", "set", "dev", "hxr", "xdpdrv", "obj", "/build/xdp_pass.o", "sec", "xdp.frags"]
    assert attach in host.commands
    XdpProgram().write(host, "hxr", "off")
    assert host.commands[-2] == ["ip", "link", "set", "dev", "hxr", "xdpdrv", "off"]


def test_values_and_names_validated():
    with pytest.raises(KnobError, match="pass or off"):
        XdpProgram().validate("hxr", "drop")
    with pytest.raises(KnobError, match="interface name"):
        XdpProgram().validate("a b", "pass")
