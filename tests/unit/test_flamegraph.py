"""Icicle charts (hostnet.flamegraph) of captured perf script stacks."""
import pytest

from conftest import fixture_text
from hostnet.flamegraph import icicle_chart, icicle_rects
from hostnet.parsers.perf_script import Sample, fold, parse_folded, parse_perf_script, write_folded


def samples():
    return list(parse_perf_script(fixture_text("perf_script_all-opts.txt").splitlines()))


def test_icicle_rects_and_chart():
    folded = list(parse_folded(write_folded(fold(samples()))))
    rects = icicle_rects(folded, {1})
    roots = rects[rects.depth == 0]
    assert roots.x1.max() == pytest.approx(1.0, abs=1e-9) and set(roots.frame) >= {"iperf3"}
    assert (rects.x1 >= rects.x0).all() and rects.depth.max() > 5
    spec = icicle_chart(rects, "test").to_dict()
    assert spec["layer"][0]["mark"]["type"] == "bar"
    assert icicle_rects([(Sample(0, "x", ("a",)), 1)], {1}).empty
