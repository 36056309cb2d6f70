"""UDP end-host loss (notebook 14, F21-F23): verdicts on small summaries, the highest-rate
breakdown, the embedded testbed's CPUs, and the recorded campaign."""
import pandas as pd

from conftest import REPO
from hostnet.charts import end_host_loss as figures
from hostnet.derive import udp_loss
from hostnet.sections import end_host_loss as ehl
from hostnet.analysis.findings import end_host_loss as findings
from hostnet.analysis.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"


def summary(same_1m, diff_1m, same_4m, diff_4m, sender=0.0, spread=0.5, offered=100_000, reached=0.95):
    """A table() result: loss medians, each with a ±spread range over repetitions, and counts of
    `offered` datagrams per point; `reached`: the share of the target rate offered to the receiver."""
    rows = []
    for placement, kb, loss in (("same", 1024, same_1m), ("different", 1024, diff_1m), ("same", 4096, same_4m),
                                ("different", 4096, diff_4m)):
        for rate, scale in ((1.0, 0.0), (8.0, 1.0)):
            total = (loss + sender) * scale
            row = {"placement": placement, "buffer_kb": kb, "target_gbps": rate, "offered_gbps": rate * reached,
                   "delivered_gbps": rate / 4, "loss_pct": total, "loss_min_pct": max(0.0, total - spread),
                   "loss_max_pct": total + spread, "sender_pct": sender * scale,
                   "link_pct": 0.0, "backlog_pct": 0.0, "rcvbuf_pct": loss * scale, "udp_other_pct": 0.0,
                   "unaccounted_pct": 0.5, "iperf_loss_pct": loss * scale + 0.5, "repetitions": 3}
            for loc in udp_loss.LOCATIONS:
                row[f"{loc}_lost_count"] = row[f"{loc}_pct"] * offered / 100
            rows.append(row)
    return pd.DataFrame(rows)


def runs(s: pd.DataFrame) -> pd.DataFrame:
    """Tidy loss_pct rows behind a summary: `repetitions` runs per point spanning its range."""
    rows = []
    for i, r in s.iterrows():
        n = int(r.repetitions)
        values = [r.loss_pct] if n == 1 else [r.loss_min_pct + (r.loss_max_pct - r.loss_min_pct) * k / (n - 1)
                                              for k in range(n)]
        rows += [{"run_id": f"p{i}-r{k}", "placement": r.placement, "buffer_kb": r.buffer_kb,
                  "target_gbps": r.target_gbps, "metric": "loss_pct", "side": "both", "category": "", "value": v}
                 for k, v in enumerate(values)]
    return pd.DataFrame(rows)


def table(s, notes):
    return ehl.verdict_table(s, runs(s), notes, REF)


CLEAN = {"same": {"confounded": False}, "different": {"confounded": False}}
CONFOUNDED = {"same": {"confounded": False}, "different": {"confounded": True, "note": "lends the sender's core"}}


def verdicts(s, notes=CLEAN):
    return table(s, notes).set_index("id").verdict.to_dict()


def test_study_pattern_is_reproduced_without_confound():
    assert verdicts(summary(30, 5, 20, 2)) == {"F21": REPRODUCED, "F22": REPRODUCED, "F23": REPRODUCED}
    shows = table(summary(30, 5, 20, 2), CLEAN).set_index("id").loc["F21", "this run shows"]
    assert "mostly at 'rcvbuf'" in shows and "iperf's own count (whole run) 2.5–30.5 % vs counters 2.0–30.0 %" in shows


def test_opposite_patterns_are_not_reproduced():
    v = verdicts(summary(5, 30, 0.0, 25, spread=0.2))
    assert v["F22"] == NOT_REPRODUCED and v["F23"] == NOT_REPRODUCED
    assert verdicts(summary(5, 5, 2, 2, sender=30))["F21"] == NOT_REPRODUCED  # lost at the sender


def test_f22_within_run_to_run_spread_is_inconclusive():
    """3 points apart in the means, but the CI of the difference spans zero: noise, not a direction."""
    s = summary(30, 33, 20, 23, spread=4)
    decided = ehl.verdict_table.verdicts(s, runs(s), CLEAN, REF)
    v = decided.table.set_index("id")
    assert v.loc["F22", "verdict"] == INCONCLUSIVE and "to decide" in v.loc["F22", "this run shows"]
    # the undecided pairs name the sweep points a top-up repeats (the grid's keys, highest rate)
    assert decided.wanted == {"F22": [findings.sweep_point(8.0, kb, p) for kb in (1024, 4096)
                                         for p in ("different", "same")]}
    assert verdicts(summary(30, 33, 20, 23, spread=0.5))["F22"] == NOT_REPRODUCED  # apart: a direction
    one_run = summary(30, 5, 20, 2).assign(repetitions=1)
    assert verdicts(one_run)["F22"] == INCONCLUSIVE


def test_f21_weighs_points_by_their_datagrams():
    """A point losing half of a few datagrams at the sender must not outweigh 5 % of many at the receiver."""
    few = summary(0, 0, 0, 0, sender=50, offered=100)
    many = summary(5, 5, 5, 5, offered=1_000_000).assign(target_gbps=lambda d: d.target_gbps * 2)
    v = table(pd.concat([few, many], ignore_index=True), CLEAN).set_index("id")
    assert v.loc["F21", "verdict"] == REPRODUCED and "mostly at 'rcvbuf'" in v.loc["F21", "this run shows"]
    assert verdicts(few)["F21"] == NOT_REPRODUCED


def test_confounded_placement_is_not_testable_and_no_overload_is_inconclusive():
    v = table(summary(30, 40, 20, 30), CONFOUNDED).set_index("id")
    assert v.loc["F22", "verdict"] == NOT_TESTABLE and "lends the sender's core" in v.loc["F22", "this run shows"]
    assert "needs a third CPU" in v.loc["F22", "this run shows"]
    assert verdicts(summary(0.1, 0.2, 0.0, 0.1)) == {"F21": INCONCLUSIVE, "F22": INCONCLUSIVE, "F23": INCONCLUSIVE}
    one = summary(30, 5, 20, 2)
    assert verdicts(one[one.buffer_kb == 1024])["F23"] == NOT_TESTABLE


def test_f23_is_not_testable_when_the_sender_cannot_reach_the_target_rate():
    """The study's loss came with the receiving CPU overloaded; a sender that offers a quarter of the
    target (one sender core on the embedded testbed) never overloads it, whatever is lost."""
    v = table(summary(30, 5, 20, 2, reached=0.25), CLEAN).set_index("id")
    assert v.loc["F23", "verdict"] == NOT_TESTABLE
    assert "only 2.00 of 8 Gbit/s reached the receiver" in v.loc["F23", "this run shows"]


def test_highest_rate_breakdown_rows():
    top = ehl.highest_rate(summary(30, 5, 20, 2))
    assert len(top) == 4 and set(top.target_gbps) == {8.0}
    assert top.set_index(["placement", "buffer_kb"]).loc[("same", 1024), "rcvbuf_pct"] == 30


def test_the_loss_figure_stacks_every_location_the_table_has_in_its_colour():
    """Each location udp_loss counts is drawn in its own colour (sender brown, rcvbuf blue)."""
    assert tuple(figures.LOCATION_COLORS) == udp_loss.LOCATIONS
    assert figures.LOCATION_COLORS["sender"] == "#9d755d" and figures.LOCATION_COLORS["rcvbuf"] == "#4c78a8"
    notes = {**CONFOUNDED, "different": {**CONFOUNDED["different"], "app_cpu": 0}}
    stacked = ehl.charts(summary(30, 5, 20, 2), "embedded", notes)["end-host-loss-locations"].to_dict()
    shown = {r["location"] for r in stacked["datasets"][stacked["data"]["name"]]}
    assert shown == set(udp_loss.LOCATIONS)
    assert stacked["encoding"]["color"]["scale"]["range"] == list(figures.LOCATION_COLORS.values())
    assert "the 'different' CPU 0 is also the sender's (confounded)" in stacked["title"]["subtitle"][-1]


def test_embedded_testbed_gives_the_receiver_a_second_cpu_when_there_is_one():
    assert ehl.embedded_cpus(2) == ((0,), (1,))
    assert ehl.embedded_cpus(8) == ((0,), (1, 2))


def test_recorded_campaign_covers_the_grid_with_clean_runs():
    tidy, manifests = ehl.load(REPO / "data" / "runs", "20261123-end-host-loss-embedded")
    s = ehl.table(tidy)
    grid = ehl.spec().grid
    assert len(s) == len(grid["udp_rate_gbps"]) * len(grid["socket_buffer_kb"]) * len(grid["app_cpu"])
    assert (s.repetitions >= 1).all()
    assert (s[s.target_gbps == 0.5].loss_pct < 1).all()  # no loss well below what the receiver can take
    notes = ehl.placement_notes(manifests)
    assert notes["different"]["confounded"] and not notes["same"]["confounded"]
    assert len(ehl.highest_rate(s)) == 4


def test_judge_gives_the_notebooks_verdicts_on_the_recorded_campaign():
    """What topup.decide asks of the section equals what notebook 14 shows for its UDP findings."""
    runs, campaign = REPO / "data" / "runs", "20261124-030654-end-host-loss-embedded"
    tidy, manifests = ehl.load(runs, campaign)
    shown = ehl.verdict_table(ehl.table(tidy), tidy, ehl.placement_notes(manifests), REF)
    judged = ehl.judge(runs, campaign, REF).table
    pd.testing.assert_frame_equal(judged, shown)
    assert list(judged.id) == ["F21", "F22", "F23"]
    assert judged.set_index("id").loc["F22", "verdict"] == NOT_TESTABLE  # 2 CPUs: "different" lends the sender's


def cc_runs(thr: dict, spread=(0.0, 0.3, -0.3, 0.6, -0.6)) -> pd.DataFrame:
    """Per-run throughput rows of a congestion-control campaign: {(algorithm, flows): Gbit/s}."""
    return pd.DataFrame([{"run_id": f"{cc}-{n}-{r}", "metric": "throughput_gbps", "side": "both", "category": "",
                          "value": v + d, "congestion_control": cc, "flows": n}
                         for (cc, n), v in thr.items() for r, d in enumerate(spread)])


def f28(thr, refused=None, **kw):
    decided = ehl.tcp_verdict.verdicts(cc_runs(thr, **kw), refused or {}, REF)
    return decided, decided.table.set_index("id").loc["F28"]


def test_f28_variants_alike_and_vegas_behind_is_reproduced_and_a_missing_vegas_is_not_testable():
    alike = {("cubic", 1): 20.0, ("reno", 1): 19.5, ("bbr", 1): 20.5, ("vegas", 1): 12.0}
    assert f28(alike)[1].verdict == REPRODUCED
    assert f28({**alike, ("reno", 1): 10.0})[1].verdict == NOT_REPRODUCED  # reno far from cubic
    _, row = f28({k: v for k, v in alike.items() if k[0] != "vegas"}, {"vegas": "kernel offers reno bbr cubic"})
    assert row.verdict == NOT_TESTABLE and "needs a kernel with tcp_vegas" in row["this run shows"]


def test_f28_undecided_names_the_algorithm_points_a_top_up_repeats():
    close = {("cubic", 4): 20.0, ("reno", 4): 19.5, ("vegas", 4): 18.5}
    t, row = f28(close, spread=(0.0, 1.0, -1.0))
    assert row.verdict == INCONCLUSIVE and "to decide" in row["this run shows"]
    wanted = t.wanted["F28"]
    assert {"congestion_control": "vegas", "flows": 4} in wanted
    assert {"congestion_control": "cubic", "flows": 4} in wanted
