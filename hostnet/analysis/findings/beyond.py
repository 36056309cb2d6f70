"""Beyond the paper (notebook 15): zero-copy send and receive (F29-F31, expectations from the
kernel's own documentation) and BIG TCP (F32 IPv4, F33 IPv6), on the campaigns' per-run costs."""
from __future__ import annotations

import dataclasses

import pandas as pd

from .. import verdicts

# the finding each IP version's BIG TCP is judged under, and what a receiver needs for it
BIG_TCP_FINDINGS = {4: ("F32", "a receiver whose GRO builds packets above 64 KB (IPv4: Linux 6.3, gro_ipv4_max_size)"),
                    6: ("F33", "a receiver whose GRO builds packets above 64 KB (IPv6: Linux 5.19, gro_max_size; "
                                   "hostnet's limit knobs: 6.3)")}


def _values(runs: pd.DataFrame, col: str, send_mode: str, recv_mode: str) -> list[float]:
    g = runs[(runs.send_mode == send_mode) & (runs.recv_mode == recv_mode)].sort_values("run_id")
    return g[col].dropna().tolist()


def _point(send_mode: str, recv_mode: str) -> dict:
    return {"send_mode": send_mode, "recv_mode": recv_mode}


def _have(runs: pd.DataFrame, *pairs: tuple[str, str]) -> bool:
    return set(pairs) <= set(zip(runs.send_mode, runs.recv_mode, strict=True))


def f29(runs: pd.DataFrame) -> verdicts.Judgement | None:
    """sendfile takes the sender's copy away: its data-copy share falls."""
    if not _have(runs, ("copy", "copy"), ("sendfile", "copy")):
        return None
    return verdicts.direction(
        verdicts.difference(_values(runs, "sender_data_copy_pct", "copy", "copy"),
                            _values(runs, "sender_data_copy_pct", "sendfile", "copy")),
        want=">", what="sender's data-copy share, send() → sendfile()", unit=" %", fmt=".1f",
        points=[_point("copy", "copy"), _point("sendfile", "copy")])


def f30(runs: pd.DataFrame) -> verdicts.Judgement | None:
    """MSG_ZEROCOPY lowers the sender's CPU per MB."""
    if not _have(runs, ("copy", "copy"), ("zerocopy", "copy")):
        return None
    j = verdicts.direction(
        verdicts.difference(_values(runs, "sender_us_per_mb", "copy", "copy"),
                            _values(runs, "sender_us_per_mb", "zerocopy", "copy")),
        want=">", what="sender CPU per MB, send() → MSG_ZEROCOPY", unit=" µs", fmt=".0f",
        points=[_point("copy", "copy"), _point("zerocopy", "copy")])
    copied = runs[(runs.send_mode == "zerocopy")].copied_pct.mean()
    note = (f"; the kernel completed {copied:.0f} % of the sends as copied (the receiver is local: its "
            "delivery copies the pinned pages, which the ledger bills to the testbed)") if copied == copied else ""
    return dataclasses.replace(j, shows=j.shows + note)


def f31(runs: pd.DataFrame) -> verdicts.Judgement | None:
    """TCP_ZEROCOPY_RECEIVE lowers the receiver's CPU per MB where pages are mapped."""
    if not _have(runs, ("zerocopy", "copy"), ("zerocopy", "mmap")):
        return None
    mapped = runs[(runs.send_mode == "zerocopy") & (runs.recv_mode == "mmap")].mapped_pct.mean()
    if not mapped > 1.0:
        return verdicts.not_testable(
            f"the receiver mapped {mapped:.1f} % of the bytes: nothing to compare",
            "pages a receiver can map: whole-page payloads (MTU 61492 here) and, on a NIC, header-data split")
    j = verdicts.direction(
        verdicts.difference(_values(runs, "receiver_us_per_mb", "zerocopy", "copy"),
                            _values(runs, "receiver_us_per_mb", "zerocopy", "mmap")),
        want=">", what="receiver CPU per MB, recv() → TCP_ZEROCOPY_RECEIVE (MSG_ZEROCOPY sender)",
        unit=" µs", fmt=".0f", points=[_point("zerocopy", "copy"), _point("zerocopy", "mmap")])
    return dataclasses.replace(j, shows=j.shows + f"; {mapped:.1f} % of the bytes mapped")


def big_tcp(runs: pd.DataFrame, needs: str) -> verdicts.Judgement | None:
    """F32/F33 on one IP version's runs, the smallest limit against the largest: with larger GSO/GRO
    packets the receiver's per-packet layers (tcp/ip + netdev + skb) cost less CPU per MB moved;
    judged on that cost, not on their share, which also falls when other work grows. Its premise,
    that GRO delivered larger packets, is checked first. None below two limits."""
    if runs.big_tcp_bytes.nunique() < 2:
        return None
    sizes = sorted(int(b) for b in runs.big_tcp_bytes.unique())  # plain ints: the points go into sweep.json
    small, large = sizes[0], sizes[-1]
    pick = {b: runs[runs.big_tcp_bytes == b].sort_values("run_id") for b in (small, large)}
    grew = verdicts.difference(pick[small].post_gro_skb_bytes.dropna(), pick[large].post_gro_skb_bytes.dropna())
    # the grid's own points: an ip_version only where the campaign named one (top-ups match them)
    named = {"ip_version": int(runs.ip_version.iloc[0])} if runs.ip_named.iloc[0] else {}
    points = [{"big_tcp_bytes": small, **named}, {"big_tcp_bytes": large, **named}]
    if grew.sign != "<":
        return verdicts.not_testable(f"GRO did not deliver larger packets at {large} bytes ({grew.text('.0f', ' B')})",
                                     needs)
    cost = {b: pick[b].receiver_per_skb_us_per_mb.tolist() for b in (small, large)}
    j = verdicts.direction(
        verdicts.difference(cost[small], cost[large]), want=">",
        what=f"receiver's tcp/ip + netdev + skb CPU per MB, {small} → {large} B limit",
        unit=" µs", fmt=".0f", points=points)
    share = (f"; their share {pick[small].receiver_per_skb_pct.mean():.1f} → "
             f"{pick[large].receiver_per_skb_pct.mean():.1f} %")
    return dataclasses.replace(j, shows=j.shows + share + f"; mean packet after GRO "
                               f"{grew.mean_a / 1024:.0f} → {grew.mean_b / 1024:.0f} KiB")
