"""§3.2–3.4 and the appendix: one-to-one, incast, all-to-all and outcast vs the flow count.

One module for the four traffic-pattern notebooks (03-one-to-one, 04-incast, 05-all-to-all,
12-outcast): each is a thin caller of these functions with its pattern's name.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..analysis import metrics, verdicts
from ..charts import patterns as figures
from .. import store
from ..testbed.session import is_fresh
from . import common
from ..measure.sweep import SweepSpec, declared, run_sweep
from ..measure.options import LiveOptions
from ..analysis import flags
from ..analysis.findings import patterns as rules
from ..dictionary import ENDPOINT_SIDES as SIDES


@dataclass(frozen=True)
class Pattern:
    name: str
    figure: str      # the paper's figure for this pattern (from its artifact's list of experiments)
    findings: tuple  # finding ids the verdict table checks (its sweep of n: sweeps/<name>.yaml)


PATTERNS = {p.name: p for p in (
    Pattern("one-to-one", "Fig. 4", ("F09", "F04", "F05")),
    Pattern("incast", "Fig. 5", ("F09", "F04", "F05")),
    # n x n flows; at n = 8 (64 flows) starting flows and probes ate most of a 3 s run here
    Pattern("all-to-all", "Fig. 6", ("F09", "F04", "F05")),
    # F09 names one-to-one, incast and all-to-all only: the seeds state no outcast trend. F04 (the
    # receiver is the bottleneck) is left out too: one sender core feeds n receivers, so the sender is
    # the expected bottleneck (the artifact computes outcast tpc from the sender's CPU)
    Pattern("outcast", "Appendix (outcast)", ("F05",)),
)}


def _pattern(name: str) -> Pattern:
    if name not in PATTERNS:
        raise ValueError(f"pattern {name!r}: one of {', '.join(PATTERNS)}")
    return PATTERNS[name]


def hosts_per_side(pattern: str, n: int) -> tuple[int, int]:
    """Sender and receiver namespaces that give each flow end its own host (embedded testbed: at most 9)."""
    senders = 1 if pattern == "outcast" else n
    receivers = 1 if pattern == "incast" else n
    return min(senders, 9), min(receivers, 9)


def spec(pattern: str, *, config: str | None = None, flows=None, **fields) -> SweepSpec:
    """The pattern's sweep over its flow counts: sweeps/<pattern>.yaml, with what is given over it
    (fields: any other SweepSpec field)."""
    _pattern(pattern)
    return declared(pattern, config=config, grid={"flows": None if flows is None else [int(n) for n in flows]},
                    **fields)


def collect(mode: str, pattern: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(),
            separate_hosts: bool = False, progress: bool = True, **spec_args) -> str:
    """Return the campaign to analyse: replay a recorded one, or sweep the flow count live
    (spec_args: spec()'s).

    mode "run": on `live.testbed`: "embedded" builds a fresh one (one sender and one receiver namespace,
    or with separate_hosts one namespace per flow end over a bridge); else a testbed that is up
    (`hostnet testbed up --name`) or a testbed.yaml of real servers, whose settings this campaign
    changed are restored afterwards.
    """
    _pattern(pattern)
    replay = common.replay_or_newest(mode, campaign, runs_dir, pattern)
    if replay:
        return replay
    sweep = spec(pattern, **spec_args)
    shape = {}
    if is_fresh(live.testbed):
        senders, receivers = hosts_per_side(pattern, max(sweep.grid["flows"])) if separate_hosts else (1, 1)
        shape = {"n_senders": senders, "n_receivers": receivers}
    with live.testbed_for(**shape) as tb:
        campaign = campaign or store.new_campaign_id(pattern, tb.kind)
        run_sweep(tb, sweep, runs_dir=runs_dir, campaign=campaign, progress=progress)
        live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def _flows_of(manifest: dict) -> int:
    return int(manifest.get("point", {}).get("flows", 1))


def load(runs_dir, campaign: str, pattern: str, include_contaminated: bool = False
         ) -> tuple[pd.DataFrame, list[dict]]:
    """The campaign's tidy data with each run's n (`flows`) and why it was flagged (`flagged`, ""
    for a clean run), and every manifest.

    When every run was flagged (a busy machine) the flagged runs are returned, each marked: the
    tables and figures show them as flagged, and every verdict is "not testable" saying why
    (verdict_table), instead of the notebook stopping on an exception."""
    try:
        tidy, manifests = common.load(runs_dir, campaign, _pattern(pattern).name, include_contaminated)
    except common.NoCleanRun:
        tidy, manifests = common.load(runs_dir, campaign, _pattern(pattern).name, include_contaminated=True)
    n = {m["run_id"]: _flows_of(m) for m in manifests}
    why = {m["run_id"]: common.flag_detail(m) for m in manifests}
    return tidy.assign(flows=tidy.run_id.map(n), flagged=tidy.run_id.map(why).fillna("")), manifests


def data_note(runs_dir, campaign: str, tidy: pd.DataFrame, manifests: list[dict],
              include_contaminated: bool) -> str:
    """What the notebook says under its campaign line: the runs flagged, for what, by which
    processes at what load, what became of them, and what the top-up did."""
    report = common.flag_report(manifests)
    if flagged_only(tidy):
        report += (". NO CLEAN RUN: the tables and figures below show these flagged runs, marked as such, "
                   "and no finding is judged on them")
    elif any(flags.flagged(m) for m in manifests):
        report += " (kept: include_contaminated)" if include_contaminated else " (left out)"
    top_up = common.top_up_record(runs_dir, campaign)
    return report + (f"\n{top_up}" if top_up else "")


def flagged_only(tidy: pd.DataFrame) -> bool:
    """True when the data holds no clean run (load() fell back to the flagged ones)."""
    return "flagged" in tidy and len(tidy) > 0 and bool((tidy.flagged != "").all())


def _flagged_runs(g: pd.DataFrame) -> int:
    return int(g[g.flagged != ""].run_id.nunique()) if "flagged" in g else 0


def point_quality(manifests: list[dict]) -> pd.DataFrame:
    """Per n: runs recorded, failed, flagged for foreign load, and the clean ones left to analyse."""
    rows = []
    for n in sorted({_flows_of(m) for m in manifests}):
        ms = [m for m in manifests if _flows_of(m) == n]
        ok = [m for m in ms if m["status"] == "ok"]
        flagged = sum(1 for m in ok if flags.flagged(m))
        rows.append({"flows": n, "runs": len(ms), "failed": len(ms) - len(ok), "flagged": flagged,
                     "clean": len(ok) - flagged, "unsteady": sum(1 for m in ok if m.get("unsteady"))})
    return pd.DataFrame(rows)


def _values(g: pd.DataFrame, metric: str, side: str) -> pd.Series:
    return g[(g.metric == metric) & (g.side == side)].value


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per n: flows and cores used, throughput, tpc and each side's CPU, means with 95 % CIs."""
    rows = []
    for n, g in tidy.groupby("flows"):
        row = {"flows": int(n), "flow_count": int(_values(g, "flow_count", "both").max()),
               "sender_cores": int(_values(g, "cores_count", "sender").max()),
               "receiver_cores": int(_values(g, "cores_count", "receiver").max())}
        for col, metric, side in (("throughput_gbps", "throughput_gbps", "both"), ("tpc_gbps", "tpc_gbps", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver")):
            row[col], row[col + "_ci95"] = metrics.confidence(_values(g, metric, side))
        # saturation is per core: with more cores on one side (incast, outcast on real servers) its
        # summed utilisation would look busier without any core being busier
        row["sender_cpu_per_core_pct"], row["sender_cpu_per_core_pct_ci95"] = metrics.confidence(
            _values(g, "cpu_util_pct", "sender") / max(1, row["sender_cores"]))
        row["receiver_cpu_per_core_pct"], row["receiver_cpu_per_core_pct_ci95"] = metrics.confidence(
            _values(g, "cpu_util_pct", "receiver") / max(1, row["receiver_cores"]))
        row["bottleneck"] = ("receiver" if row["receiver_cpu_per_core_pct"] >= row["sender_cpu_per_core_pct"]
                             else "sender")
        row["repetitions"] = len(_values(g, "tpc_gbps", "both"))
        row["flagged_runs"] = _flagged_runs(g)
        rows.append(row)
    return pd.DataFrame(rows)


def display_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary for reading: 'mean ± 95 % CI' per measure, one row per n."""
    out = pd.DataFrame({"n": summary.flows, "flows": summary.flow_count,
                        "cores (sender/receiver)": [f"{r.sender_cores}/{r.receiver_cores}"
                                                    for r in summary.itertuples()]})
    for col, title in (("throughput_gbps", "throughput (Gbit/s)"), ("tpc_gbps", "tpc (Gbit/s)"),
                       ("sender_cpu_pct", "sender CPU (%)"), ("receiver_cpu_pct", "receiver CPU (%)")):
        out[title] = [_ci_text(m, ci) for m, ci in zip(summary[col], summary[col + "_ci95"], strict=True)]
    out = out.assign(bottleneck=summary.bottleneck, repetitions=summary.repetitions)
    if "flagged_runs" in summary and summary.flagged_runs.any():  # only with flagged runs in the data
        out["flagged runs (not clean)"] = summary.flagged_runs
    return out


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    """Mean share of each side's busy samples per category and n (long form: flows, side, category, pct).

    Uses the call-chain-attributed breakdown where the runs kept their stacks (metrics.breakdown_metric).
    """
    metric = metrics.breakdown_metric(tidy)
    b = tidy[(tidy.metric == metric) & tidy.side.isin(SIDES)]
    out = b.groupby(["flows", "side", "category"], as_index=False).value.mean().rename(columns={"value": "pct"})
    order = {c: i for i, c in enumerate(metrics.BREAKDOWN_ORDER)}
    out = out.assign(rank=out.category.map(order).fillna(len(order)), metric=metric)
    return out.sort_values(["side", "flows", "rank"], ascending=[False, True, True]).drop(columns="rank") \
        .reset_index(drop=True)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    """The breakdown as one row per (side, category) and one column per n, in %."""
    wide = bd.pivot_table(index=["side", "category"], columns="flows", values="pct", sort=False)
    wide.columns = [f"n={c}" for c in wide.columns]
    return wide.reset_index()


def charts(summary: pd.DataFrame, bd: pd.DataFrame, pattern: str, label: str) -> dict:
    """The pattern's figures by stem (charts/patterns.py), titled with the paper's figure for it."""
    return figures.charts(summary, bd, pattern, _pattern(pattern).figure, label)


def _ci_text(mean: float, ci) -> str:
    return f"{mean:.1f}" + ("" if pd.isna(ci) else f" ± {ci:.1f}")


# F04 and F05 are §3.1's single-flow claims (findings.csv, stated): judged here as extensions, shown and kept
# out of the counts
SINGLE_FLOW_CLAIMS = dict.fromkeys(("F04", "F05"), "for a single flow, §3.1")


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, pattern: str, reference_dir, config: str = "all-opts") -> verdicts.Verdicts:
    """'Paper says / this run shows' for the pattern's findings, each by its rule in analysis/findings,
    on the clean runs; with no clean run at all every finding is not testable, saying why."""
    findings, fids = verdicts.load_findings(reference_dir), _pattern(pattern).findings
    if flagged_only(tidy):
        return verdicts.collect(findings, dict.fromkeys(fids, rules.no_clean_run(tidy)), extensions=SINGLE_FLOW_CLAIMS)
    per_run = rules.PerRun(tidy)
    rule = {"F09": lambda: rules.f09(tidy, pattern, per_run), "F04": lambda: rules.f04(tidy, per_run),
            "F05": lambda: rules.f05(tidy, config)}
    repeats = {"F09": ONE_CORE_PAIR} if pattern != "one-to-one" and rules.one_core_pair(tidy, per_run) else {}
    judged = {fid: rule[fid]() for fid in fids}
    return verdicts.collect(findings, judged, extensions=SINGLE_FLOW_CLAIMS, repeats=repeats)


# With one core per side every pattern is k flows on one core pair: incast's and all-to-all's F09 is then
# one-to-one's experiment (notebook 03), shown and counted once, there.
ONE_CORE_PAIR = "one-to-one's (03: k flows on one core pair, one core per side)"


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    manifests = store.load_manifests(runs_dir, campaign)
    experiment = manifests[0]["experiment"]
    tidy, manifests = load(runs_dir, campaign, experiment)
    return verdict_table.verdicts(tidy, experiment, reference_dir, manifests[0]["config"]["name"])


def breakdown_shift(bd: pd.DataFrame, top: int = 3) -> pd.DataFrame:
    """Per side, the categories whose share moved most between the smallest and the largest n."""
    ns = sorted(bd.flows.unique())
    if len(ns) < 2:
        return pd.DataFrame(columns=["side", "category", "first_pct", "last_pct", "change_points"])
    rows = []
    for side in SIDES:
        part = bd[bd.side == side].pivot_table(index="category", columns="flows", values="pct")
        delta = (part[ns[-1]] - part[ns[0]]).dropna()
        for cat in delta.abs().sort_values(ascending=False).index[:top]:
            rows.append({"side": side, "category": cat, "first_pct": part.loc[cat, ns[0]],
                         "last_pct": part.loc[cat, ns[-1]], "change_points": delta[cat]})
    return pd.DataFrame(rows).rename(columns={"first_pct": f"n={ns[0]}_pct", "last_pct": f"n={ns[-1]}_pct"})
