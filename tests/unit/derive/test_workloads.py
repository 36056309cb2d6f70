"""hostnet.derive.workloads: tool argv of each workload (iperf3, the mixed long/short workload of §3.7,
UDP at a set rate), CPU placement, flow tags, and what is refused."""
import pytest

from conftest import fixture_text
from hostnet.derive.workloads import (
    LongFlow, LongFlows, MixedFlows, RpcFlows, UdpRate, ZeroCopyFlows, flow_class, flow_part, from_description,
    workload_comms)


def test_iperf3_argv_pinned_with_warmup_and_cc():
    w = LongFlow(5, 2, "cubic")
    [f] = w.flows([("sender", [0])], [("receiver", [1])])
    assert w.client_argv(f, "198.18.0.2") == ["iperf3", "-c", "198.18.0.2", "-p", "5201", "-t", "5",
                                             "-O", "2", "-A", "0", "-C", "cubic", "-J"]
    assert w.server_argv(f, "198.18.0.2") == ["iperf3", "-s", "-1", "-B", "198.18.0.2", "-p", "5201", "-A", "1"]
    assert w.total_s() == 7


@pytest.mark.parametrize("d,wu", [(0, 1), (-1, 1), (2.5, 1), (2, -1)])
def test_bad_durations(d, wu):
    with pytest.raises(ValueError):
        LongFlow(d, wu)


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


def test_workload_argv_and_parse_client():
    w = UdpRate(2, 1, rate_gbps=2.5, socket_buffer_kb=4096, app_cpu="same")
    flow = w.flows([("sender", [0])], [("receiver", [1])])[0]
    assert (flow.sender_cpu, flow.receiver_cpu) == (0, 1)
    assert w.server_argv(flow, "198.18.0.2") == ["taskset", "-c", "1", "iperf", "-s", "-u", "-B", "198.18.0.2", "-p",
                                                 "15002", "-w", "4096K", "-t", "5"]
    assert w.client_argv(flow, "198.18.0.2") == ["taskset", "-c", "0", "iperf", "-c", "198.18.0.2", "-u", "-p",
                                                 "15002", "-b", "2500m", "-l", "1470", "-t", "3"]
    got = w.parse_client(fixture_text("iperf2_udp_client_2g.txt"), "c.txt")
    assert got["throughput_gbps"] == 1.28 and got["iperf_sent_datagrams_count"] == 342107
    assert got["iperf_loss_pct"] == pytest.approx(4.652, abs=1e-3)
    nan = w.parse_client(fixture_text("iperf2_udp_client_noserver.txt"), "c.txt")
    assert nan["throughput_gbps"] != nan["throughput_gbps"] and "iperf_loss_pct" not in nan
    for bad in ({"app_cpu": "both"}, {"rate_gbps": 0}, {"socket_buffer_kb": 0}, {"pattern": "incast", "n": 2}):
        with pytest.raises(ValueError):
            UdpRate(2, 1, **bad)


def test_placement_comes_from_the_endpoint_cpu_sets():
    w = UdpRate(2, 1, app_cpu="different")
    two_cores = w.placement([("sender", [0])], [("receiver", [1])])
    assert two_cores == {"rx_cpu": 1, "app_cpu": 0, "app_cpu_from": "sender", "sender_cpu": 0}
    servers = w.placement([("sender", [0, 1])], [("receiver", [2, 3])])
    assert (servers["rx_cpu"], servers["app_cpu"], servers["app_cpu_from"]) == (2, 3, "receiver")
    assert UdpRate(2, 1).placement([("sender", [0])], [("receiver", [2, 3])])["app_cpu"] == 2
    with pytest.raises(ValueError, match="two CPUs"):
        w.placement([("sender", [0])], [("receiver", [0])])  # real servers listing one CPU each


ZC = (("sender", "/opt/b/zcflow-0123456789"), ("receiver", "/opt/b/zcflow-0123456789"))


def test_zero_copy_flows_run_zcflow_from_each_endpoints_build_pinned_with_the_window():
    w = ZeroCopyFlows(5, 2, send_mode="zerocopy", recv_mode="mmap", binaries=ZC)
    [f] = w.flows([("sender", [0])], [("receiver", [1])])
    assert w.server_argv(f, "198.18.0.2") == ["/opt/b/zcflow-0123456789", "-s", "-B", "198.18.0.2", "-p", "5301",
                                              "-m", "mmap", "-t", "5", "-O", "2", "-C", "1"]
    assert w.client_argv(f, "198.18.0.2") == ["/opt/b/zcflow-0123456789", "-c", "198.18.0.2", "-p", "5301",
                                              "-m", "zerocopy", "-t", "5", "-O", "2", "-C", "0"]
    assert workload_comms(w) == ["zcflow-01234567"]  # the kernel keeps 15 characters of the name
    # a manifest's JSON lists come back as the same workload
    import json
    assert from_description(json.loads(json.dumps(w.describe()))) == w
    with pytest.raises(ValueError, match="no zcflow built for endpoint 'sender2'"):
        w.client_argv(f.__class__(0, "sender2", 0, "receiver", 1, 5301), "198.18.0.2")


def test_zero_copy_flows_report_counts_that_sum_over_flows():
    w = ZeroCopyFlows(5, 2, send_mode="zerocopy", recv_mode="mmap", binaries=ZC)
    sent = w.parse_client(fixture_text("zcflow_sender_zerocopy.txt"), "c.txt")
    assert sent["throughput_gbps"] == pytest.approx(1680867328 * 8 / 1000188694)
    assert sent["zerocopy_copied_count"] == sent["zerocopy_completed_count"] == 11629
    assert sent["sender_app_cpu_s"] == pytest.approx((3705000 + 834035000) / 1e9)
    got = w.parse_server(fixture_text("zcflow_receiver_mmap.txt"), "s.txt")
    assert got == {"receiver_app_bytes_count": 1677328278.0, "receiver_app_cpu_s": pytest.approx(0.631762),
                   "receiver_mapped_bytes_count": 1572495360.0}
    assert "receiver_mapped_bytes_count" not in w.parse_server(fixture_text("zcflow_receiver_copy.txt"), "s.txt")
    for bad in ({"send_mode": "splice"}, {"recv_mode": "zerocopy"}):
        with pytest.raises(ValueError, match="mode must be one of"):
            ZeroCopyFlows(5, 2, **bad)


def test_a_paced_long_flow_asks_iperf3_for_its_rate_and_an_unpaced_one_describes_itself_as_before():
    """The NIC rehearsal's TCG guests: under a saturating flow a command took 2.7 s and perf did not
    start in 90 s; paced at 20 Mbit/s, 0.7 s (docs/nic-rehearsal.md)."""
    paced = LongFlows(5, 2, rate_mbps=20)
    [f] = paced.flows(SENDERS, RECEIVERS)
    assert paced.client_argv(f, "198.18.0.2")[-2:] == ["-b", "20M"]
    assert paced.describe()["rate_mbps"] == 20
    assert from_description(paced.describe()) == paced
    plain = LongFlows(5, 2)
    assert "-b" not in plain.client_argv(f, "198.18.0.2")
    # recorded campaigns' workloads (and the point ids made from them) have no rate key: unpaced adds none
    assert "rate_mbps" not in plain.describe() and from_description(plain.describe()) == plain
    for bad in (-1, 2.5, 400_001):
        with pytest.raises(ValueError, match="a flow's rate must be a whole number of Mbit/s"):
            LongFlows(5, 2, rate_mbps=bad)
