"""Flame graphs (hostnet.charts.flamegraph) of captured perf script stacks: the icicle chart and the
self-contained d3-flame-graph page (drawn in Chromium by tests/notebooks/test_report_browser.py)."""
import hashlib
import json
from importlib import resources

import pytest

from conftest import fixture_text
from hostnet.charts.flamegraph import ASSETS, flamegraph_html, icicle_chart, icicle_rects, stack_tree
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


def test_stack_tree_counts_each_frame_with_its_children():
    folded = [(Sample(1, "iperf3", ("leaf_a", "mid", "top")), 5), (Sample(1, "iperf3", ("leaf_b", "mid", "top")), 3),
              (Sample(1, "ksoftirqd/1", ("net_rx_action",)), 2), (Sample(0, "other_cpu", ("x",)), 7)]
    tree = stack_tree(folded, {1}, root="receiver")
    assert tree["name"] == "receiver" and tree["value"] == 10  # CPU 0's sample is not the side's
    iperf = tree["children"][0]
    assert (iperf["name"], iperf["value"]) == ("iperf3", 8)
    top = iperf["children"][0]
    mid = top["children"][0]
    assert (top["name"], mid["name"], mid["value"]) == ("top", "mid", 8)  # outermost frame first
    assert [(c["name"], c["value"], c["children"]) for c in mid["children"]] == [("leaf_a", 5, []), ("leaf_b", 3, [])]


def test_stack_tree_of_captured_stacks_keeps_every_sample():
    folded = list(parse_folded(write_folded(fold(samples()))))
    tree = stack_tree(folded, {1})
    assert tree["value"] == sum(n for s, n in folded if s.cpu == 1)
    assert tree["value"] == sum(c["value"] for c in tree["children"])


def test_flamegraph_html_is_one_offline_file_with_the_data_escaped():
    tree = {"name": "all", "value": 2, "children": [{"name": "</script><b>x", "value": 2, "children": []}]}
    page = flamegraph_html(tree, "a <title>", "sub & title")
    assert "<title>a &lt;title&gt;</title>" in page and "sub &amp; title" in page
    assert "</script><b>x" not in page  # a frame name cannot end the JSON's script element
    data = page.split('<script type="application/json" id="stacks">')[1].split("</script>")[0]
    assert json.loads(data) == tree
    rest = page
    for name in ASSETS:
        code = (resources.files("hostnet") / "assets" / name).read_text()
        assert code in page
        rest = rest.replace(code, "")
    assert not any(ref in rest for ref in ("src=", "href=", "http", "@import"))  # nothing loaded: all inlined


def test_vendored_assets_are_the_published_files():
    """The hashes hostnet/assets/README.md records for the npm packages' files."""
    readme = (resources.files("hostnet") / "assets" / "README.md").read_text()
    for name in ASSETS:
        digest = hashlib.sha256((resources.files("hostnet") / "assets" / name).read_bytes()).hexdigest()
        assert f"| {name} |" in readme and digest in readme.split(f"| {name} |")[1].split("\n")[0]
