"""Mixed long/short flows and a loss-rate point end to end on the embedded testbed (~25 s)."""
import os
import subprocess

import pytest

from conftest import live_ready
from hostnet.sections import mixed_flows
from hostnet import store, testbed
from hostnet.knobs.loss import TABLE
from hostnet.measure.sweep import SweepSpec, run_sweep

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def test_mixed_sweep_tags_flows_and_loss_point_drops(state_dir, tmp_path):
    mixed = SweepSpec(workload="mixed", configs=["tsogro"], grid={"short_flows": [2]}, repetitions=1,
                      duration=2, warmup=1)
    lossy = SweepSpec(configs=["tsogro"], grid={"loss_rate": [0.01]}, repetitions=1, duration=2, warmup=1)
    name = f"mx{os.getpid() % 10000}"
    with testbed.embedded(name) as tb:
        out = run_sweep(tb, mixed, runs_dir=tmp_path, campaign="mixed", progress=False)
        run_sweep(tb, lossy, runs_dir=tmp_path, campaign="loss", progress=False)
        netns = tb.endpoints["receiver"].host
        assert netns.run(["nft", "list", "table", "inet", TABLE], check=False).returncode == 0  # still applied
    assert out["ran"] == 1 and out["failed"] == 0
    [run] = store.list_runs(tmp_path, "mixed")
    m = store.load_manifest(run)
    assert m["status"] == "ok", m.get("error")
    assert m["workload"]["kind"] == "mixed" and len(m["flows"]) == 3
    assert len({(f["sender_cpu"], f["receiver_cpu"]) for f in m["flows"]}) == 1  # one core per side
    assert store.has_raw(run, "iperf3_client_0.json")
    rpc_tool = m["workload"]["rpc_tool"]
    assert store.has_raw(run, f"{rpc_tool}_client_2.txt")
    t = store.read_tidy(run)
    flows = t[t.metric == "flow_throughput_gbps"].set_index("flow")
    assert list(flows.category) == ["long", "short", "short"] and (flows.value > 0).all()
    assert t[t.metric == "flow_transactions_per_s"].category.eq("short").all()
    tidy, manifests = mixed_flows.load(tmp_path, "mixed", include_contaminated=True)
    row = mixed_flows.table(tidy).iloc[0]
    assert row.long_tpc_gbps > 0 and row.short_tpc_gbps > 0
    assert row.long_tpc_gbps + row.short_tpc_gbps == pytest.approx(row.tpc_gbps)
    [loss_run] = store.list_runs(tmp_path, "loss")
    lm = store.load_manifest(loss_run)
    assert lm["status"] == "ok" and any(k.endswith("/loss/" + tb.endpoints["receiver"].iface) and v == "0.01"
                                        for k, v in lm["applied"].items())
    lt = store.read_tidy(loss_run)
    assert lt[lt.metric == "retransmits_count"].value.iloc[0] > 0  # drops were recovered
    # the testbed is gone and with it the loss table (it lived in the receiver's namespace)
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
