"""hostnet.derive.udp_loss: where a UDP point's datagrams were lost, and its tidy rows from counter snapshots."""
import pandas as pd
import pytest

from hostnet.derive import udp_loss
from hostnet.parsers import ParseError


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
    # swapped softnet snapshots: the backlog drops would come out negative
    raw["local"]["softnet_before.txt"], raw["local"]["softnet_after.txt"] = (raw["local"]["softnet_after.txt"],
                                                                             raw["local"]["softnet_before.txt"])
    with pytest.raises(ParseError, match=r"local.softnet_stat: cpu1.processed, cpu1.time_squeeze went down"):
        udp_loss.window_rows(m, raw, ep)
