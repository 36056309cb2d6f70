"""The rx_prof text format and the boot-test serial console (hostnet.parsers.rx_prof), on the
captured console of kernel_patch/boot-test.sh (tests/fixtures/rx_prof_console.txt)."""
import pytest

from conftest import RX_PROF_CONSOLE, fixture_text, rx_prof_phase
from hostnet.probes import kernel_source
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


@pytest.mark.parametrize("old, new, match", [
    ("rx_copy_latency_ns 65536 159", "rx_copy_latency_ns 65535 159", "bucket 65535 is repeated or not a power of two"),
    ("rx_copy_latency_ns 65536 159", "rx_copy_latency_ns 32768 159", "bucket 32768 is repeated"),
    ("packet_loss_gen_seen 0", "packet_loss_gen_ppm 0", "packet_loss_gen_ppm appears twice"),
])
def test_rx_prof_damaged_lines_raise(old, new, match):
    text = rx_prof_phase("hist")
    assert old in text
    with pytest.raises(ParseError, match=match):
        parse_rx_prof(text.replace(old, new))
    with pytest.raises(ParseError, match="no newline"):
        parse_rx_prof(text.rstrip("\n"))


def test_console_damaged_marker_values_raise_parse_error():
    text = fixture_text(RX_PROF_CONSOLE)
    with pytest.raises(ParseError, match=r"serial.log:117: default 'packet_loss_gen' is not a number"):
        parse_console(text.replace("=== RXPROF default packet_loss_gen 0", "=== RXPROF default packet_loss_gen x"))
    load = next(ln for ln in text.splitlines() if "rxload tcp" in ln)
    with pytest.raises(ParseError, match="rxload fields are not key=value"):
        parse_console(text.replace(load, load + " garbage"))
