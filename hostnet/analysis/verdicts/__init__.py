"""One rule for every verdict: 'paper says / this run shows', judged the same way in every section.

The vocabulary is VOCABULARY. A comparison is decided by the confidence interval (at LEVEL, the
sequential design's per-look level: see CONFIDENCE) of the difference of two sets of clean runs
(Welch's t, or a paired t where both values come from the same runs), never by medians alone:

- a claimed direction (b above a) is *reproduced* when the interval lies above zero, *not
  reproduced* when it lies below, and *inconclusive* while it straddles zero;
- a claimed size ("about −43 %") is *reproduced* when the paper's value lies inside the interval
  of the relative change, *reproduced in direction* when the direction is decided but the size is
  not the paper's (both are given);
- a claimed absence of change ("changes little") is *reproduced* when the whole interval lies
  within ± the margin, *not reproduced* when it lies wholly outside it;
- a finding whose premise the testbed cannot establish is *not testable here*, with the reason.

On the embedded testbed every finding is judged twice (under_accountings): on the raw numbers and
on the NIC-equivalent ones (ledger.py: the emulation's own work billed where a NIC host would
have it). Where the two agree the verdict stands; where they decide opposite ways it *depends on
the testbed*, with both numbers; where one is undecided the finding stays *inconclusive* until
both decide. Where counting the ambiguous line (the NAPI threads' own scheduling) as sched, or
leaving it out, alone turns the NIC-equivalent verdict, the table says so.

An undecided judgement says what would decide it (the clean runs per point the interval's
half-width suggests) and which points need them, so a live campaign can be topped up
(measure/topup.py) until the verdict is decided, the design's looks are taken or a stated budget
is spent. A section's rules return a Verdicts value: the table a notebook shows and those points.
"""
from __future__ import annotations

from .vocabulary import (
    ACCOUNTING_COLUMNS, AT_PROFILE, COLUMNS, CONFIDENCE, DEPENDS, INCONCLUSIVE, IN_DIRECTION, LEVEL, LOOKS,
    MAX_RUNS, METHOD, MIN_RUNS, MIN_RUNS_TO_GIVE_UP, NOT_REPRODUCED, NOT_TESTABLE, POCOCK_NOMINAL, REHEARSAL,
    REPRODUCED, STEADINESS_COLUMNS, VOCABULARY)
from .intervals import Difference, against_level, difference
from .rules import (
    Judgement, combine, direction, familywise_level, largest, not_testable, ordered, similar, sized)
from .tables import (
    ACCOUNTING_PARTS, EXTENSION, SAME_EXPERIMENT, Verdicts, as_rehearsal, as_table, both_texts, clauses,
    collect, evidence, is_extension, merge_accountings, merged_verdict, row, under_accountings, unsteady_runs)
from .data import MIN_BUSY_SAMPLES, Shares, clean_values, load_findings, shares_by_run

__all__ = ["ACCOUNTING_COLUMNS", "AT_PROFILE", "COLUMNS", "CONFIDENCE", "DEPENDS", "INCONCLUSIVE", "IN_DIRECTION",
           "LEVEL", "LOOKS", "MAX_RUNS", "METHOD", "MIN_RUNS", "MIN_RUNS_TO_GIVE_UP", "NOT_REPRODUCED",
           "NOT_TESTABLE", "POCOCK_NOMINAL", "REHEARSAL", "REPRODUCED", "STEADINESS_COLUMNS", "VOCABULARY",
           "Difference", "against_level", "difference", "Judgement", "combine", "direction", "familywise_level",
           "largest", "not_testable", "ordered", "similar", "sized", "ACCOUNTING_PARTS", "EXTENSION",
           "SAME_EXPERIMENT", "Verdicts", "as_rehearsal", "as_table", "both_texts", "clauses", "collect", "evidence",
           "is_extension", "merge_accountings", "merged_verdict", "row", "under_accountings", "unsteady_runs",
           "MIN_BUSY_SAMPLES", "Shares", "clean_values", "load_findings", "shares_by_run"]
