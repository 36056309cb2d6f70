"""gro_max_size as a knob (hostnet.knobs.link.GroMaxSize): read from captured `ip -d -j link`, the
argv it writes with, its range, and a clear error where the host does not report it."""
import json

import pytest

from conftest import FakeHost, fixture_text
from hostnet.knobs import GroMaxSize, KnobError


def _host(text):
    return FakeHost(handlers={"ip": lambda argv, h: (0, text, "")})


def test_read_the_captured_link_before_and_after_gro_max_size_0():
    assert GroMaxSize().read(_host(fixture_text("ip_d_j_link_veth_noxdp.json")), "hxs") == "65536"
    assert GroMaxSize().read(_host(fixture_text("ip_d_j_link_veth_gro_max_size_0.json")), "hxb") == "0"


def test_write_is_one_ip_link_argv_and_read_back():
    state = {"text": fixture_text("ip_d_j_link_veth_noxdp.json")}

    def ip(argv, h):
        if argv[1:3] == ["link", "set"]:
            state["text"] = fixture_text("ip_d_j_link_veth_gro_max_size_0.json")
            return 0, "", ""
        return 0, state["text"], ""
    host = FakeHost(handlers={"ip": ip})
    GroMaxSize().write(host, "hxs", "0")
    assert ["ip", "link", "set", "dev", "hxs", "gro_max_size", "0"] in host.commands


def test_a_host_that_does_not_report_it_is_unsupported_not_guessed():
    link = json.loads(fixture_text("ip_d_j_link_veth_noxdp.json"))
    del link[0]["gro_max_size"]
    ok, why = GroMaxSize().available(_host(json.dumps(link)), "hxs")
    assert not ok and "reports no gro_max_size" in why


@pytest.mark.parametrize("value", ["-1", "x", "524281", "1e3"])
def test_values_outside_the_kernels_range_are_refused_before_anything_runs(value):
    host = _host(fixture_text("ip_d_j_link_veth_noxdp.json"))
    with pytest.raises(KnobError, match="gro_max_size"):
        GroMaxSize().write(host, "hxs", value)
    assert host.commands == []
