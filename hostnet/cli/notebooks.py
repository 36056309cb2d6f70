"""`hostnet figures` (every notebook through papermill, and the report), `hostnet notebooks` (stored
outputs, conventions) and a notebook swept over a parameter grid (`hostnet sweep NB.ipynb`)."""
from __future__ import annotations

import json
from pathlib import Path

from . import commands, live_edge
from .edge import die
from .live_edge import hand_to_kernels, steering_option, testbed_spec
from ..measure.options import PROFILES


def register(sub) -> None:
    """figures and notebooks: regenerating what the notebooks show."""
    f = commands.add(sub, "figures")
    f.add_argument("--mode", choices=("replay", "run"), default="replay",
                   help="replay: the recorded campaigns, no root (default); run: measure live (root)")
    f.add_argument("--profile", choices=tuple(PROFILES), default="quick",
                   help="run mode: " + "; ".join(f"{n} ({p['duration']} s points, {p['warmup']} s warm-up, "
                                                 f"{p['repetitions']} repetitions)" for n, p in PROFILES.items())
                        + " (smoke exercises the notebooks and rarely decides)")
    f.add_argument("--duration", type=int, help="run mode: override the profile's measured seconds per point")
    f.add_argument("--repetitions", type=int, help="run mode: override the profile's repetitions")
    f.add_argument("--quick", action="store_true", help="same as --profile quick")
    f.add_argument("--runs-dir", help="where notebooks read (replay) or write (run) campaigns "
                                      "(default: each notebook's own, data/runs)")
    f.add_argument("--figures-dir", help="where figures and index.html go (default: figures/)")
    f.add_argument("--jobs", type=int, help="replay: notebooks executed side by side (default: one more than "
                                            "the cores); run mode executes them one at a time")
    f.add_argument("--testbed", help="run mode: what every notebook runs on: embedded (a fresh one each, the "
                                     "default), the name of an embedded testbed that is up, or a testbed.yaml path")
    f.add_argument("--top-up-runs", type=int, help="run mode: runs each notebook may add until its verdicts are "
                                                   "decided (default: $HOSTNET_TOP_UP_RUNS, else 30; docs/verdicts.md)")
    f.add_argument("--top-up-minutes", type=float, help="run mode: minutes each notebook's top-up may take "
                                                        "(default: $HOSTNET_TOP_UP_MINUTES, else 10)")
    steering_option(f)
    f.set_defaults(func=cmd_figures)

    n = commands.add(sub, "notebooks")
    n.add_argument("action", choices=("store-outputs", "strip-outputs", "check"),
                   help="store-outputs, strip-outputs or check (see above)")
    n.add_argument("notebooks", nargs="*", help="default: 00-explore and every section notebook")
    n.set_defaults(func=cmd_notebooks)


def cmd_figures(args) -> int:
    if args.testbed and args.mode != "run":
        die("--testbed names what run mode measures on; replay reads recorded campaigns")
    if args.jobs is not None and (args.jobs < 1 or (args.mode == "run" and args.jobs != 1)):
        die(f"--jobs {args.jobs}: replay takes 1 or more; run mode executes one notebook at a time "
             f"(side by side they would load each other's measurements)")
    # lazy: the batch loads papermill, nbformat and jupyter_client (0.5 s); --help and the refusals do without
    from ..notebook import batch
    if args.mode == "run":
        live_edge.require_live()
        hand_to_kernels(args)
    try:
        places = batch.Places(runs_dir=Path(args.runs_dir) if args.runs_dir else None,
                              figures_dir=Path(args.figures_dir) if args.figures_dir else None)
        out = batch.run_notebooks(mode=args.mode, places=places, profile_name="quick" if args.quick else args.profile,
                                  duration=args.duration, repetitions=args.repetitions,
                                  testbed=testbed_spec(args) if args.testbed else None, jobs=args.jobs)
    except batch.NotebookExecutionError as exc:
        die(str(exc))
    print(f"figures written; report: {out}")
    return 0


def cmd_notebooks(args) -> int:
    # lazy: papermill and nbformat (0.5 s), which notebooks --help does without
    from ..notebook import batch, stored_outputs
    paths = [Path(p) for p in args.notebooks] or None
    if args.action == "store-outputs":
        for p in stored_outputs.store_outputs(paths):
            print(f"outputs stored in {p}")
    elif args.action == "strip-outputs":
        for p in stored_outputs.strip_outputs(paths):
            print(f"outputs removed from {p}")
    else:
        bad = {nb.name: batch.check_conventions(nb) for nb in (paths or batch.section_notebooks())}
        for name, problems in bad.items():
            print(f"{name}: " + ("; ".join(problems) if problems else "ok"))
        return 1 if any(bad.values()) else 0
    return 0


def sweep_notebook(args) -> int:
    """hostnet sweep NOTEBOOK.ipynb -f params.yaml --mode replay|run: the notebook once per grid
    point, serially; replay selects recorded points, run measures each live (sweeps.sweep_plan)."""
    if not args.file:
        die("a notebook sweep needs -f params.yaml (grid: {name: [values]}, parameters: {...}, profile: quick)")
    if not args.mode:
        die("a notebook sweep needs --mode replay (select recorded points) or --mode run (measure each live)")
    # lazy: a notebook sweep loads papermill and pandas (1.5 s); sweep --help and the refusals do without
    from ..notebook import batch, sweeps
    spec = sweeps.load_sweep_file(args.file)
    name = args.profile or spec["profile"]
    if args.testbed:  # every point on it, as the notebook's own `testbed` parameter would say
        spec["parameters"] = {**spec["parameters"], "testbed": testbed_spec(args)}
    where = dict(runs_dir=Path(args.runs_dir), mode=args.mode,
                 output_dir=Path(args.output_dir) if args.output_dir else None)
    plan = sweeps.sweep_plan(Path(args.spec), spec["grid"], spec["parameters"], name, **where)
    if args.dry_run:
        for entry in plan:
            print(f"{entry['dir']}: {json.dumps(entry['parameters'])}")
        return 0
    if args.mode == "run":
        live_edge.require_live()
        hand_to_kernels(args)
    try:
        done = sweeps.sweep_notebook(Path(args.spec), spec["grid"], spec["parameters"], name, **where)
    except batch.NotebookExecutionError as exc:
        die(str(exc))
    for entry in done:
        print(f"{entry['point']}: {entry['executed']} ({entry['seconds']} s)")
    if done:
        print(f"every point's summary: {done[0]['table']}")
    return 0
