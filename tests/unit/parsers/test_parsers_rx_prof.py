"""The rx_prof text format and the boot-test serial console (hostnet.parsers.rx_prof), on the
captured console of kernel_patch/boot-test.sh (tests/fixtures/rx_prof_console.txt)."""
import pytest

from conftest import RX_PROF_CONSOLE, fixture_text, rx_prof_phase
from hostnet import kernel_source
from hostnet.parsers import ParseError
from hostnet.parsers.rx_prof import parse_console, parse_rx_prof


def test_rx_prof_file_parses_into_counters_and_log2_histograms():
    maps = parse_rx_prof(rx_prof_phase("hist"))
    assert maps["rx_prof"] == 1 and maps["packet_loss_gen_ppm"] == 0
    lat = maps["rx_copy_latency_ns"]
    assert lat.total > 0 and all(hi == 2 * lo for lo, hi, _ in lat.buckets if lo)
    assert maps["post_gro_skb_len"].total > 0


def test_rx_prof_parser_rejects_other_text():
    with pytest.raises(ParseError, match="rx_prof format 1"):
        parse_rx_prof("packet_loss_gen_seen 3\n")
    with pytest.raises(ParseError, match="unrecognised line"):
        parse_rx_prof("rx_prof 1\nrx_copy_latency_ns 1024\n")


def test_console_phases_and_loads():
    con = parse_console(fixture_text(RX_PROF_CONSOLE))
    assert con["done"] and not con["patch_absent"]
    assert set(con["defaults"]) == set(kernel_source.RX_PROF_SYSCTLS)
    assert [x["port"] for x in con["loads"] if x["proto"] == "tcp"] == ["5000", "5001", "5002", "5005", "5006", "5004",
                                                                       "5008"]
    assert [x["port"] for x in con["loads"] if x["proto"] == "udp"] == ["5003", "5007"]
