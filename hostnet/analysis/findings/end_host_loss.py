"""The 2010 end-host loss study's findings (notebook 14): F21-F23 on the UDP campaign, F28 on the
congestion-control campaign (notebook 11's, which judges it too so that one top-up serves both)."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import verdicts
from ..verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

LOSSY_PCT = 1.0  # a point losing more than this overloaded the receiver
# F23's premise: the sender offers the receiving host at least this share of the target rate, else the
# receive CPU cannot be the bottleneck the study describes (its loss came with the receiver overloaded)
OFFERED_SHARE = 0.9
OVERLOAD = "an offered rate that overloads it"


def sweep_point(rate_gbps: float, buffer_kb: int, placement: str) -> dict:
    """The sweep's point (its grid keys) behind a (rate, buffer, placement) of the summary."""
    return {"udp_rate_gbps": rate_gbps, "socket_buffer_kb": int(buffer_kb), "app_cpu": placement}


def _top(summary: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    rate = summary.target_gbps.max()
    return rate, summary[summary.target_gbps == rate].set_index(["placement", "buffer_kb"])


def _loss(tidy: pd.DataFrame, rate: float, placement: str, kb) -> list[float]:
    return verdicts.clean_values(tidy, "loss_pct", "both", placement=placement, buffer_kb=kb, target_gbps=rate)


def f21(summary: pd.DataFrame, locations: Sequence[str]) -> verdicts.Judgement:
    """Every lost datagram is found at a receiver-side location, and the counters add up."""
    lossy = summary[summary.loss_pct > LOSSY_PCT]
    if lossy.empty:
        return verdicts.Judgement(INCONCLUSIVE, f"no point lost more than {LOSSY_PCT:g} % (highest offered "
                                  f"{summary.offered_gbps.max():.2f} Gbit/s): the receiver was never overloaded",
                                  OVERLOAD)
    where = lossy[[f"{loc}_lost_count" for loc in locations]].sum()  # datagrams, not a sum of shares
    main = where.idxmax().removesuffix("_lost_count")
    at_receiver = 100.0 * (where.sum() - where["sender_lost_count"]) / where.sum() if where.sum() else float("nan")
    agree = lossy.dropna(subset=["iperf_loss_pct"])
    cross = (f"; iperf's own count (whole run) {agree.iperf_loss_pct.min():.1f}–{agree.iperf_loss_pct.max():.1f}"
             f" % vs counters {agree.loss_pct.min():.1f}–{agree.loss_pct.max():.1f} %") if len(agree) else ""
    shows = (f"{len(lossy)} lossy points; {at_receiver:.0f} % of their lost datagrams lost in the receiving "
             f"host, mostly at '{main}'{cross}; no network core on veth, so that half holds by construction")
    return verdicts.Judgement(REPRODUCED if at_receiver >= 90 else NOT_REPRODUCED, shows)


def f22(summary: pd.DataFrame, tidy: pd.DataFrame, notes: dict) -> verdicts.Judgement:
    """The application on the receive CPU loses more than on a different CPU at the highest rate."""
    rate, top = _top(summary)
    both = [kb for kb in sorted({kb for _, kb in top.index}) if {("same", kb), ("different", kb)} <= set(top.index)]
    if not both:
        return verdicts.Judgement(NOT_TESTABLE, "the sweep lacks a same/different pair at its highest rate")
    if notes.get("different", {}).get("confounded"):
        return verdicts.Judgement(NOT_TESTABLE, f"{notes['different']['note']}; needs a third CPU, apart from the "
                                                "sender's and the receive CPU, for the application")
    if max(top.loc[(p, kb)].loss_pct for kb in both for p in ("same", "different")) <= LOSSY_PCT:
        return verdicts.Judgement(INCONCLUSIVE, f"no pair lost more than {LOSSY_PCT:g} % at {rate:g} Gbit/s offered",
                                  "a rate that overloads the receiver")
    return verdicts.combine([verdicts.direction(
        verdicts.difference(_loss(tidy, rate, "different", kb), _loss(tidy, rate, "same", kb)), want="<", unit="%",
        what=f"{kb // 1024} MB, {rate:g} Gbit/s: loss different → same CPU",
        points=[sweep_point(rate, kb, p) for p in ("different", "same")]) for kb in both])


def f23(summary: pd.DataFrame, tidy: pd.DataFrame) -> verdicts.Judgement:
    """At the highest rate a larger socket buffer still loses (same-CPU placement: no confound)."""
    rate, top = _top(summary)
    kbs = sorted({kb for p, kb in top.index if p == "same"})
    if len(kbs) < 2:
        return verdicts.Judgement(NOT_TESTABLE, "the sweep lacks two socket-buffer sizes at its highest rate")
    small, large = top.loc[("same", kbs[0])], top.loc[("same", kbs[-1])]
    shows = (f"app on the receive CPU, {rate:g} Gbit/s offered: {kbs[0] // 1024} MB loses "
             f"{small.loss_pct:.1f} %, {kbs[-1] // 1024} MB loses {large.loss_pct:.1f} % "
             f"(delivered {small.delivered_gbps:.2f} vs {large.delivered_gbps:.2f} Gbit/s)")
    if small.offered_gbps < OFFERED_SHARE * rate:  # the premise: a sender that outpaces the receive CPU
        return verdicts.not_testable(
            shows + f"; the premise is unmet: only {small.offered_gbps:.2f} of {rate:g} Gbit/s reached the "
            "receiver (the sender's one core is the bottleneck), so the receiving CPU was never overloaded",
            "a sender that outpaces the receive CPU (more sender cores than the testbed's one, or pktgen)")
    if small.loss_pct <= LOSSY_PCT:
        return verdicts.Judgement(INCONCLUSIVE, shows + f"; the receiver was not overloaded at the small buffer "
                                  f"(under {LOSSY_PCT:g} % lost)", OVERLOAD)
    j = verdicts.direction(verdicts.against_level(_loss(tidy, rate, "same", kbs[-1]), LOSSY_PCT), want="<",
                           what=f"{kbs[-1] // 1024} MB loss against the {LOSSY_PCT:g} % line", unit="%",
                           points=[sweep_point(rate, kbs[-1], "same")])
    return verdicts.Judgement(j.verdict, f"{shows}; {j.shows}", j.decide, j.points)


def f28(cc_tidy: pd.DataFrame, refused_algorithms: dict[str, str], margin_pct: float) -> verdicts.Judgement:
    """TCP variants reach about the same throughput (each within margin_pct of cubic's, by the CI of
    the difference) except Vegas, which falls behind; not testable where the kernel lacks tcp_vegas."""
    if "vegas" in refused_algorithms or "vegas" not in set(cc_tidy.congestion_control):
        return verdicts.not_testable(f"vegas: {refused_algorithms.get('vegas', 'not in the sweep')}",
                                     "a kernel with tcp_vegas (CONFIG_TCP_CONG_VEGAS)")
    others = [cc for cc in sorted(set(cc_tidy.congestion_control)) if cc not in ("cubic", "vegas")]
    parts = []
    for n in sorted(cc_tidy.flows.unique()):
        def thr(cc, n=n):
            return verdicts.clean_values(cc_tidy, "throughput_gbps", "both", congestion_control=cc, flows=n)

        def pts(cc, n=n):
            return [{"congestion_control": "cubic", "flows": n}, {"congestion_control": cc, "flows": n}]
        parts += [verdicts.similar(verdicts.difference(thr("cubic"), thr(cc)), margin_pct=margin_pct,
                                   what=f"{n} flow(s) throughput cubic → {cc}", unit="Gbit/s", points=pts(cc))
                  for cc in others]
        parts.append(verdicts.direction(verdicts.difference(thr("cubic"), thr("vegas")), want=">",
                                        what=f"{n} flow(s) throughput cubic → vegas", unit="Gbit/s",
                                        points=pts("vegas")))
    return verdicts.combine(parts)


@verdicts.under_accountings
def tcp_verdict(cc_tidy: pd.DataFrame, refused_algorithms: dict[str, str], reference_dir,
                margin_pct: float = 15.0) -> verdicts.Verdicts:
    """F28's table on the congestion-control campaign: notebook 14 shows it, notebook 11's judge
    asks it too (one top-up serves both)."""
    return verdicts.collect(verdicts.load_findings(reference_dir),
                            {"F28": f28(cc_tidy, refused_algorithms, margin_pct)})
