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
    text = ("@a:\n[1]  3 |@@@|\n[2, 4)  5 |@@@@@|\n[4K, 8K)  1 |@|\n[8K, ...)  2 |@@|\n\n"
            "@c: 7\n@s: count 2, average 5, total 10\n")
    maps = parse_bpftrace_maps(text)
    assert maps["a"].buckets == ((1, 2, 3), (2, 4, 5), (4096, 8192, 1), (8192, None, 2))
    assert maps["c"] == 7 and maps["s"] == {"count": 2, "average": 5, "total": 10}
    with pytest.raises(ParseError, match=":2"):
        parse_bpftrace_maps("@a:\n[x, y) 1 |@|\n")


def test_window_maps_subtract_the_opening_dump():
    from hostnet.parsers.bpftrace import subtract_maps
    before = parse_bpftrace_maps("@h:\n[1, 2)  5 |@|\n[2, 4)  1 |@|\n\n@s: count 6, average 10, total 60\n@c: 3\n")
    after = parse_bpftrace_maps("@h:\n[1, 2)  8 |@|\n[2, 4)  1 |@|\n[4, 8)  2 |@|\n\n"
                                "@s: count 11, average 14, total 160\n@c: 5\n")
    w = subtract_maps(after, before)
    assert w["h"].buckets == ((1, 2, 3), (2, 4, 0), (4, 8, 2))
    assert w["s"] == {"count": 5, "total": 100, "average": 20} and w["c"] == 2
    assert subtract_maps(after, {})["c"] == 5


@pytest.mark.parametrize("text, match", [
    ("", ": empty"),
    ("Attaching 4 probes...\n\n\n", ": no map in the output"),
    ("hello world\n", ":1: not part of a bpftrace map dump"),
    ("Attaching 4 probes...\nERROR: could not attach probe kprobe:tcp_foo, skipping.\n",
     ":2: bpftrace error: could not attach probe kprobe:tcp_foo, skipping."),
])
def test_empty_garbage_and_bpftrace_errors_raise_instead_of_an_empty_table(text, match):
    with pytest.raises(ParseError, match="bt.txt" + match):
        parse_bpftrace_maps(text, "bt.txt")


def test_a_histogram_cut_short_or_damaged_raises():
    text = fixture_text("bpftrace_latency.txt")
    cut = text[:text.index("[300, 400)")]  # inside @lat_coarse_us, at a line: no empty line after it
    with pytest.raises(ParseError, match="histogram @lat_coarse_us has no empty line after it: cut short"):
        parse_bpftrace_maps(cut)
    with pytest.raises(ParseError, match=r":7: the bucket from 200 is out of order"):
        parse_bpftrace_maps(text.replace("[200, 300)", "[200, 100)"))
    with pytest.raises(ParseError, match=r":1280: @lat_stats: average 109950 is not total 1217134205 / count 110698"):
        parse_bpftrace_maps(text.replace("total 12171342055", "total 1217134205"))


def test_swapped_dumps_raise():
    from hostnet.parsers.bpftrace import subtract_maps
    before = parse_bpftrace_maps("@h:\n[1, 2)  5 |@|\n\n@s: count 6, average 10, total 60\n")
    after = parse_bpftrace_maps("@h:\n[1, 2)  8 |@|\n\n@s: count 11, average 14, total 160\n")
    assert subtract_maps(after, before)["h"].buckets == ((1, 2, 3),)
    with pytest.raises(ParseError, match="@h went down over the window"):
        subtract_maps(before, after)
    with pytest.raises(ParseError, match="@s in the opening dump but not in the final one"):
        subtract_maps({"h": after["h"]}, before)
