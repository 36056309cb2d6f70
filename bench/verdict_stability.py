"""Verdict stability: two independent campaigns of one profile, judged by the same section, their
decided verdicts side by side (issue 43). The target: no decided verdict flips to the opposite one.

    python -m bench.verdict_stability 01-single-flow A B         # two stored campaigns
    python -m bench.verdict_stability 01-single-flow --record 2 --sweep single-flow  # record two now

A verdict is decided when it is reproduced, in direction (both on the paper's side) or not
reproduced (against it); inconclusive, not testable and depends-on-the-testbed decide nothing. Each
pair is one of: same, flipped (decided both times, on opposite sides: the failure this bench
exists to catch), decided once (the other campaign could not decide it: the profile is too short
to decide that finding, and it should read "not decided at this profile"), or undecided. Results
go to bench/results/<date>-verdict-stability-<notebook>/ (table.csv, summary.md).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

FOR = ("reproduced", "in direction")
AGAINST = ("not reproduced",)


def side(verdict: str) -> str | None:
    """'for' or 'against' the paper for a decided verdict; None for one that decides nothing."""
    if verdict in FOR:
        return "for"
    if verdict in AGAINST:
        return "against"
    return None


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Two verdict tables (id, verdict) -> one row per finding judged in either: verdict_a,
    verdict_b and status (same, flipped, decided once, undecided)."""
    left = a.drop_duplicates("id").set_index("id").verdict
    right = b.drop_duplicates("id").set_index("id").verdict
    rows = []
    for fid in list(dict.fromkeys([*left.index, *right.index])):
        va, vb = left.get(fid, "not judged"), right.get(fid, "not judged")
        sa, sb = side(va), side(vb)
        if sa and sb:
            status = "same" if sa == sb else "flipped"
        elif sa or sb:
            status = "decided once"
        else:
            status = "same" if va == vb else "undecided"
        rows.append({"id": fid, "verdict_a": va, "verdict_b": vb, "status": status})
    return pd.DataFrame(rows, columns=["id", "verdict_a", "verdict_b", "status"])


def summary(table: pd.DataFrame) -> dict:
    counts = table.status.value_counts().to_dict()
    return {"findings": len(table), "flipped": counts.get("flipped", 0), "same": counts.get("same", 0),
            "decided_once": counts.get("decided once", 0), "undecided": counts.get("undecided", 0),
            "met": counts.get("flipped", 0) == 0}


def judged(notebook: str, runs_dir: Path, campaign: str) -> pd.DataFrame:
    """The section's verdict table of a stored campaign (the notebook module's judge)."""
    from hostnet import project, store
    from hostnet.sections import section
    module = section(notebook).load_module()
    experiment = store.load_manifests(runs_dir, campaign)[0].get("experiment")
    judge = getattr(module, "JUDGES", {}).get(experiment, getattr(module, "judge", None))
    if judge is None:
        raise SystemExit(f"bench.verdict_stability: {notebook} has no judge: its verdicts cannot be compared")
    return judge(runs_dir, campaign, project.reference_dir()).table


def record(sweep: str, runs_dir: Path, n: int, **fields) -> list[str]:
    """n campaigns of a declared sweep (sweeps/<sweep>.yaml, fields over it), one after another, each
    on a fresh embedded testbed."""
    from hostnet.measure.sweep import declared, run_sweep
    from hostnet.testbed import embedded
    spec = declared(sweep, **fields)
    names = []
    for k in range(n):
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-stability{k}-{sweep}-embedded"
        with embedded(f"vs{k}") as tb:
            run_sweep(tb, spec, runs_dir=runs_dir, campaign=name, progress=True)
        names.append(name)
    return names


def write(out: Path, notebook: str, campaigns: list[str], table: pd.DataFrame) -> str:
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "table.csv", index=False)
    s = summary(table)
    lines = [f"# Verdict stability: {notebook}", "", f"Campaigns: A `{campaigns[0]}`, B `{campaigns[1]}`.", "",
             f"{s['findings']} findings: {s['same']} the same, {s['flipped']} flipped, {s['decided_once']} decided "
             f"once, {s['undecided']} undecided both times; target (none flipped) "
             f"{'met' if s['met'] else 'NOT met'}.", "", "| finding | A | B | status |", "|---|---|---|---|"]
    lines += [f"| {r.id} | {r.verdict_a} | {r.verdict_b} | {r.status} |" for r in table.itertuples()]
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.verdict_stability", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook", help="the section notebook whose verdicts judge both, e.g. 01-single-flow")
    ap.add_argument("campaigns", nargs="*", help="two stored campaigns (without --record)")
    ap.add_argument("--record", type=int, metavar="N", help="record N=2 campaigns of --sweep first")
    ap.add_argument("--sweep", help="with --record: the declared sweep (sweeps/<name>.yaml), e.g. single-flow")
    ap.add_argument("--duration", type=int, help="with --record: seconds per point instead of the sweep's")
    ap.add_argument("--repetitions", type=int, help="with --record: repetitions instead of the sweep's")
    ap.add_argument("--runs-dir", type=Path, default=Path("data/runs"))
    ap.add_argument("--results", type=Path, help="where to write (default bench/results/<date>-verdict-stability-…)")
    args = ap.parse_args(argv)
    if args.record:
        if args.record != 2 or args.campaigns or not args.sweep:
            ap.error("--record 2 --sweep NAME, and no campaigns with it")
        campaigns = record(args.sweep, args.runs_dir, 2, duration=args.duration, repetitions=args.repetitions)
    elif len(args.campaigns) == 2:
        campaigns = args.campaigns
    else:
        ap.error("two campaigns, or --record 2")
    table = compare(*(judged(args.notebook, args.runs_dir, c) for c in campaigns))
    out = args.results or Path("bench/results") / f"{time.strftime('%Y%m%d')}-verdict-stability-{args.notebook}"
    print(write(out, args.notebook, campaigns, table))
    print(f"results: {out}")
    return 0 if summary(table)["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
