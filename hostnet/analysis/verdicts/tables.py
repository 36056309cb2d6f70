"""Verdict tables: Verdicts (the table and the points each undecided counted finding wants),
collect, as_table, and under_accountings (each table judged under raw and NIC-equivalent
accounting, merged, and again without unsteady runs); a rehearsal's table."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from .. import ledger
from ..metrics import STEADY_CV_LIMIT_PCT
from .rules import Judgement, _key
from .vocabulary import (
    ACCOUNTING_COLUMNS, COLUMNS, DEPENDS, INCONCLUSIVE, IN_DIRECTION, NOT_TESTABLE, REHEARSAL, REPRODUCED)


def as_rehearsal(table: pd.DataFrame, why: str) -> pd.DataFrame:
    """A verdict table judged from a rehearsal's runs (`why`: the testbed's reason, e.g. emulated NICs
    under TCG), as it is shown: every verdict, and each accounting's, reads REHEARSAL; what the
    rules saw is kept behind `why`, as the code path's output and not as evidence; no top-up is asked."""
    out = table.copy()
    out["this run shows"] = [f"{why}; what the code path computed (not evidence): {shows}"
                             for shows in out["this run shows"]]
    for col in ("verdict", "raw", "NIC-equivalent"):
        if col in out.columns:
            out[col] = REHEARSAL
    for col in ("sensitivity", "steady runs only"):
        if col in out.columns:
            out[col] = ""
    return out


def row(fid: str, claim: str, j: Judgement) -> dict:
    shows = j.text if j.verdict != NOT_TESTABLE else (f"{j.shows}; needs {j.decide}" if j.decide else j.shows)
    return {"id": fid, "paper says": claim, "this run shows": shows, "verdict": j.verdict}


EXTENSION = " (extension)"  # an id's suffix: judged where the paper does not state it, kept out of counts


# an id's suffix: the same experiment as another notebook's (patterns on one core pair), shown, counted once
SAME_EXPERIMENT = " (same experiment)"


def is_extension(fid: str) -> bool:
    """Shown but not counted: an extension, or a repeat of an experiment counted elsewhere."""
    return fid.endswith((EXTENSION, SAME_EXPERIMENT))


@dataclass(frozen=True)
class Verdicts:
    """What a section's rules decided: the verdict table a notebook shows (COLUMNS, and the
    accounting and steadiness columns once under_accountings has judged it) and, per finding, the
    points an inconclusive counted verdict needs more clean runs of (what a top-up runs)."""
    table: pd.DataFrame
    wanted: dict[str, list[dict]] = field(default_factory=dict)

    def joined(self, *others: "Verdicts") -> "Verdicts":
        """These verdicts and others' as one (a campaign two notebooks judge, e.g. F17 and F28)."""
        return Verdicts(pd.concat([self.table, *(o.table for o in others)], ignore_index=True),
                        _union(self.wanted, *(o.wanted for o in others)))

    def asking(self, key: str, points: list[dict]) -> "Verdicts":
        """The same verdicts asking for more runs of `points` too, under `key` (a top-up's own reason)."""
        return Verdicts(self.table, {**self.wanted, key: points})


def collect(findings: pd.DataFrame, judged: dict[str, Judgement | None], extensions: dict[str, str] | None = None,
            repeats: dict[str, str] | None = None) -> Verdicts:
    """The verdict table (COLUMNS) in the order given, and the points an inconclusive counted verdict
    needs more clean runs of, per finding; a finding judged None (nothing in the campaign to judge
    it on: findings/) has no row. extensions: findings judged beyond
    where the paper states them (fid -> where it does): their ids end in EXTENSION and their claim
    says so, so no overall count or summary takes them for the paper's. repeats: findings whose
    experiment here is another notebook's (fid -> which): their ids end in SAME_EXPERIMENT, counted there."""
    judged = {fid: j for fid, j in judged.items() if j is not None}
    claims = findings.set_index("id").claim.to_dict()
    for suffix, named, text in ((EXTENSION, extensions, "Extension (the paper states it {})"),
                                (SAME_EXPERIMENT, repeats, "The same experiment as {} here, counted there")):
        for fid, where in (named or {}).items():
            if fid in judged:
                claims[fid + suffix] = f"{text.format(where)}: {claims[fid]}"
                judged = {(k + suffix if k == fid else k): v for k, v in judged.items()}
    out = pd.DataFrame([row(fid, claims[fid], j) for fid, j in judged.items()], columns=COLUMNS)
    # only counted findings ask for runs: an extension or another notebook's experiment would spend the
    # campaign's looks and budget on verdicts no tally takes (the pattern campaigns' F04/F05 extensions did)
    return Verdicts(out, {fid: list(j.points) for fid, j in judged.items() if j.verdict == INCONCLUSIVE and j.points
                          and not fid.endswith((EXTENSION, SAME_EXPERIMENT))})


def as_table(rules: Callable[..., Verdicts]) -> Callable[..., pd.DataFrame]:
    """A section's rules (returning Verdicts) as its verdict_table: called, the table a notebook
    shows; `.verdicts(...)`, the whole value (a section's judge, for the top-up)."""
    @functools.wraps(rules)
    def shown(*args, **kwargs) -> pd.DataFrame:
        return rules(*args, **kwargs).table
    shown.verdicts = rules
    return shown


def under_accountings(rules: Callable[..., Verdicts]) -> Callable[..., pd.DataFrame]:
    """A section's rules(…, tidy, …) (or …_tidy) judged under each accounting of ledger.py and
    merged (merge_accountings), then again without unsteady runs, shown where that changes a verdict.
    Where the tidy data has no ledger (real servers, or runs recorded before it) both accountings
    are the raw one and the table says so. Returned as_table: the table, and .verdicts for the value."""
    sig = inspect.signature(rules)
    name = next(p for p in sig.parameters if p == "tidy" or p.endswith("_tidy"))

    def accounted(args, kwargs, tidy: pd.DataFrame, variants: bool = True) -> Verdicts:
        """variants False: the merged verdicts only (the variants of the ambiguous line feed only the
        sensitivity column, so judging them again without the unsteady runs would be wasted)."""
        bound = sig.bind(*args, **kwargs)

        def under(accounting):
            bound.arguments[name] = ledger.view(tidy, accounting)
            return rules(*bound.args, **bound.kwargs)
        raw = under(ledger.RAW)
        if not ledger.has_ledger(tidy):
            return merge_accountings(raw)
        return merge_accountings(raw, under(ledger.NIC), {a: under(a) for a in (ledger.NIC_AS_SCHED,
                                                                                 ledger.NIC_WITHOUT) if variants})

    @functools.wraps(rules)
    def judged(*args, **kwargs) -> Verdicts:
        tidy = sig.bind(*args, **kwargs).arguments[name]
        decided = accounted(args, kwargs, tidy)
        out = decided.table
        unsteady = unsteady_runs(tidy)
        runs = tidy.run_id.nunique() if "run_id" in tidy.columns else 0
        out["unsteady runs"] = f"{len(unsteady)} of {runs}"
        out["steady runs only"] = "no steady run" if unsteady and runs == len(unsteady) else ""
        if unsteady and runs > len(unsteady):
            again = accounted(args, kwargs, tidy[~tidy.run_id.isin(unsteady)],
                              variants=False).table.set_index("id").verdict
            without = [again.get(f, "not judged (no steady run of its points)") for f in out["id"]]
            out["steady runs only"] = [w if w != v else "" for w, v in zip(without, out["verdict"], strict=True)]
        return decided
    return as_table(judged)


def unsteady_runs(tidy: pd.DataFrame) -> set[str]:
    """Runs a flow of which varied by more than analysis.STEADY_CV_LIMIT_PCT per second (what the
    manifest calls unsteady), read from the tidy rows."""
    if not {"metric", "run_id"} <= set(tidy.columns):
        return set()
    cv = tidy[tidy.metric == "flow_throughput_cv_pct"]
    return set(cv[cv.value > STEADY_CV_LIMIT_PCT].run_id)


def merged_verdict(raw: str, nic: str) -> str:
    """One verdict from the two accountings' (docs/verdicts.md): the same stands; reproduced and
    in direction give in direction; an undecided one keeps the finding inconclusive; opposite
    decisions (or testable under one only) depend on the testbed."""
    if raw == nic:
        return raw
    pair = {raw, nic}
    if pair == {REPRODUCED, IN_DIRECTION}:
        return IN_DIRECTION
    if INCONCLUSIVE in pair and NOT_TESTABLE not in pair:
        return INCONCLUSIVE
    return DEPENDS


def merge_accountings(raw: Verdicts, nic: Verdicts | None = None,
                      variants: dict[str, Verdicts] | None = None) -> Verdicts:
    """The raw and NIC-equivalent verdict tables of the same findings as one (COLUMNS +
    ACCOUNTING_COLUMNS): merged_verdict, both texts where they differ, and a sensitivity line where
    a variant of the ambiguous line alone turns the NIC-equivalent verdict. nic None: the data have
    no ledger, so the raw table is both."""
    no_ledger = nic is None
    nic = raw if no_ledger else nic
    nic_by, var_by = nic.table.set_index("id"), {a: v.table.set_index("id") for a, v in (variants or {}).items()}
    rows = []
    for _, r in raw.table.iterrows():
        n = nic_by.loc[r["id"]] if r["id"] in nic_by.index else r
        shows = r["this run shows"]
        if n["this run shows"] != shows:
            shows = both_texts(shows, n["this run shows"])
        flips = [f"{ledger.LABELS[a]}: {t.loc[r['id'], 'verdict']}" for a, t in var_by.items()
                 if r["id"] in t.index and t.loc[r["id"], "verdict"] != n["verdict"]]
        rows.append({"id": r["id"], "paper says": r["paper says"], "this run shows": shows,
                     "verdict": merged_verdict(r["verdict"], n["verdict"]), "raw": r["verdict"],
                     "NIC-equivalent": "(no ledger: raw)" if no_ledger else n["verdict"],
                     "sensitivity": ("the ambiguous line alone turns it (" + "; ".join(flips) + ")") if flips else ""})
    out = pd.DataFrame(rows, columns=COLUMNS + ACCOUNTING_COLUMNS)
    undecided = set(out[out.verdict == INCONCLUSIVE].id)
    return Verdicts(out, {fid: pts for fid, pts in _union(raw.wanted, nic.wanted).items() if fid in undecided})


def clauses(text: str) -> list[str]:
    """A "this run shows" text cut at its "; " separators outside brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return [c for c in [*out, text[start:]] if c]


# How a merged text names its parts (evidence() reads them back)
ACCOUNTING_PARTS = ("raw", "NIC-equivalent", "both")


def both_texts(raw: str, nic: str) -> str:
    """The two accountings' texts as one, what they say alike said once ("both: ..."): F02's
    6-line note on the aRFS step was printed under each accounting."""
    a, b = clauses(raw), clauses(nic)
    shared = [c for c in a if c in b]
    own = ["; ".join(c for c in a if c not in shared), "; ".join(c for c in b if c not in shared)]
    parts = [f"{name}: {text}" for name, text in zip(ACCOUNTING_PARTS, [*own, "; ".join(shared)], strict=True)
             if text]
    return " | ".join(parts)


def evidence(shows: str) -> list[tuple[str, str]]:
    """A verdict's "this run shows" as (accounting, text) parts: raw, NIC-equivalent and both where
    the accountings differ (both_texts), else one part with no name."""
    parts = shows.split(" | ")
    named = [p.split(": ", 1) for p in parts]
    if len(parts) > 1 and all(len(n) == 2 and n[0] in ACCOUNTING_PARTS for n in named):
        return [(n[0], n[1]) for n in named]
    return [("", shows)]


def _union(*wanted: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Points wanted per finding, from several asks, each point once."""
    out: dict[str, list[dict]] = {}
    for ask in wanted:
        for fid, pts in ask.items():
            out[fid] = list({_key(p): p for p in [*out.get(fid, []), *pts]}.values())
    return out
