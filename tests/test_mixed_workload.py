"""The mixed long/short workload (§3.7) and the loss-rate grid key (§3.5): layout, argv, tags."""
import pytest

from hostnet import config as sc
from hostnet import sweep
from hostnet.knobs import KnobError
from hostnet.testbed import EmbeddedLayout, _build
from hostnet.workloads import LongFlows, MixedFlows, RpcFlows, flow_class, flow_part, workload_comms

SENDERS, RECEIVERS = [("sender", [0])], [("receiver", [1])]


def test_long_flow_and_short_flows_share_one_core_per_side():
    w = MixedFlows(5, 2, short_flows=4)
    flows = w.flows(SENDERS, RECEIVERS)
    assert [f.index for f in flows] == [0, 1, 2, 3, 4]
    assert {(f.sender, f.sender_cpu, f.receiver, f.receiver_cpu) for f in flows} == {("sender", 0, "receiver", 1)}
    assert len({f.port for f in flows}) == 5  # one server per flow
    assert [flow_class(w, f) for f in flows] == ["long", "short", "short", "short", "short"]
    # even with more CPUs per side, every flow stays on the first slot: they must compete
    wide = w.flows([("sender", [0, 2])], [("receiver", [1, 3])])
    assert {(f.sender_cpu, f.receiver_cpu) for f in wide} == {(0, 1)}


def test_each_flow_gets_its_own_tool_argv():
    w = MixedFlows(5, 2, short_flows=2, size_bytes=4096, rpc_tool="netperf")
    long_f, short_f, _ = w.flows(SENDERS, RECEIVERS)
    assert isinstance(flow_part(w, long_f), LongFlows) and isinstance(flow_part(w, short_f), RpcFlows)
    assert w.client_argv(long_f, "198.18.0.2")[:3] == ["iperf3", "-c", "198.18.0.2"]
    assert "-A" in w.client_argv(long_f, "198.18.0.2") and "-O" in w.client_argv(long_f, "198.18.0.2")
    rpc = w.client_argv(short_f, "198.18.0.2")
    assert rpc[0] == "netperf" and rpc[rpc.index("-p") + 1] == str(short_f.port)
    assert rpc[rpc.index("-r") + 1] == "4096,4096" and rpc[rpc.index("-T") + 1] == "0,1"
    assert rpc[rpc.index("-l") + 1] == "7"  # warm-up + duration: netperf has no omit option
    assert w.server_argv(long_f, "198.18.0.2")[:2] == ["iperf3", "-s"]
    assert w.server_argv(short_f, "198.18.0.2")[:4] == ["taskset", "-c", "1", "netserver"]
    assert flow_part(w, long_f).server_exits and not flow_part(w, short_f).server_exits
    assert w.tools == ("iperf3", "netperf") and w.describe()["kind"] == "mixed"
    assert set(workload_comms(w)) == {"iperf3", "netserver", "netperf"}


def test_short_flows_alone_and_sockperf():
    w = MixedFlows(5, 2, short_flows=3, long_flow=False, rpc_tool="sockperf")
    flows = w.flows(SENDERS, RECEIVERS)
    assert [flow_class(w, f) for f in flows] == ["short"] * 3 and w.tools == ("sockperf",)
    assert w.client_argv(flows[0], "198.18.0.2")[3:5] == ["sockperf", "ping-pong"]
    assert w.client_comm == "sockperf"


def test_invalid_mixed_workloads_are_refused():
    with pytest.raises(ValueError, match="needs the long flow or"):
        MixedFlows(5, 2, short_flows=0, long_flow=False)
    with pytest.raises(ValueError, match="short flows must be"):
        MixedFlows(5, 2, short_flows=64)
    with pytest.raises(ValueError, match="RPC size"):
        MixedFlows(5, 2, short_flows=1, size_bytes=70000, rpc_tool="sockperf")


def test_single_tool_workloads_are_untagged():
    w = LongFlows(5, 2)
    [f] = w.flows(SENDERS, RECEIVERS)
    assert flow_part(w, f) is w and flow_class(w, f) == ""
    assert workload_comms(RpcFlows(5, 2, tool="netperf")) == ["netserver", "netperf"]


def test_mixed_sweep_points_and_workloads():
    spec = sweep.SweepSpec(experiment="mixed", configs=["tsogro"],
                           grid={"short_flows": [0, 1, 16], "long_flow": [1, 0], "rpc_size": [4096]})
    pts = spec.points()
    # long_flow x short_flows without the empty point
    assert len(pts) == 5 and {"config": "tsogro", "short_flows": 0, "long_flow": 0, "rpc_size": 4096} not in pts
    w = sweep.point_workload(spec, {"config": "tsogro", "short_flows": 16, "long_flow": 0, "rpc_size": 4096},
                             "netperf")
    assert isinstance(w, MixedFlows) and w.n == 16 and not w.long_flow
    with pytest.raises(sweep.SweepError, match="belong to experiment mixed"):
        sweep.SweepSpec(experiment="single-flow", grid={"short_flows": [1]})


def test_loss_rate_grid_key_sets_the_loss_knob_on_every_receiver(state_dir):
    spec = sweep.SweepSpec(configs=["tsogro"], grid={"loss_rate": [0, 0.001, 0.01]})
    cfgs = [sweep.point_config(p) for p in spec.points()]
    assert [c.loss_rate for c in cfgs] == [0.0, 0.001, 0.01]
    tb = _build(EmbeddedLayout("unit"))
    loss = {v for w, k, key, v in sc.settings(tb, cfgs[2]) if k.name == "loss" and w == "receiver"}
    zero = [(w, key, v) for w, k, key, v in sc.settings(tb, cfgs[0]) if k.name == "loss"]
    assert loss == {"0.01"} and zero == [("receiver", "hnunitr", "0")]  # 0 is written too: the table removed
    # points without a loss rate leave the knob alone (hosts without nft run everything else)
    assert not [k for _, k, _, _ in sc.settings(tb, sc.get_config("tsogro")) if k.name == "loss"]
    with pytest.raises(sc.ConfigError, match="outside"):
        sweep.point_config({"config": "tsogro", "loss_rate": 1.5})
    with pytest.raises(KnobError):
        sc.KNOBS["loss"].validate("hnunitr", "-0.1")


def test_sweep_files_are_the_notebook_sections_specs():
    from conftest import REPO
    from hostnet import mixed_flows, packet_loss, short_flows
    for name, section in (("packet-loss", packet_loss), ("short-flows", short_flows), ("mixed-flows", mixed_flows)):
        assert sweep.SweepSpec.from_yaml(REPO / "sweeps" / f"{name}.yaml") == section.spec(), name
