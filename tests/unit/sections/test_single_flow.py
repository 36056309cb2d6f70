"""Notebook 01's verdicts (F01-F08, F25) on synthetic runs where the answer is known, and on the
recorded campaigns (RPS and threaded NAPI)."""
import pandas as pd

from conftest import REPO
from hostnet.analysis import verdicts
from hostnet.sections import single_flow

REF = REPO / "data" / "reference"
RUNS = REPO / "data" / "runs"
SPREAD = (-0.4, 0.3, 0.0, 0.2, -0.1)  # five repetitions around each value


def tidy(tpc, util=None, breakdown=None, metric="breakdown_pct"):
    rows = []

    def add(cfg, i, side, metric, value, category=""):
        rows.append({"run_id": f"{cfg}-r{i}", "config": cfg, "side": side, "metric": metric, "category": category,
                     "value": value})
    for cfg, v in tpc.items():
        for i, e in enumerate(SPREAD):
            add(cfg, i, "both", "tpc_gbps", v + e)
            add(cfg, i, "both", "throughput_gbps", v + e)
    for (cfg, side), v in (util or {}).items():
        for i, e in enumerate(SPREAD):
            add(cfg, i, side, "cpu_util_pct", v + (3 if side == "sender" else -3) * e)
    for (cfg, side, cat), v in (breakdown or {}).items():
        for i, e in enumerate(SPREAD):
            add(cfg, i, side, metric, v + 2 * e, cat)
    return pd.DataFrame(rows)


def manifests(steering, kind="servers"):
    """A campaign's manifests as the verdicts read them (servers: F04's premise can hold there)."""
    return [{"testbed": {"kind": kind, "rx_steering": steering}}]


PAPER_LIKE = dict(
    tpc={"no-opts": 5, "tsogro": 15, "tsogro+jumbo": 27, "all-opts": 41},
    util={(c, s): (60 if s == "sender" else 95) for c in ("no-opts", "all-opts") for s in ("sender", "receiver")},
    breakdown={("all-opts", "sender", "data_copy"): 50, ("all-opts", "sender", "tcp/ip"): 10,
               ("all-opts", "receiver", "data_copy"): 55, ("all-opts", "receiver", "tcp/ip"): 20,
               ("no-opts", "sender", "tcp/ip"): 40, ("no-opts", "sender", "data_copy"): 5,
               ("no-opts", "receiver", "tcp/ip"): 55, ("no-opts", "receiver", "netdev"): 9})


def test_paper_like_runs_are_reproduced():
    v = single_flow.verdict_table(tidy(**PAPER_LIKE), REF, manifests("rps")).set_index("id")
    for fid in ("F02", "F03", "F04", "F05", "F06"):
        assert v.loc[fid, "verdict"] == verdicts.REPRODUCED, v.loc[fid, "this run shows"]
    assert v.loc["F01", "verdict"] == v.loc["F08", "verdict"] == verdicts.NOT_TESTABLE
    assert f"{verdicts.LEVEL} CI" in v.loc["F03", "this run shows"]


def test_f04_is_not_testable_on_veth_and_keeps_its_measured_cpu():
    """The paper's gap comes from the receiver's cross-NUMA copy and its skb allocation; veth's
    receiver allocates none and receive processing runs on the application's CPU."""
    v = single_flow.verdict_table(tidy(**PAPER_LIKE), REF, manifests("napi-thread", "embedded")).set_index("id")
    assert v.loc["F04", "verdict"] == verdicts.NOT_TESTABLE
    assert "allocates no skb" in v.loc["F04", "this run shows"] and "60 → 95 %" in v.loc["F04", "this run shows"]


def test_under_threaded_napi_the_arfs_step_is_not_judged_and_f25_is_not_testable():
    v = single_flow.verdict_table(tidy(**PAPER_LIKE), REF, manifests("napi-thread")).set_index("id")
    assert v.loc["F02", "verdict"] == verdicts.REPRODUCED
    assert "all-opts" not in v.loc["F02", "this run shows"].split(";")[0]
    assert "aRFS step (→ all-opts) is not judged" in v.loc["F02", "this run shows"]
    assert v.loc["F25", "verdict"] == verdicts.NOT_TESTABLE and "ntuple" in v.loc["F25", "this run shows"]


def test_contrary_runs_are_not_reproduced_with_their_numbers():
    t = tidy({"no-opts": 12, "tsogro": 23.1, "tsogro+jumbo": 20.0, "all-opts": 23},
             {("tsogro", "sender"): 98, ("tsogro", "receiver"): 80},
             {("all-opts", "sender", "tcp/ip"): 50, ("all-opts", "sender", "data_copy"): 20,
              ("all-opts", "receiver", "data_copy"): 55, ("all-opts", "receiver", "tcp/ip"): 5})
    v = single_flow.verdict_table(t, REF, manifests("rps")).set_index("id")
    assert v.loc["F02", "verdict"] == v.loc["F03", "verdict"] == verdicts.NOT_REPRODUCED
    assert "> tsogro+jumbo 20.00" in v.loc["F02", "this run shows"]
    assert v.loc["F04", "verdict"] == verdicts.NOT_REPRODUCED and "98 → 80 %" in v.loc["F04", "this run shows"]
    assert v.loc["F05", "verdict"] == verdicts.NOT_REPRODUCED


def test_differences_within_the_spread_are_inconclusive_and_name_their_points():
    t = tidy({"no-opts": 12, "tsogro": 23.0, "tsogro+jumbo": 23.3, "all-opts": 30},
             {("tsogro", "sender"): 98, ("tsogro", "receiver"): 97.5})
    decided = single_flow.verdict_table.verdicts(t, REF, manifests("rps"))
    by_id = decided.table.set_index("id")
    assert by_id.loc["F03", "verdict"] == by_id.loc["F02", "verdict"] == verdicts.INCONCLUSIVE
    # both sides saturated: no number of runs within the design would decide which is busier
    assert by_id.loc["F04", "verdict"] == verdicts.INCONCLUSIVE
    assert f"{verdicts.AT_PROFILE}: it would take more than 30" in by_id.loc["F04", "this run shows"]
    assert {"config": "tsogro+jumbo"} in decided.wanted["F03"]


def test_attributed_breakdown_is_judged_as_is():
    t = tidy({"all-opts": 41}, breakdown={(("all-opts", side, cat)): v for side in ("sender", "receiver")
                                          for cat, v in (("data_copy", 50), ("etc", 5), ("netdev", 30))},
             metric="breakdown_attributed_pct")
    v = single_flow.verdict_table(t, REF, manifests("rps")).set_index("id")
    assert v.loc["F05", "verdict"] == verdicts.REPRODUCED
    assert "attributed through the call chain" in v.loc["F05", "this run shows"]


def test_recorded_napi_thread_campaign_is_judged_on_its_clean_runs():
    v = single_flow.judge(RUNS, "20261124-010455-receive-path-napi-thread-embedded", REF).table.set_index("id")
    assert v.loc["F03", "verdict"] == verdicts.REPRODUCED and "n = 5/5" in v.loc["F03", "this run shows"]
    assert v.loc["F25", "verdict"] == verdicts.NOT_TESTABLE
    assert set(v.verdict) <= set(verdicts.VOCABULARY)


def test_f04_counts_the_papers_ladder_steps_and_shows_jumbo_alone_beside_them():
    """jumbo alone is not a step of Fig. 3(b)'s ladder: a sender-bound jumbo is shown, not counted."""
    util = {(c, s): (60 if s == "sender" else 95) for c in ("no-opts", "tsogro", "tsogro+jumbo", "all-opts")
            for s in ("sender", "receiver")}
    util.update({("jumbo", "sender"): 95, ("jumbo", "receiver"): 60})
    v = single_flow.verdict_table(tidy({"no-opts": 5, "tsogro": 15, "jumbo": 9, "tsogro+jumbo": 27,
                                        "all-opts": 41}, util), REF, manifests("rps")).set_index("id")
    assert v.loc["F04", "verdict"] == verdicts.REPRODUCED, v.loc["F04", "this run shows"]
    assert "not a ladder step, not counted: jumbo CPU sender → receiver: 95 → 60 %" in v.loc["F04", "this run shows"]


def test_charts_name_configurations_as_the_tables_do_and_say_the_stand_ins_once():
    """The tables said tsogro+arfs, the charts gsogro+rfs for the same point (issue 44): now the
    paper's names everywhere, and one subtitle line says what each ran as on the testbed."""
    from conftest import REPO
    from hostnet import project
    from hostnet.sections import single_flow
    tidy, manifests = single_flow.load(REPO / "data" / "runs", "20261128-023507-single-flow-embedded")
    line = single_flow.stand_ins(manifests)
    assert line.startswith("on this testbed: ") and "tsogro ran as gsogro" in line and "tsogro+arfs ran as" in line
    charts = single_flow.charts(tidy, project.reference_dir(), "embedded testbed", manifests)
    spec = charts["single-flow-tpc"].to_dict()
    shown = {row["config"] for data in spec["datasets"].values() for row in data if "config" in row}
    assert "tsogro+arfs" in shown and not any("gsogro" in c or "rfs" in c.replace("arfs", "") for c in shown)
    assert line in spec["title"]["subtitle"]
    assert single_flow.stand_ins([{"config": {"name": "tsogro"}, "config_label": "tsogro"}]) == ""


def test_a_paced_ladder_or_rx_buffer_sweep_puts_the_rate_in_its_grid_and_an_unpaced_one_is_unchanged():
    """rate_mbps (the NIC rehearsal's guests need their flows paced) joins the grid only when given, so
    an unpaced campaign's spec, and with it every point id, stays what it was."""
    from hostnet.sections import rx_buffer
    assert single_flow.spec(configs=["tsogro"], rate_mbps=20).grid == {"rate_mbps": [20]}
    assert single_flow.spec(configs=["tsogro"]) == single_flow.spec(configs=["tsogro"], rate_mbps=0)
    assert single_flow.spec().grid == {}
    paced = rx_buffer.spec(sizes_kb=[400], rate_mbps=20)
    assert paced.grid == {"rx_buffer_kb": [400], "rate_mbps": [20]}
    assert rx_buffer.spec().grid == {"rx_buffer_kb": [100, 200, 400, 800, 1600, 3200, 6400, 12800]}


def test_f08_on_servers_says_the_ladder_does_not_vary_the_ring_not_that_veth_lacks_one():
    """Notebook 01 on the NIC rehearsal's e1000e said "veth has no NIC rings": true of the embedded
    testbed only."""
    tidy, manifests = single_flow.load(RUNS, "20261128-023507-single-flow-embedded")
    servers = [{**m, "testbed": {**m["testbed"], "kind": "servers", "rx_steering": "nic"}} for m in manifests]
    f08 = single_flow.verdict_table(tidy, REF, servers).set_index("id").loc["F08", "this run shows"]
    assert f08.startswith("the ladder does not vary the rx ring (notebook 02's rx_rings does)")
    embedded = single_flow.verdict_table(tidy, REF, manifests).set_index("id").loc["F08", "this run shows"]
    assert embedded.startswith("veth has no NIC rings")
