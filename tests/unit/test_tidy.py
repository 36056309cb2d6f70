"""hostnet.tidy: tidy rows from parsed tool output."""
from conftest import fixture_text
from hostnet.parsers.bpftrace import parse_bpftrace_maps
from hostnet.tidy import latency_rows


def test_latency_rows():
    rows = []
    latency_rows(lambda side, metric, value, category="": rows.append((side, metric, category, value)),
                  parse_bpftrace_maps(fixture_text("bpftrace_latency.txt")))
    got = {m: v for _, m, c, v in rows if not c}
    assert got["rx_to_copy_latency_avg_usec"] > 0
    assert got["rx_to_copy_latency_p50_usec"] <= got["rx_to_copy_latency_p99_usec"]
    assert 100 < got["post_gro_skb_bytes_mean"] < 65536
    assert any(m == "rx_to_copy_latency_hist_count" for _, m, _, _ in rows)
