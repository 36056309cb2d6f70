"""UDP end-host loss (Marian et al., DSN 2010): where offered datagrams were lost, from counters
(the tidy rows of a UdpRate point; its live settings are measure/udp_loss.py's). All counter
deltas cover the measurement window only (iperf2 has no warm-up option; its own report covers the
whole run).

Loss locations (metric lost_datagrams_count, category):
  sender   the sender's socket buffer (Udp SndbufErrors) and, on a NIC, its tx drops
  link     receive drops on the veth/NIC (rx dropped). On veth the sending veth's tx drops are
           the receiver's: veth_xmit counts a failed hand-over (peer ring or backlog full) as
           its own tx drop; the backlog part is counted once, as backlog
  backlog  the per-CPU input queue was full (softnet_stat dropped, netdev_max_backlog)
  rcvbuf   the socket's receive buffer was full (Udp RcvbufErrors)
  udp_other other UDP receive errors (InErrors - RcvbufErrors: checksum, ...)
Shares (lost_pct, loss_pct) are of the datagrams the receiving side accounts for (delivered +
lost, which is also the offered rate, offered_gbps): the receiver's counters are read at one
instant, while the sender's are read in another namespace tens of ms apart on a loaded machine,
which at Gbit/s rates shifts thousands of datagrams. The sender's Udp OutDatagrams gives
sent_gbps; the gap is kept as unaccounted_datagrams_count. Rates divide each side's counts by the
time between its own two /proc/net/snmp reads, which bracket the window (a few % longer than it).
"""
from __future__ import annotations

from ..parsers.counters import deltas, parse_ip_link_stats, parse_snmp, parse_softnet_stat, softnet_deltas
from ..parsers.procstat import cpu_utilization, parse_proc_stat, proc_stat_interval
from ..store import Rows

LOCATIONS = ("sender", "link", "backlog", "rcvbuf", "udp_other")


def loss_locations(snd_snmp: dict, rcv_snmp: dict, snd_link: dict, rcv_link: dict, softnet_dropped: int,
                   veth: bool) -> dict[str, int]:
    """Datagrams lost at each location, from counter deltas over the window."""
    tx_dropped = snd_link.get("tx.dropped", 0)
    sender = snd_snmp.get("Udp.SndbufErrors", 0) + (0 if veth else tx_dropped)
    link = rcv_link.get("rx.dropped", 0) + (max(0, tx_dropped - softnet_dropped) if veth else 0)
    rcvbuf = rcv_snmp.get("Udp.RcvbufErrors", 0)
    return {"sender": sender, "link": link, "backlog": softnet_dropped, "rcvbuf": rcvbuf,
            "udp_other": max(0, rcv_snmp.get("Udp.InErrors", 0) - rcvbuf)}


def window_rows(m: dict, raw: dict, ep_raw: dict) -> list[dict]:
    """Tidy rows: offered/delivered rate, loss by location, softnet squeeze, CPU of rx and app CPUs."""
    flow = m["flows"][0]
    snd_role, rcv_role = flow["sender"], flow["receiver"]
    machine = m["testbed"]["endpoints"][rcv_role]["machine"]
    seconds = float(m["window"]["seconds"])
    payload = int(m["workload"]["payload_bytes"])
    out = Rows(m)
    add = out.add

    def snap(role, name, parse):
        f = ep_raw[role]
        return deltas(parse(f[f"before.{name}"]), parse(f[f"after.{name}"]), f"{role}.{name}")

    def snap_seconds(role):
        """Time between the role's two snmp reads; the counter deltas span it, not the window."""
        f = ep_raw[role]
        if "before.snmp_monotonic_s.txt" not in f:
            # runs recorded before the reads were timed: the window, so their rates read a few % high
            return seconds
        return float(f["after.snmp_monotonic_s.txt"]) - float(f["before.snmp_monotonic_s.txt"])

    snd_snmp, rcv_snmp = snap(snd_role, "snmp.txt", parse_snmp), snap(rcv_role, "snmp.txt", parse_snmp)
    snd_link = snap(snd_role, "link.json", parse_ip_link_stats)
    rcv_link = snap(rcv_role, "link.json", parse_ip_link_stats)
    files = raw[machine]
    before, after = parse_softnet_stat(files["softnet_before.txt"]), parse_softnet_stat(files["softnet_after.txt"])
    per_cpu = softnet_deltas(before, after, f"{machine}.softnet_stat")
    softnet = {k: sum(d[k] for d in per_cpu.values()) for k in ("dropped", "time_squeeze")}
    lost = loss_locations(snd_snmp, rcv_snmp, snd_link, rcv_link, softnet["dropped"],
                          m["testbed"]["kind"] == "embedded")
    sent = snd_snmp.get("Udp.OutDatagrams", 0)
    delivered = rcv_snmp.get("Udp.InDatagrams", 0)
    arrived = delivered + sum(lost.values())  # offered to the receiving host, in its own account
    snd_gbps = payload * 8 / snap_seconds(snd_role) / 1e9  # Gbit/s per datagram counted
    rcv_gbps = payload * 8 / snap_seconds(rcv_role) / 1e9
    add("sender", "sent_datagrams_count", sent)
    add("both", "sent_gbps", sent * snd_gbps)
    add("receiver", "offered_datagrams_count", arrived)
    add("both", "offered_gbps", arrived * rcv_gbps)
    add("receiver", "delivered_datagrams_count", delivered)
    add("both", "delivered_gbps", delivered * rcv_gbps)
    for where, n in lost.items():
        add("receiver", "lost_datagrams_count", n, where)
        add("receiver", "lost_pct", 100.0 * n / arrived if arrived else float("nan"), where)
    add("both", "loss_pct", 100.0 * sum(lost.values()) / arrived if arrived else float("nan"))
    # sent minus offered: in flight or queued at the window's edges, and the namespaces' read skew
    add("both", "unaccounted_datagrams_count", sent - arrived)
    add("receiver", "time_squeeze_count", softnet["time_squeeze"])
    add("both", "target_gbps", float(m["workload"]["rate_gbps"]))
    return out.rows + cpu_rows(m, machine, files)


def cpu_rows(m: dict, machine: str, files: dict) -> list[dict]:
    """The receiving machine's busy and softirq CPU on each placement role's CPU (rx, app, sender)."""
    out = Rows(m)
    ps_before = parse_proc_stat(files["proc_stat_before.txt"])
    ps_after = parse_proc_stat(files["proc_stat_after.txt"])
    interval, clk = proc_stat_interval(files)
    for role in ("rx_cpu", "app_cpu", "sender_cpu"):
        u = cpu_utilization(ps_before, ps_after, [m["placement"][role]], interval, clk)
        out.add("machine:" + machine, "cpu_busy_pct", u["busy_pct"], role)
        out.add("machine:" + machine, "cpu_softirq_pct", u["softirq_pct"], role)
    return out.rows
