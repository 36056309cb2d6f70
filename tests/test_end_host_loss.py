"""UDP end-host loss (notebook 14): iperf2 parser on captured output, workload argv and CPU
placement, loss locations from counters, verdicts on small summaries."""
import pandas as pd
import pytest

from conftest import REPO, FakeHost, fixture_text
from hostnet import end_host_loss as ehl, udp_loss
from hostnet.knobs import Journal
from hostnet.parsers import ParseError
from hostnet.parsers.iperf2 import parse_iperf2_udp
from hostnet.sweep import SweepSpec, point_workload
from hostnet.testbed import Endpoint, Testbed
from hostnet.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED
from hostnet.workloads import UdpRate

REF = REPO / "data" / "reference"


def test_server_report_gives_loss_and_granted_buffer():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_server_1M.txt"))
    assert r.buffer_bytes == 2 * 1024 * 1024  # Linux doubles the 1 MB asked for
    assert (r.server.lost, r.server.total) == (15916, 342106)
    assert r.server.loss_pct == pytest.approx(4.652, abs=1e-3)
    assert r.server.bps == 1.28e9 and r.datagrams_sent is None


def test_client_report_separates_sent_from_the_server_report():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_client_2g.txt"))
    assert r.datagrams_sent == 342107
    assert r.local.bps == 1.34e9 and r.local.lost is None
    assert r.server.bps == 1.28e9 and r.server.lost == 15916
    r8 = parse_iperf2_udp(fixture_text("iperf2_udp_client_8g.txt"))
    assert r8.local.bps == 677e6 and r8.server.loss_pct == 0.0


def test_iperf_2_0_report_lines_pad_the_end_time():
    text = ("[  3] local 198.18.0.2 port 15002 connected with 198.18.0.1 port 40000\n"
            "[  3]  0.0- 3.0 sec   457 MBytes  1.28 Gbits/sec   0.001 ms 15916/342106 (4.7%)\n")
    r = parse_iperf2_udp(text)
    assert r.server.seconds == 3.0 and (r.server.lost, r.server.total) == (15916, 342106)


def test_client_without_server_report_and_empty_output():
    r = parse_iperf2_udp(fixture_text("iperf2_udp_client_noserver.txt"))
    assert r.server is None and r.datagrams_sent == 26229
    assert r.local.bytes == pytest.approx(36.8 * 2**20)
    with pytest.raises(ParseError, match="empty"):
        parse_iperf2_udp("")
    with pytest.raises(ParseError, match="no iperf2 report"):
        parse_iperf2_udp("connect failed: Connection refused\n")


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


def _testbed(tmp_path, receiver_cpus, receiver_machine="local"):
    hosts = {"local": FakeHost("local"), "rx": FakeHost("rx")}
    eps = {"sender": Endpoint("sender", FakeHost("snd"), "vs", "198.18.0.1", [0], "local"),
           "receiver": Endpoint("receiver", FakeHost("rcv"), "vr", "198.18.0.2", receiver_cpus, receiver_machine)}
    return Testbed("t", "embedded", eps, {m: hosts[m] for m in {"local", receiver_machine}}, Journal(tmp_path / "j"))


def test_confound_and_knob_settings(tmp_path):
    w = UdpRate(2, 1, app_cpu="different", socket_buffer_kb=4096)
    p = udp_loss.placement(_testbed(tmp_path, [1]), w)
    assert p["confounded"] and "sender also uses" in p["note"]
    assert not udp_loss.placement(_testbed(tmp_path, [1], "rx"), w)["confounded"]  # sender on another machine
    assert not udp_loss.placement(_testbed(tmp_path, [1, 2]), w)["confounded"]
    got = {(where, knob.name, key): value for where, knob, key, value in udp_loss.settings(_testbed(tmp_path, [3]), w)}
    assert got == {("receiver", "rps_cpus", "vr/rx-0"): "8", ("receiver", "rps_flow_cnt", "vr/rx-0"): "0",
                   ("machine:local", "sysctl", "net.core.rmem_max"): str(4096 * 1024)}


def test_loss_locations_count_a_veth_backlog_drop_once():
    snd = {"Udp.SndbufErrors": 2}
    rcv = {"Udp.RcvbufErrors": 100, "Udp.InErrors": 103}
    veth = udp_loss.loss_locations(snd, rcv, {"tx.dropped": 50}, {"rx.dropped": 1}, 40, veth=True)
    assert veth == {"sender": 2, "link": 11, "backlog": 40, "rcvbuf": 100, "udp_other": 3}
    nic = udp_loss.loss_locations(snd, rcv, {"tx.dropped": 50}, {"rx.dropped": 1}, 40, veth=False)
    assert nic == {"sender": 52, "link": 1, "backlog": 40, "rcvbuf": 100, "udp_other": 3}


def _snmp(**udp):
    keys = ["InDatagrams", "InErrors", "RcvbufErrors", "OutDatagrams", "SndbufErrors"]
    return f"Udp: {' '.join(keys)}\nUdp: {' '.join(str(udp.get(k, 0)) for k in keys)}\n"


def _link(tx_dropped=0, rx_dropped=0):
    return ('[{"stats64": {"rx": {"packets": 1, "dropped": %d}, "tx": {"packets": 1, "dropped": %d}}}]'
            % (rx_dropped, tx_dropped))


def test_window_rows_from_counter_snapshots():
    m = {"run_id": "r", "campaign": "c", "experiment": "udp-loss", "config": {"name": "no-opts"}, "repetition": 0,
         "flows": [{"sender": "sender", "receiver": "receiver"}], "window": {"seconds": 2.0},
         "testbed": {"kind": "embedded", "endpoints": {"receiver": {"machine": "local"}}},
         "workload": {"payload_bytes": 1470, "rate_gbps": 4.0},
         "placement": {"rx_cpu": 1, "app_cpu": 1, "sender_cpu": 0}}
    stat = "cpu0 10 0 10 80 0 0 0 0 0 0\ncpu1 10 0 10 80 0 0 0 0 0 0\n"
    stat2 = "cpu0 60 0 50 90 0 0 0 0 0 0\ncpu1 20 0 40 90 0 0 50 0 0 0\n"
    raw = {"local": {"softnet_before.txt": "00000000 00000000 00000000\n00000000 00000000 00000000\n",
                     "softnet_after.txt": "00000000 00000000 00000000\n00000010 00000000 00000003\n",
                     "proc_stat_before.txt": stat, "proc_stat_after.txt": stat2}}
    ep = {"sender": {"before.snmp.txt": _snmp(), "after.snmp.txt": _snmp(OutDatagrams=100000),
                     "before.link.json": _link(), "after.link.json": _link()},
          "receiver": {"before.snmp.txt": _snmp(), "after.snmp.txt": _snmp(InDatagrams=80000, InErrors=20000,
                                                                           RcvbufErrors=20000),
                       "before.link.json": _link(), "after.link.json": _link()}}
    rows = pd.DataFrame(udp_loss.window_rows(m, raw, ep)).set_index(["metric", "category"]).value
    assert rows[("offered_gbps", "")] == pytest.approx(100000 * 1470 * 8 / 2 / 1e9)
    assert rows[("delivered_gbps", "")] == pytest.approx(80000 * 1470 * 8 / 2 / 1e9)
    assert rows[("lost_pct", "rcvbuf")] == 20.0 and rows[("loss_pct", "")] == 20.0
    assert rows[("lost_datagrams_count", "backlog")] == 0 and rows[("time_squeeze_count", "")] == 3
    assert rows[("unaccounted_datagrams_count", "")] == 0
    assert rows[("cpu_busy_pct", "rx_cpu")] == pytest.approx(100 * 90 / 100)  # 10+30+50 busy of 100 ticks
    assert rows[("cpu_softirq_pct", "rx_cpu")] == pytest.approx(50.0)
    # with the snmp reads timed, rates divide by the time between them (2.5 s), not the window's 2 s
    ep["sender"].update({"before.snmp_monotonic_s.txt": "100.0\n", "after.snmp_monotonic_s.txt": "102.4\n"})
    ep["receiver"].update({"before.snmp_monotonic_s.txt": "100.1\n", "after.snmp_monotonic_s.txt": "102.6\n"})
    rows = pd.DataFrame(udp_loss.window_rows(m, raw, ep)).set_index(["metric", "category"]).value
    assert rows[("sent_gbps", "")] == pytest.approx(100000 * 1470 * 8 / 2.4 / 1e9)
    assert rows[("offered_gbps", "")] == pytest.approx(100000 * 1470 * 8 / 2.5 / 1e9)
    assert rows[("delivered_gbps", "")] == pytest.approx(80000 * 1470 * 8 / 2.5 / 1e9)
    assert rows[("loss_pct", "")] == 20.0  # shares do not depend on the interval


def test_sweep_builds_udp_points():
    spec = SweepSpec(experiment="udp-loss", configs=["no-opts"],
                     grid={"udp_rate_gbps": [1, 8], "socket_buffer_kb": [1024], "app_cpu": ["same", "different"]},
                     repetitions=1, duration=2, warmup=1)
    works = [point_workload(spec, p, "iperf") for p in spec.points()]
    assert len(works) == 4 and all(isinstance(w, UdpRate) for w in works)
    assert {(w.rate_gbps, w.app_cpu) for w in works} == {(1.0, "same"), (1.0, "different"), (8.0, "same"),
                                                         (8.0, "different")}


def summary(same_1m, diff_1m, same_4m, diff_4m, sender=0.0, spread=0.5, offered=100_000):
    """A table() result: loss medians, each with a ±spread range over repetitions, and counts of
    `offered` datagrams per point."""
    rows = []
    for placement, kb, loss in (("same", 1024, same_1m), ("different", 1024, diff_1m), ("same", 4096, same_4m),
                                ("different", 4096, diff_4m)):
        for rate, scale in ((1.0, 0.0), (8.0, 1.0)):
            total = (loss + sender) * scale
            row = {"placement": placement, "buffer_kb": kb, "target_gbps": rate, "offered_gbps": rate / 3,
                   "delivered_gbps": rate / 4, "loss_pct": total, "loss_min_pct": max(0.0, total - spread),
                   "loss_max_pct": total + spread, "sender_pct": sender * scale,
                   "link_pct": 0.0, "backlog_pct": 0.0, "rcvbuf_pct": loss * scale, "udp_other_pct": 0.0,
                   "unaccounted_pct": 0.5, "iperf_loss_pct": loss * scale + 0.5, "repetitions": 3}
            for loc in udp_loss.LOCATIONS:
                row[f"{loc}_lost_count"] = row[f"{loc}_pct"] * offered / 100
            rows.append(row)
    return pd.DataFrame(rows)


CLEAN = {"same": {"confounded": False}, "different": {"confounded": False}}
CONFOUNDED = {"same": {"confounded": False}, "different": {"confounded": True, "note": "lends the sender's core"}}


def verdicts(s, notes=CLEAN):
    return ehl.verdict_table(s, notes, REF).set_index("id").verdict.to_dict()


def test_study_pattern_is_reproduced_without_confound():
    assert verdicts(summary(30, 5, 20, 2)) == {"F21": REPRODUCED, "F22": REPRODUCED, "F23": REPRODUCED}
    shows = ehl.verdict_table(summary(30, 5, 20, 2), CLEAN, REF).set_index("id").loc["F21", "this run shows"]
    assert "mostly at 'rcvbuf'" in shows and "iperf's own count (whole run) 2.5–30.5 % vs counters 2.0–30.0 %" in shows


def test_opposite_patterns_are_not_reproduced():
    v = verdicts(summary(5, 30, 0.2, 25))
    assert v["F22"] == NOT_REPRODUCED and v["F23"] == NOT_REPRODUCED
    assert verdicts(summary(5, 5, 2, 2, sender=30))["F21"] == NOT_REPRODUCED  # lost at the sender


def test_f22_within_run_to_run_spread_is_inconclusive():
    """3 points apart in the medians, but the repetitions' ranges overlap: noise, not a direction."""
    v = ehl.verdict_table(summary(30, 33, 20, 23, spread=4), CLEAN, REF).set_index("id")
    assert v.loc["F22", "verdict"] == INCONCLUSIVE and "ranges overlap" in v.loc["F22", "this run shows"]
    assert verdicts(summary(30, 33, 20, 23, spread=1))["F22"] == NOT_REPRODUCED  # apart: a direction
    one_run = summary(30, 5, 20, 2).assign(repetitions=1)
    assert verdicts(one_run)["F22"] == INCONCLUSIVE


def test_f21_weighs_points_by_their_datagrams():
    """A point losing half of a few datagrams at the sender must not outweigh 5 % of many at the receiver."""
    few = summary(0, 0, 0, 0, sender=50, offered=100)
    many = summary(5, 5, 5, 5, offered=1_000_000).assign(target_gbps=lambda d: d.target_gbps * 2)
    v = ehl.verdict_table(pd.concat([few, many], ignore_index=True), CLEAN, REF).set_index("id")
    assert v.loc["F21", "verdict"] == REPRODUCED and "mostly at 'rcvbuf'" in v.loc["F21", "this run shows"]
    assert verdicts(few)["F21"] == NOT_REPRODUCED


def test_confounded_placement_and_no_overload_are_inconclusive():
    v = ehl.verdict_table(summary(30, 40, 20, 30), CONFOUNDED, REF).set_index("id")
    assert v.loc["F22", "verdict"] == INCONCLUSIVE and "lends the sender's core" in v.loc["F22", "this run shows"]
    assert verdicts(summary(0.1, 0.2, 0.0, 0.1)) == {"F21": INCONCLUSIVE, "F22": INCONCLUSIVE, "F23": INCONCLUSIVE}
    one = summary(30, 5, 20, 2)
    assert verdicts(one[one.buffer_kb == 1024])["F23"] == NOT_TESTABLE


def test_highest_rate_breakdown_rows():
    top = ehl.highest_rate(summary(30, 5, 20, 2))
    assert len(top) == 4 and set(top.target_gbps) == {8.0}
    assert top.set_index(["placement", "buffer_kb"]).loc[("same", 1024), "rcvbuf_pct"] == 30


def test_embedded_testbed_gives_the_receiver_a_second_cpu_when_there_is_one():
    assert ehl.embedded_cpus(2) == ((0,), (1,))
    assert ehl.embedded_cpus(8) == ((0,), (1, 2))


def test_recorded_campaign_covers_the_grid_with_clean_runs():
    tidy, manifests = ehl.load(REPO / "data" / "runs", "20261123-end-host-loss-embedded")
    s = ehl.table(tidy)
    assert len(s) == len(ehl.RATES_GBPS) * len(ehl.BUFFERS_KB) * len(ehl.PLACEMENTS)
    assert (s.repetitions >= 1).all()
    assert (s[s.target_gbps == 0.5].loss_pct < 1).all()  # no loss well below what the receiver can take
    notes = ehl.placement_notes(manifests)
    assert notes["different"]["confounded"] and not notes["same"]["confounded"]
    assert len(ehl.highest_rate(s)) == 4
