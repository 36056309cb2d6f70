"""ss -Hl{t,u}n as captured in a namespace with iperf3 and iperf servers listening."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.ss import listening, listens


def test_tcp_listeners_bound_and_on_every_address():
    sockets = listening(fixture_text("ss_Hltn_listening.txt"))
    assert sockets == {("198.18.9.1", 5201), ("*", 5202)}
    assert listens(sockets, "198.18.9.1", 5201)
    assert listens(sockets, "198.18.0.2", 5202)  # bound to every address
    assert not listens(sockets, "198.18.0.2", 5201) and not listens(sockets, "198.18.9.1", 5203)


def test_udp_sockets_are_listed_unconnected():
    assert listening(fixture_text("ss_Hlun_listening.txt")) == {("198.18.9.1", 5203)}


def test_ipv6_and_device_bound_addresses():
    text = "LISTEN 0 128 [::]:22 [::]:*\nLISTEN 0 5 [fd00::2]:5201 [::]:*\nLISTEN 0 5 198.18.0.2%hnr:5204 0.0.0.0:*\n"
    assert listening(text) == {("*", 22), ("fd00::2", 5201), ("198.18.0.2", 5204)}


def test_a_server_on_the_embedded_testbeds_ipv6_address():
    sockets = listening(fixture_text("ss_Hltn_ipv6.txt"))
    assert sockets == {("2001:2::2", 5201)} and listens(sockets, "2001:2::2", 5201)


def test_nothing_listening_is_an_empty_set_and_a_cut_line_is_refused():
    assert listening("") == set()
    with pytest.raises(ParseError, match="not an ss socket line"):
        listening("LISTEN 0 4096\n", "ss")
    with pytest.raises(ParseError, match="has no port"):
        listening("LISTEN 0 4096 198.18.0.2 0.0.0.0:*\n", "ss")
