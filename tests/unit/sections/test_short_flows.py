"""§3.6 (short flows, F11-F13, F24): verdicts on small hand-made per-run frames (breakdown shares and
tpc per RPC size), judged by the CI of the difference between runs, and the recorded campaign."""
import re

import pandas as pd

from conftest import REPO
from hostnet.sections import short_flows
from hostnet.analysis.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VOCABULARY

REF = REPO / "data" / "reference"
SIZES = [4096, 16384, 32768, 65506]  # bytes, as the sweep records them ("64 KB" is sockperf's 65506)
SPREAD = (0.0, 1.0, -1.0)  # three runs a size: data copy ± 1 point, tpc ± 0.1 Gbit/s


def rpc_tidy(shares: dict, tpc: dict | None = None, spread=SPREAD) -> pd.DataFrame:
    """shares: {size: {category: pct}} (both sides, data copy moved by `spread` run to run) or
    {size: [{category: pct} per run]}; tpc: {size: mean Gbit/s} (default: rising with the size)."""
    tpc = tpc or {size: 2.0 + size / 4096 for size in shares}
    rows = []
    for size in shares:
        per_run = shares[size] if isinstance(shares[size], list) else [
            {**shares[size], "data_copy": shares[size].get("data_copy", 0) + s} for s in spread]
        for r, (cats, s) in enumerate(zip(per_run, spread, strict=True)):
            base = {"run_id": f"{size}-r{r}", "rpc_size": size}
            rows.append({**base, "side": "both", "metric": "tpc_gbps", "category": "", "value": tpc[size] + s / 10})
            rows += [{**base, "side": side, "metric": "breakdown_attributed_pct", "category": c, "value": p}
                     for side in ("sender", "receiver") for c, p in cats.items()]
    return pd.DataFrame(rows)


PROTO = {"tcp/ip": 30, "sched": 20, "data_copy": 10, "etc": 40}
COPY = {"data_copy": 45, "tcp/ip": 20, "sched": 10, "etc": 25}


def paper_like(at4=PROTO, at16=COPY, at32=COPY, at64=COPY) -> dict:
    return dict(zip(SIZES, (at4, at16, at32, at64), strict=True))


def verdict_table(tidy, manifests=None) -> pd.DataFrame:
    return short_flows.verdict_table(tidy, REF, manifests).set_index("id")


def test_f11_f12_f24_paper_pattern_is_reproduced():
    v = verdict_table(rpc_tidy(paper_like()))
    assert list(v.index) == ["F11", "F12", "F13", "F24"]
    assert v.loc["F11", "verdict"] == REPRODUCED, v.loc["F11", "this run shows"]
    assert "4 KB receiver: tcp/ip+sched 50 %, data_copy 10 %" in v.loc["F11", "this run shows"]
    assert v.loc["F12", "verdict"] == REPRODUCED and v.loc["F24", "verdict"] == REPRODUCED
    assert v.loc["F13", "verdict"] == NOT_TESTABLE and "single NUMA node" in v.loc["F13", "this run shows"]
    assert "needs a multi-socket host with a NIC on one node" in v.loc["F13", "this run shows"]
    assert short_flows.verdict_table.verdicts(rpc_tidy(paper_like()), REF).wanted == {}


def test_f11_f12_data_copy_everywhere_or_nowhere_is_not_reproduced():
    v = verdict_table(rpc_tidy(paper_like(COPY, PROTO, PROTO, PROTO)))
    assert v.loc["F11", "verdict"] == NOT_REPRODUCED and "4 KB sender: data_copy 45 %" in v.loc["F11", "this run shows"]
    assert v.loc["F12", "verdict"] == NOT_REPRODUCED
    assert "(tcp/ip − data_copy: +20 points" in v.loc["F12", "this run shows"]


def test_f11_f12_partial_patterns():
    # 4 KB: tcp/ip + sched (35 %, sched absent = 0) 5 points above data copy in every run: reproduced;
    # 16 KB: data copy leads tcp/ip by 1-8 points run to run, 32 and 64 KB copy-led: undecided at 16 KB only
    close = [{"data_copy": 34, "tcp/ip": 28, "etc": 38}, {"data_copy": 29, "tcp/ip": 28, "etc": 43},
             {"data_copy": 36, "tcp/ip": 28, "etc": 36}]
    partial = rpc_tidy(paper_like({"tcp/ip": 35, "data_copy": 30, "etc": 35}, close))
    decided = short_flows.verdict_table.verdicts(partial, REF)
    v = decided.table.set_index("id")
    assert v.loc["F11", "verdict"] == REPRODUCED
    assert "4 KB receiver: tcp/ip+sched 35 %, data_copy 30 %" in v.loc["F11", "this run shows"]
    assert v.loc["F12", "verdict"] == INCONCLUSIVE and "to decide:" in v.loc["F12", "this run shows"]
    assert "16 KB sender: data_copy 33 %, tcp/ip 28 %" in v.loc["F12", "this run shows"]
    assert {p["rpc_size"] for p in decided.wanted["F12"]} == {16384}


def test_f11_another_layer_above_tcp_ip_and_sched_is_not_reproduced():
    """Data copy is not dominant, but netdev is (as on veth with RPS): the claim's second half fails."""
    netdev = {"netdev": 60, "tcp/ip": 15, "sched": 8, "data_copy": 2, "etc": 15}
    v = verdict_table(rpc_tidy(paper_like(netdev)))
    assert v.loc["F11", "verdict"] == NOT_REPRODUCED
    assert "4 KB sender: netdev 60 %, tcp/ip+sched 23 %" in v.loc["F11", "this run shows"]
    assert "(netdev − tcp/ip+sched: +37 points" in v.loc["F11", "this run shows"]


def test_etc_is_not_a_rival_and_a_missing_profile_is_inconclusive():
    v = verdict_table(rpc_tidy(paper_like({"tcp/ip": 20, "sched": 5, "data_copy": 10, "etc": 65})))
    assert v.loc["F11", "verdict"] == REPRODUCED and "etc" not in v.loc["F11", "this run shows"]
    tidy = rpc_tidy(paper_like())
    no_4kb = tidy[~((tidy.rpc_size == 4096) & (tidy.metric == "breakdown_attributed_pct"))]
    v = verdict_table(no_4kb)
    assert v.loc["F11", "verdict"] == INCONCLUSIVE
    assert v.loc["F11", "this run shows"] == ("no 4 KB sender profile; no 4 KB receiver profile; to decide: "
                                              "a profiled 4 KB sender; a profiled 4 KB receiver")
    no_rx = tidy[~((tidy.rpc_size == 4096) & (tidy.metric == "breakdown_attributed_pct") & (tidy.side == "receiver"))]
    v = verdict_table(no_rx)  # one side alone does not make the claim about both
    assert v.loc["F11", "verdict"] == INCONCLUSIVE and "no 4 KB receiver profile" in v.loc["F11", "this run shows"]
    no_receiver = tidy[~((tidy.rpc_size == 65506) & (tidy.side == "receiver"))]
    v = verdict_table(no_receiver)
    assert v.loc["F12", "verdict"] == INCONCLUSIVE and "64 KB receiver: no data_copy samples" in \
        v.loc["F12", "this run shows"]


def test_f12_judges_every_size_from_16_kb_on_each_side():
    v = verdict_table(rpc_tidy(paper_like()))
    shows = v.loc["F12", "this run shows"]
    assert re.findall(r"\b(\d+) KB (\w+):", shows) == [(kb, side) for kb in ("16", "32", "64")
                                                     for side in ("sender", "receiver")]  # not 4 KB
    assert "16 KB sender: data_copy 45 %, tcp/ip 20 %" in shows
    only_4kb = verdict_table(rpc_tidy({4096: PROTO}))
    assert list(only_4kb.index) == ["F11", "F13"]  # no size ≥ 16 KB, and no second size for a trend


def test_f24_tpc_rising_with_the_rpc_size_is_reproduced_and_a_step_down_is_not():
    v = verdict_table(rpc_tidy(paper_like(), {4096: 3, 16384: 8, 32768: 15, 65506: 19}))
    assert v.loc["F24", "verdict"] == REPRODUCED
    shows = v.loc["F24", "this run shows"]
    assert "tpc 4 KB → 64 KB: 3.00 → 19.00 Gbit/s" in shows and "steps: 4→16 KB +5.00" in shows
    dip = verdict_table(rpc_tidy(paper_like(), {4096: 3, 16384: 15, 32768: 8, 65506: 19}))
    assert dip.loc["F24", "verdict"] == NOT_REPRODUCED
    assert "16→32 KB -7.00" in dip.loc["F24", "this run shows"]
    assert dip.loc["F24", "this run shows"].endswith("; a step goes down")
    falling = verdict_table(rpc_tidy(paper_like(), {4096: 19, 16384: 15, 32768: 8, 65506: 3}))
    assert falling.loc["F24", "verdict"] == NOT_REPRODUCED
    assert "19.00 → 3.00 Gbit/s" in falling.loc["F24", "this run shows"]


def test_f24_a_rise_within_the_spread_is_inconclusive_and_names_the_end_points():
    decided = short_flows.verdict_table.verdicts(
        rpc_tidy(paper_like(), {4096: 10, 16384: 10.05, 32768: 10.1, 65506: 10.15}, spread=(0.0, 1.0, -1.0)), REF)
    v = decided.table.set_index("id")
    assert v.loc["F24", "verdict"] == INCONCLUSIVE and "to decide:" in v.loc["F24", "this run shows"]
    assert decided.wanted["F24"] == [{"rpc_size": 4096}, {"rpc_size": 65506}]


def test_f13_on_servers_points_to_the_numa_notebook():
    v = verdict_table(rpc_tidy(paper_like()), [{"testbed": {"kind": "servers"}}])
    assert v.loc["F13", "verdict"] == NOT_TESTABLE
    assert "this notebook sweeps RPC size, not NUMA placement (notebook 09 does)" in v.loc["F13", "this run shows"]


def test_recorded_campaign_is_judged_on_its_runs():
    tidy, manifests = short_flows.load(REPO / "data" / "runs", "20261123-short-flows-embedded")
    assert sorted(tidy.rpc_size.unique()) == SIZES
    v = short_flows.judge(REPO / "data" / "runs", "20261123-short-flows-embedded", REF).table.set_index("id")
    assert list(v.index) == ["F11", "F12", "F13", "F24"] and v.verdict.isin(VOCABULARY).all()
    assert v.loc["F13", "verdict"] == NOT_TESTABLE and "tpc 4 KB → 64 KB" in v.loc["F24", "this run shows"]
