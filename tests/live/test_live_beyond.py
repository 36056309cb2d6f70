"""Notebook 15's mechanisms end to end on the embedded testbed (~60 s): zero-copy send and receive
through zcflow, BIG TCP through the bigtcp knobs, over IPv4 and IPv6, each setting restored."""
import dataclasses
import json
import os

import pytest

from conftest import live_ready
from hostnet import store, testbed
from hostnet.native.build import ensure
from hostnet.measure.sweep import run_sweep
from hostnet.knobs import link
from hostnet.sections import beyond

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def _limits(tb, role: str) -> dict:
    ep = tb.endpoints[role]
    return link.parse_bigtcp(ep.host.run([ensure("bigtcp"), "show", ep.iface]).stdout)


def test_zero_copy_points_map_pages_and_report_copied_sends(state_dir, tmp_path):
    spec = beyond.spec(send_modes=["copy", "zerocopy"], recv_modes=["mmap"], repetitions=1, duration=2, warmup=1)
    name = f"zc{os.getpid() % 10000}"
    with testbed.embedded(name) as tb:
        mtu = tb.endpoints["receiver"].host.run(["cat", f"/sys/class/net/{tb.endpoints['receiver'].iface}/mtu"])
        out = run_sweep(tb, spec, runs_dir=tmp_path, campaign="zc", progress=False)
        assert out["failed"] == 0
        assert tb.journal.restore() == []
        again = tb.endpoints["receiver"].host.run(["cat", f"/sys/class/net/{tb.endpoints['receiver'].iface}/mtu"])
        assert again.stdout == mtu.stdout  # MTU 61492 put back
    tidy, manifests = beyond.load(tmp_path, "zc", include_contaminated=True)
    assert {m["status"] for m in manifests} == {"ok"} and {m["workload"]["kind"] for m in manifests} == {"zero_copy"}
    row = beyond.table(tidy).set_index("send_mode")
    # a MSG_ZEROCOPY sender's pages reach the receiver as whole pages (copied on local delivery), which map;
    # a copying sender's do not
    assert row.loc["zerocopy", "mapped_pct"] > 50 and row.loc["copy", "mapped_pct"] == 0
    assert row.loc["zerocopy", "copied_pct"] == 100  # the kernel says so on every completion
    assert (row.receiver_app_us_per_mb > 0).all() and (row.tpc_gbps > 0).all()


def test_a_segment_size_of_whole_pages_maps_at_a_nics_mtu(state_dir, tmp_path):
    """Servers: a NIC takes 9000, not 61492; zcflow's -M 4108 (4096 of payload with timestamps, as
    tcp_mmap's -M) keeps every segment whole pages there, so the receiver still maps them, over
    IPv4 and IPv6 alike (the MSS excludes the IP header)."""
    spec = beyond.spec(send_modes=["zerocopy"], recv_modes=["mmap"], mtu=9000, mss=4108, repetitions=1, duration=2,
                       warmup=1, unprofiled_repetitions=0)  # the mapping is checked here, not perf's cost
    with testbed.embedded(f"zm{os.getpid() % 10000}") as tb:
        for version in (4, 6):  # a campaign per version: the zero-copy table pools by mechanism only
            one = dataclasses.replace(spec, grid={**spec.grid, "ip_version": [version]})
            out = run_sweep(tb, one, runs_dir=tmp_path, campaign=f"zm{version}", progress=False)
            assert out["failed"] == 0
        assert tb.journal.restore() == []
    for version in (4, 6):
        tidy, [m] = beyond.load(tmp_path, f"zm{version}", include_contaminated=True)
        assert m["workload"]["ip_version"] == version
        assert m["point"]["mss"] == 4108 and m["workload"]["mss"] == 4108
        server = store.raw_text(tmp_path / f"zm{version}" / m["run_id"], "zcflow_server_0.txt")
        assert " rcv_mss=4096" in server, server  # the segments the receiver saw carried whole pages
        row = beyond.table(tidy).iloc[0]
        assert row.mapped_pct > 50, (version, row.to_dict())


def test_big_tcp_point_raises_the_limits_and_grows_the_packets_then_restores(state_dir, tmp_path):
    """One IPv4 and one IPv6 point (big-tcp.yaml's versions): the flows use each family's address
    (the IPv6 one in the testbed's 2001:2::/64), and GRO builds packets above 64 KB in both."""
    spec = beyond.big_tcp_spec(sizes=[185000], repetitions=1, duration=2, warmup=1,
                               unprofiled_repetitions=0)  # the limits are checked here, not perf's cost
    name = f"bt{os.getpid() % 10000}"
    with testbed.embedded(name) as tb:
        before = (_limits(tb, "sender"), _limits(tb, "receiver"))
        out = run_sweep(tb, spec, runs_dir=tmp_path, campaign="bt", progress=False)
        assert out["failed"] == 0
        for attr in ("gso_max_size", "gso_ipv4_max_size"):
            assert _limits(tb, "sender")[attr] == 185000
        for attr in ("gro_max_size", "gro_ipv4_max_size"):
            assert _limits(tb, "receiver")[attr] == 185000
        assert tb.journal.restore() == []
        assert (_limits(tb, "sender"), _limits(tb, "receiver")) == before
        addresses = {6: tb.receiver.address(6), 4: tb.receiver.address(4)}
    runs = store.list_runs(tmp_path, "bt")
    assert len(runs) == 2
    for run in runs:
        m = store.load_manifest(run)
        assert m["probes"]["latency"]["local"]["sample_every"] == 8  # big-tcp.yaml's 1 in N
        version = m["workload"]["ip_version"]
        assert m["point"]["ip_version"] == version
        client = json.loads(store.raw_text(run, "iperf3_client_0.json"))
        assert client["start"]["connected"][0]["remote_host"] == addresses[version]
        t = store.read_tidy(run)
        mean = t[t.metric == "post_gro_skb_bytes_mean"].value.iloc[0]
        assert mean > 65536, (version, mean)  # GRO delivered packets the legacy limit would not allow
