"""The verdicts' vocabulary and the sequential design's constants: the level every interval is
taken at (Pocock's, for the design's looks), the runs it needs, and the verdict table's columns."""
from __future__ import annotations


REPRODUCED = "reproduced"
IN_DIRECTION = "reproduced in direction"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
DEPENDS = "depends on the testbed"  # raw and NIC-equivalent accounting decide opposite ways
# the runs came from a rehearsal testbed (emulated NICs under TCG, analysis.flags): shown, never judged
REHEARSAL = "rehearsal"
VOCABULARY = (REPRODUCED, IN_DIRECTION, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE, DEPENDS, REHEARSAL)
# The sequential design, fixed before any campaign's first run: a campaign's verdicts are looked at
# no more than LOOKS times (its planned repetitions, then at most LOOKS - 1 decisive top-up rounds,
# each adding as many repetitions as were planned), and every look is judged at Pocock's constant
# nominal level for LOOKS equally spaced looks, so the chance that any look decides a true null
# stays at 5 % overall (Pocock 1977; two-sided nominal levels by number of looks). Judging each
# look at 95 % instead let 6 looks decide 12 % of null differences (tests/unit/analysis/
# test_sequential.py simulates both).
LOOKS = 4
POCOCK_NOMINAL = {1: 0.05, 2: 0.0294, 3: 0.0221, 4: 0.0182, 5: 0.0158, 6: 0.0142}
CONFIDENCE = 1 - POCOCK_NOMINAL[LOOKS]
LEVEL = f"{100 * CONFIDENCE:.1f} %"  # how the verdicts name it: "98.2 %"
METHOD = (f"{LEVEL} CI of the difference (Welch t; paired t for shares of the same runs), clean runs only: "
          f"Pocock's level for up to {LOOKS} looks (the planned runs and {LOOKS - 1} top-up rounds), 5 % overall")
# No arm decides with fewer clean runs than this: a spread from two runs is too uncertain to trust.
MIN_RUNS = 3
# The most clean runs per point a rule will ask for: beyond it the difference is too small to matter here.
MAX_RUNS = 30
# The fewest clean runs per point whose spread may rule a top-up out (a projection beyond MAX_RUNS):
# a spread estimated from 3 runs is itself uncertain by about a factor of 2 either way.
MIN_RUNS_TO_GIVE_UP = 5
# How an undecided verdict reads when no top-up within the design can decide it (more than MAX_RUNS
# clean runs per point, or too few samples per run): the campaign's profile (window, sampling) is
# what would have to change, so the verdict says so instead of asking for runs.
AT_PROFILE = "not decided at this profile"
COLUMNS = ["id", "paper says", "this run shows", "verdict"]
# what under_accountings adds: each accounting's own verdict, and what the ambiguous line does
ACCOUNTING_COLUMNS = ["raw", "NIC-equivalent", "sensitivity"]
# and how many runs were unsteady, with the verdict without them where it differs
STEADINESS_COLUMNS = ["unsteady runs", "steady runs only"]
