"""§3.7 (mixed long/short flows): F14 (tpc falls by about the paper's size) and F26 (the breakdown's
shift) judged on small hand-made per-run frames by the CI of the difference, and the run's tpc split
between the long and the short flows."""
import pandas as pd

from conftest import REPO
from hostnet.charts.encodings import CPU_CLOCK_CAVEAT
from hostnet.sections import mixed_flows
from hostnet.analysis.verdicts import IN_DIRECTION, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, VOCABULARY

REF = REPO / "data" / "reference"
SPREAD = (0.0, 0.2, -0.2)  # Gbit/s, or share points, around a point's mean: three runs that differ a little
WIDE = (0.0, -4.0, 4.0)


def runs(long_gbps: float, short_gbps: float, spread=SPREAD) -> list[tuple[float, float]]:
    """Three runs of (long flow, all short flows) throughput, spread around the given means."""
    return [(long_gbps + s, short_gbps + s / 10) for s in spread]


def mixed_tidy(points: dict, shares: dict | None = None) -> pd.DataFrame:
    """points: {(long_flow, short_flows): [(long_gbps, short_gbps) per run]}; shares: {(long_flow,
    short_flows): [{side: {category: pct}} per run]}. One core per side at 100 %, so a run's tpc is
    its throughput; each short flow carries 1/k of the short throughput, as class_tpc sums it."""
    rows = []
    for (long_flow, k), reps in points.items():
        for r, (long_gbps, short_gbps) in enumerate(reps):
            base = {"run_id": f"l{long_flow}-k{k}-r{r}", "short_flows": k, "long_flow": long_flow}
            total = (long_gbps if long_flow else 0.0) + (short_gbps if k else 0.0)
            rows += [{**base, "side": "both", "metric": m, "category": "", "value": total}
                     for m in ("tpc_gbps", "throughput_gbps")]
            if long_flow:
                rows.append({**base, "side": "flow", "metric": "flow_throughput_gbps", "category": "long",
                             "value": long_gbps})
            rows += [{**base, "side": "flow", "metric": "flow_throughput_gbps", "category": "short",
                      "value": short_gbps / k} for _ in range(k)]
            for side, cats in ((shares or {}).get((long_flow, k), [{}] * len(reps))[r]).items():
                rows += [{**base, "side": side, "metric": "breakdown_attributed_pct", "category": c, "value": p}
                         for c, p in cats.items()]
    return pd.DataFrame(rows)


def tpc_points(alone: float, long_most: float, short_most: float, spread=SPREAD) -> dict:
    """The long flow alone, with 4 and with 16 short flows, and the 16 short flows alone (4 Gbit/s)."""
    return {(1, 0): runs(alone, 0.0, spread), (1, 4): runs((alone + long_most) / 2, short_most / 2, spread),
            (1, 16): runs(long_most, short_most, spread), (0, 16): runs(0.0, 4.0, spread)}


def verdict(tidy, fid):
    return mixed_flows.verdict_table(tidy, REF).set_index("id").loc[fid]


def test_f14_a_drop_of_the_papers_size_is_reproduced():
    """Total 20 → 11.4 Gbit/s (−43 %), long flow 20 → 10.4 (−48 %): the paper's sizes, inside the CIs."""
    v = verdict(mixed_tidy(tpc_points(20, 10.4, 1.0)), "F14")
    assert v.verdict == REPRODUCED, v["this run shows"]
    shows = v["this run shows"]
    assert "total tpc alone → with 16 short flows: 20.0 → 11.4 Gbit/s" in shows and "change -43 %" in shows
    assert "long flow's tpc: 20.0 → 10.4 Gbit/s" in shows and "change -48 %" in shows and "paper -48 %" in shows
    assert "16 short flows alone → mixed: 4.00 → 1.00 Gbit/s" in shows and "(-75 %, paper -42 %)" in shows


def test_f14_a_decided_cut_far_from_the_papers_size_is_reproduced_in_direction():
    """The claim has a size ("about 43 %"): −71 % is the paper's direction, not its size."""
    v = verdict(mixed_tidy(tpc_points(25, 4.8, 2.5)), "F14")
    assert v.verdict == IN_DIRECTION
    assert "change -71 %" in v["this run shows"] and "paper -43 %" in v["this run shows"]
    assert "the direction is the paper's, the size is not" in v["this run shows"]
    assert mixed_flows.reference(REF).loc["long", "before_gbps"] == 42  # the paper's numbers come from data


def test_f14_rising_tpc_is_not_reproduced():
    v = verdict(mixed_tidy(tpc_points(10, 13, 3)), "F14")
    assert v.verdict == NOT_REPRODUCED and "10.0 → 16.0 Gbit/s" in v["this run shows"]


def test_f14_drop_within_the_run_to_run_spread_is_inconclusive_and_names_the_points():
    decided = mixed_flows.verdict_table.verdicts(mixed_tidy(tpc_points(20, 16, 1, spread=WIDE)), REF)
    v = decided.table.set_index("id").loc["F14"]
    assert v.verdict == INCONCLUSIVE and "20.0 → 17.0 Gbit/s" in v["this run shows"]
    # the total's and the long flow's, each projected with the t quantile at the runs asked for
    assert "about 24 clean runs per point (now 3); about 13 clean runs per point (now 3)" in v["this run shows"]
    assert {tuple(sorted(p.items())) for p in decided.wanted["F14"]} == {
        (("long_flow", 1), ("short_flows", 0)), (("long_flow", 1), ("short_flows", 16))}


def test_f14_without_the_long_flow_alone_is_inconclusive():
    v = verdict(mixed_tidy({(1, 16): runs(10, 1), (0, 16): runs(0, 4)}), "F14")
    assert v.verdict == INCONCLUSIVE and v["this run shows"].startswith("no long-flow-alone point; to decide")


ALONE = {"data_copy": 50, "tcp/ip": 15, "sched": 3, "netdev": 20, "etc": 12}
WITH_16 = {"data_copy": 40, "tcp/ip": 25, "sched": 10, "netdev": 15, "etc": 10}


def profiled(alone: dict, with_16: dict, spread=SPREAD) -> pd.DataFrame:
    """tpc_points(20, 10.4, 1) with both sides' breakdowns: `alone` at 0 and `with_16` at 16 short
    flows, data copy and tcp/ip both moved by `spread` (×5) run to run (their gap stays the same)."""
    def per_run(cats):
        return [{side: {**cats, "data_copy": cats["data_copy"] + 5 * s, "tcp/ip": cats["tcp/ip"] + 5 * s}
                 for side in ("sender", "receiver")} for s in spread]
    return mixed_tidy(tpc_points(20, 10.4, 1.0), {(1, 0): per_run(alone), (1, 16): per_run(with_16)})


def test_f26_data_copy_still_leads_while_tcp_ip_and_sched_grow_is_reproduced():
    v = verdict(profiled(ALONE, WITH_16), "F26")
    assert v.verdict == REPRODUCED, v["this run shows"]
    shows = v["this run shows"]
    assert "long + 16 short, receiver: data_copy 40 %, tcp/ip 25 %, netdev 15 %" in shows
    assert "sender tcp/ip share alone → with 16 short flows: 15.0 → 25.0 %" in shows
    assert "receiver sched share alone → with 16 short flows: 3.0 → 10.0 %" in shows


def test_f26_tcp_ip_overtaking_data_copy_or_sched_shrinking_is_not_reproduced():
    overtaken = verdict(profiled(ALONE, {**WITH_16, "data_copy": 20, "tcp/ip": 45}), "F26")
    assert overtaken.verdict == NOT_REPRODUCED
    assert "long + 16 short, sender: tcp/ip 45 %" in overtaken["this run shows"]
    assert "(tcp/ip − data_copy: +25 points" in overtaken["this run shows"]
    shrinking = verdict(profiled(ALONE, {**WITH_16, "sched": 1}), "F26")
    assert shrinking.verdict == NOT_REPRODUCED and "sched share alone → with 16 short flows: 3.0 → 1.0 %" in \
        shrinking["this run shows"]


def test_f26_a_shift_within_the_spread_is_inconclusive_and_no_profile_decides_nothing():
    decided = mixed_flows.verdict_table.verdicts(profiled(ALONE, {**WITH_16, "tcp/ip": 20}, spread=(0.0, 1.0, -1.0)),
                                                 REF)
    v = decided.table.set_index("id").loc["F26"]
    assert v.verdict == INCONCLUSIVE and "tcp/ip share alone → with 16 short flows: 15.0 → 20.0 %" in \
        v["this run shows"] and "to decide:" in v["this run shows"]
    assert "(data_copy − tcp/ip: +20 points, 98.2 % CI +20 … +20)" in v["this run shows"]  # the lead is decided
    assert {p["short_flows"] for p in decided.wanted["F26"]} == {0, 16}
    bare = verdict(mixed_tidy(tpc_points(20, 10.4, 1.0)), "F26")
    assert bare.verdict == INCONCLUSIVE and bare["this run shows"] == ("no profiles of the receiver at these "
                                                                      "points; to decide: profiled runs")


def test_class_tpc_splits_the_run_tpc_by_throughput():
    rows = []
    for run, k, total, tpc, flows in (("a", 0, 10.0, 10.0, [("long", 10.0)]),
                                      ("b", 2, 8.0, 16.0, [("long", 6.0), ("short", 1.0), ("short", 1.0)])):
        base = {"run_id": run, "short_flows": k, "long_flow": 1}
        rows += [{**base, "side": "both", "metric": "tpc_gbps", "category": "", "value": tpc},
                 {**base, "side": "both", "metric": "throughput_gbps", "category": "", "value": total}]
        rows += [{**base, "side": "flow", "metric": "flow_throughput_gbps", "category": c, "value": v}
                 for c, v in flows]
    out = mixed_flows.class_tpc(pd.DataFrame(rows)).set_index("run_id")
    assert out.loc["a", "long_tpc_gbps"] == 10.0 and out.loc["a", "short_tpc_gbps"] == 0.0
    assert out.loc["b", "long_tpc_gbps"] == 12.0 and out.loc["b", "short_tpc_gbps"] == 4.0


def test_recorded_campaign_is_judged_on_its_runs():
    t = mixed_flows.judge(REPO / "data" / "runs", "20261123-mixed-flows-embedded", REF).table
    assert list(t.id) == ["F14", "F26"] and t.verdict.isin(VOCABULARY).all()
    assert "total tpc alone → with 16 short flows" in t.set_index("id").loc["F14", "this run shows"]


def test_f26_is_the_receivers_claim_and_the_sender_is_shown_not_counted():
    """Fig. 11(b) is the server's breakdown: a sender whose tcp/ip leads does not decide F26."""
    rcv = {"data_copy": 40.0, "tcp/ip": 30.0, "sched": 15.0}
    t = profiled(ALONE, rcv, spread=(0.0, 0.4, -0.4))
    sender = t[t.side == "receiver"].assign(side="sender")
    sender.loc[(sender.category == "tcp/ip") & (sender.short_flows == 16), "value"] += 30  # tcp/ip leads there
    v = mixed_flows.verdict_table(pd.concat([t[t.side != "sender"], sender], ignore_index=True), REF)
    f26 = v.set_index("id").loc["F26"]
    assert f26.verdict == REPRODUCED, f26["this run shows"]
    assert "the sender (not the paper's Fig. 11b, not counted: not reproduced)" in f26["this run shows"]


def test_the_breakdown_with_the_long_flow_names_the_metric_its_figure_s_caveat_follows():
    """Each part of the breakdown keeps the metric it is a share of: the short flows alone kept
    their stacks here, the long flow's runs did not, and Fig. 11(b) (with the long flow) says so."""
    shares = {(1, 4): [{"receiver": {"data_copy": 50.0, "tcp/ip": 30.0}}] * 3,
              (0, 4): [{"receiver": {"data_copy": 40.0, "tcp/ip": 35.0}}] * 3}
    tidy = mixed_tidy({(1, 4): runs(8.0, 2.0), (0, 4): runs(0.0, 4.0)}, shares)
    tidy.loc[tidy.long_flow == 1, "metric"] = tidy.metric.replace("breakdown_attributed_pct", "breakdown_pct")
    bd = mixed_flows.breakdown(tidy)
    assert dict(zip(bd.long_flow, bd.metric, strict=True)) == {1: "breakdown_pct", 0: "breakdown_attributed_pct"}
    chart = mixed_flows.charts(mixed_flows.table(tidy), bd, "label")["mixed-flows-breakdown"].to_dict()
    assert CPU_CLOCK_CAVEAT in chart["title"]["subtitle"]
