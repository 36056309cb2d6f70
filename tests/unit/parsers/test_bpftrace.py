"""bpftrace map output (hostnet.parsers.bpftrace): captured latency maps, histogram forms and
quantiles, and the window as the closing dump minus the opening one."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.bpftrace import Histogram, parse_bpftrace_maps


def test_latency_maps_from_a_real_run():
    maps = parse_bpftrace_maps(fixture_text("bpftrace_latency.txt"))
    assert {"lat_us", "lat_fine_us", "lat_coarse_us", "lat_stats", "skb_len"} <= set(maps)
    stats = maps["lat_stats"]
    assert stats["count"] == maps["lat_us"].total == maps["lat_fine_us"].total == maps["lat_coarse_us"].total
    assert stats["average"] > 0
    assert maps["skb_len"].buckets[-1][1] is not None  # log2 buckets like [32K, 64K)
    assert any(lo == 32 * 1024 for lo, _, _ in maps["skb_len"].buckets)


def test_histogram_quantiles_and_open_bucket():
    h = Histogram(((0, 1, 50), (1, 2, 40), (2, 3, 9), (1000, None, 1)))
    assert h.total == 100 and h.quantile(0.5) == 0 and h.quantile(0.9) == 1 and h.quantile(0.995) == 1000
    assert Histogram(()).quantile(0.5) is None


def test_hist_bucket_forms():
    text = ("@a:\n[1]  3 |@@@|\n[2, 4)  5 |@@@@@|\n[4K, 8K)  1 |@|\n[1000, ...)  2 |@@|\n\n"
            "@c: 7\n@s: count 2, average 5, total 10\n")
    maps = parse_bpftrace_maps(text)
    assert maps["a"].buckets == ((1, 2, 3), (2, 4, 5), (4096, 8192, 1), (1000, None, 2))
    assert maps["c"] == 7 and maps["s"] == {"count": 2, "average": 5, "total": 10}
    with pytest.raises(ParseError, match=":2"):
        parse_bpftrace_maps("@a:\n[x, y) 1 |@|\n")


def test_window_maps_subtract_the_opening_dump():
    from hostnet.parsers.bpftrace import subtract_maps
    before = parse_bpftrace_maps("@h:\n[1, 2)  5 |@|\n[2, 4)  1 |@|\n\n@s: count 6, average 10, total 60\n@c: 3\n")
    after = parse_bpftrace_maps("@h:\n[1, 2)  8 |@|\n[2, 4)  1 |@|\n[4, 8)  2 |@|\n\n"
                                "@s: count 11, average 10, total 160\n@c: 5\n")
    w = subtract_maps(after, before)
    assert w["h"].buckets == ((1, 2, 3), (2, 4, 0), (4, 8, 2))
    assert w["s"] == {"count": 5, "total": 100, "average": 20} and w["c"] == 2
    assert subtract_maps(after, {})["c"] == 5
