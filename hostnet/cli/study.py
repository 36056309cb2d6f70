"""Studies over campaigns: `hostnet receive-path` (the embedded testbed's receive paths compared) and
`hostnet top-up` (more runs of the points a campaign's undecided verdicts name)."""
from __future__ import annotations

from . import commands, live_edge
from .edge import die, runs_dir_option
from .. import project, store, testbed
from ..sections import SECTIONS, section
from ..testbed import steering


def register(sub) -> None:
    """receive-path and top-up."""
    p_ = commands.add(sub, "receive-path")
    p_.add_argument("--record", action="store_true", help="record one campaign per mode first (live)")
    p_.add_argument("--modes", nargs="+", choices=steering.EMBEDDED_MODES, default=list(steering.EMBEDDED_MODES))
    p_.add_argument("--campaign", nargs="+", metavar="MODE=CAMPAIGN", help="recorded campaigns to compare")
    p_.add_argument("--duration", type=int, default=5)
    p_.add_argument("--warmup", type=int, default=2)
    p_.add_argument("--repetitions", type=int, default=5)
    runs_dir_option(p_)
    p_.set_defaults(func=cmd_receive_path)

    t = commands.add(sub, "top-up")
    t.add_argument("notebook", help="the section notebook whose verdicts judge the campaign, e.g. 01-single-flow")
    t.add_argument("campaign")
    t.add_argument("--budget-runs", type=int, default=40)
    t.add_argument("--budget-minutes", type=float, default=15.0)
    runs_dir_option(t)
    t.add_argument("--reference-dir", default="", help="the paper's reference numbers (default: shipped with hostnet)")
    t.add_argument("--testbed", default="", help="a testbed.yaml of real servers (default: an embedded testbed "
                                                 "shaped like the campaign's)")
    t.set_defaults(func=cmd_top_up)


def cmd_receive_path(args) -> int:
    # lazy: the comparison and its recording load pandas and the measuring floor (0.8 s); --help does without
    from ..sections import receive_path
    campaigns = dict(c.split("=", 1) for c in args.campaign or [])
    if args.record:
        live_edge.require_live()
        campaigns.update(receive_path.record(args.modes, runs_dir=args.runs_dir, duration=args.duration,
                                             warmup=args.warmup, repetitions=args.repetitions))
    if not campaigns:
        die("nothing to compare: --record, or --campaign MODE=CAMPAIGN for each mode")
    for mode, campaign in campaigns.items():
        print(f"{mode}: {campaign}")
    print(receive_path.markdown(receive_path.table(args.runs_dir, campaigns)))
    return 0


def cmd_top_up(args) -> int:
    if args.notebook not in SECTIONS and f"{args.notebook}.ipynb" not in SECTIONS:
        known = ", ".join(n.removesuffix(".ipynb") for n in SECTIONS)
        die(f"{args.notebook}: not a notebook hostnet knows (one of {known})")
    if not store.Campaign(args.runs_dir, args.campaign).is_sweep():  # e.g. 13's before 2026-11-27
        die(f"{args.campaign} is not a sweep (no {store.PLAN_FILE}): its notebook tops it up when it runs live")
    # lazy: the top-up loop is the measuring floor (runner, probes, verdicts: 0.8 s), after the refusals above
    from ..measure import topup
    module = section(args.notebook).load_module()
    manifest = store.load_manifests(args.runs_dir, args.campaign)[0]
    # a notebook of two campaigns (15: zero-copy and BIG TCP) names a judge per stored experiment
    judge = getattr(module, "JUDGES", {}).get(manifest.get("experiment"), getattr(module, "judge", None))
    if judge is None:
        die(f"{args.notebook}: its verdicts do not name the points they need (no judge); nothing to top up")
    live_edge.require_live()
    shape = {} if args.testbed else topup.embedded_shape(manifest)
    with testbed.using(args.testbed, prefix="tu", **shape) as tb:
        log = topup.decide(tb, judge, runs_dir=args.runs_dir, campaign=args.campaign,
                           reference_dir=project.reference_dir(args.reference_dir), budget_runs=args.budget_runs,
                           budget_minutes=args.budget_minutes)
    for i, r in enumerate(log.per_round, 1):
        print(f"round {i}: {r['runs']} runs of {len(r['points'])} point(s) for {', '.join(r['findings'])}")
    print(f"{log.runs} runs in {log.rounds} rounds, {log.seconds / 60:.1f} min; stopped: {log.stopped}")
    return 0
