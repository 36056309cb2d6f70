"""The traffic-pattern section (hostnet.patterns) run live in a quick profile, as notebook 04 does."""
import pytest

from conftest import REPO, live_ready
from hostnet import patterns, testbed

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def test_incast_collect_sweeps_n_on_separate_sender_hosts(state_dir, tmp_path):
    campaign = patterns.collect("run", "incast", runs_dir=tmp_path, flows=[1, 2], repetitions=1, duration=2,
                                warmup=1, separate_hosts=True, progress=False)
    tidy, manifests = patterns.load(tmp_path, campaign, "incast", include_contaminated=True)
    assert [m["status"] for m in manifests] == ["ok", "ok"], [m.get("error") for m in manifests]
    two = next(m for m in manifests if m["point"]["flows"] == 2)
    assert {f["sender"] for f in two["flows"]} == {"sender", "sender1"}  # one namespace per sender
    assert {f["receiver"] for f in two["flows"]} == {"receiver"}
    t = patterns.table(tidy)
    assert list(t.flows) == [1, 2] and list(t.flow_count) == [1, 2] and (t.tpc_gbps > 0).all()
    assert set(patterns.breakdown(tidy).side) == {"sender", "receiver"}
    v = patterns.verdict_table(t, patterns.breakdown(tidy), "incast", REPO / "data" / "reference")
    assert list(v.id) == ["F09", "F04", "F05"]
    assert testbed.status() == []  # torn down
