"""`hostnet breakdown` (the paper's breakdown of any perf profile), `hostnet flamegraph` (a run's
folded stacks) and `hostnet compare` (two campaigns point by point)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import commands
from .edge import cpu_set, die, runs_dir_option
from .. import store
from ..hosts import HostError, LocalHost
from ..parsers import ParseError
from ..probes.perf import PerfOnHost


def register(sub) -> None:
    """breakdown, flamegraph, compare: reading profiles, runs and campaigns."""
    k = commands.add(sub, "breakdown")
    k.add_argument("file", help="perf.data (perf is run on it), perf script or perf report --stdio text, folded "
                                "stacks, or a run's RUN/raw/MACHINE.perf_report.txt (its CPUs named sender/receiver; "
                                "`hostnet data unpack RUN` first)")
    # one value per flag, repeated for more: a list flag (nargs="+") swallowed the FILE after it
    k.add_argument("--cpus", type=cpu_set, action="append", metavar="SET",
                   help="a CPU set broken down apart: 1 or 0,1 or 0-3; repeat it for more sets (default: each CPU, "
                        "then all)")
    k.add_argument("--comm", action="append", help="an application command (repeat it for more); others are foreign, "
                                                   "kernel threads that serve it (ksoftirqd, kworker, napi/, swapper, "
                                                   "...) stay (default: all)")
    k.add_argument("--kthreads", help="a regex of more kernel threads to count with --comm")
    k.add_argument("--event", help="the event to break down, in a perf script text or perf report of several "
                                   "(e.g. cpu-clock)")
    k.add_argument("--series", help="taxonomy: linux-6 or linux-5 (default: the recorded kernel's, else the "
                                    "running one's)")
    k.add_argument("--embedded", action="store_true", help="recorded on hostnet's embedded testbed (attribution: "
                                                          "IPI sends and NAPI-thread scheduling are testbed)")
    fmt = k.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="long-form CSV: cpus, category, leaf_pct, attributed_pct")
    fmt.add_argument("--json", action="store_true", help="the source, taxonomy and every CPU set's shares as JSON")
    k.add_argument("--flamegraph", metavar="OUT", help="also a flame graph: OUT.html interactive (offline, as "
                                                       "`hostnet flamegraph` writes), OUT.svg or OUT.png an icicle")
    k.set_defaults(func=cmd_breakdown)

    g = commands.add(sub, "flamegraph")
    g.add_argument("run", help="a run directory")
    g.add_argument("--side", choices=("sender", "receiver"), default="receiver", help="whose CPU (default: receiver)")
    g.add_argument("-o", "--output", help=".html (interactive), .svg or .png (default: flamegraph-RUN-SIDE.html "
                                          "in the working directory)")
    g.set_defaults(func=cmd_flamegraph)

    c = commands.add(sub, "compare")
    c.add_argument("a", help="the baseline campaign (a directory name under --runs-dir)")
    c.add_argument("b", help="the campaign compared with it, point by point")
    runs_dir_option(c, "where both campaigns are")
    out = c.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="one row per point, metric and side (run counts, means, "
                                                        "B-A and its interval)")
    out.add_argument("--json", action="store_true", help="the same rows, with each campaign's usable and flagged runs")
    c.set_defaults(func=cmd_compare)


def cmd_breakdown(args) -> int:
    """The paper's breakdown of any perf profile: perf.data, perf script, perf report or folded stacks."""
    where = Path(args.file).parent
    if not Path(args.file).exists():  # said before the analysis code loads
        if where.name == store.RAW_DIR:
            if store.is_packed(where.parent):
                die(f"{args.file}: the run's raw files are packed; `hostnet data unpack {where.parent}` writes its "
                     f"raw/ first")
        die(f"{args.file}: no such file")
    # lazy: the breakdown reads tables with pandas (0.8 s); breakdown --help and a missing file do without
    from ..analysis import profiles
    try:
        profile, results, series, series_from = profiles.analyse(
            args.file, cpus=args.cpus, comms=args.comm, kthreads=args.kthreads, series=args.series,
            embedded=args.embedded, event=args.event, perf=PerfOnHost(LocalHost()))
        if args.flamegraph:
            cpus = sorted({c for r in results for c in r["cpus"]})
            # lazy: altair and vl-convert draw it (0.8 s more), for --flamegraph only
            from ..charts.profiles import flamegraph
            written = Path(flamegraph(profile, cpus, args.flamegraph))
            shown = (written if written.suffix == ".html"
                     else f"{written.with_suffix('.svg')} and {written.with_suffix('.png')}")
            print(f"flame graph written to {shown}", file=sys.stderr)
    except (ParseError, ValueError, OSError, HostError) as exc:
        die(str(exc))
    if args.csv:
        print(profiles.table(results).to_csv(index=False), end="")
    elif args.json:
        print(json.dumps(profiles.to_json(profile, results, series, series_from), indent=1))
    else:
        print(profiles.format_table(profile, results, series, series_from,
                                        roles=profiles.run_cpu_roles(Path(args.file))))
    return 0


def cmd_flamegraph(args) -> int:
    run = Path(args.run)
    if not (run / "manifest.json").is_file():  # said before the charting code loads
        die(f"{run}: not a run directory (no manifest.json)")
    # lazy: the explore section loads pandas and altair (1.8 s); flamegraph --help and a missing run do without
    from ..sections.explore import flamegraph, flamegraph_page
    # into the working directory: a run directory is recorded data, not a place for derived files
    out = Path(args.output or f"flamegraph-{run.resolve().name}-{args.side}.html")
    if out.suffix == ".html":  # interactive (d3-flame-graph inlined: opens offline)
        out.write_text(flamegraph_page(run, args.side))
        print(f"flame graph written to {out}")
    else:  # a static icicle chart: .svg or .png
        # lazy: charts.plots is altair (1.7 s), for flamegraph's .svg and .png only
        from ..charts.plots import save
        save(flamegraph(run, args.side), out.with_suffix(""))
        print(f"icicle chart written to {out.with_suffix('.svg')} and {out.with_suffix('.png')}")
    return 0


def cmd_compare(args) -> int:
    # lazy: the comparison reads tidy tables with pandas (0.9 s), which compare --help does without
    from ..analysis.compare import compare, format_comparison
    m = compare(args.runs_dir, args.a, args.b)
    if args.csv:
        print(m.rows.to_csv(index=False), end="")
    elif args.json:
        print(json.dumps(m.to_json(), indent=1))
    else:
        print(format_comparison(m))
    return 0
