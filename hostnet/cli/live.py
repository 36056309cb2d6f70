"""`hostnet run` (configurations on a testbed, a summary of each run) and `hostnet sweep` (a declared
experiment or a sweep spec; a notebook over a grid is notebooks.sweep_notebook's)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from . import commands, live_edge
from .edge import die, runs_dir_option
from .live_edge import fresh_shape, live_options, reconnect_flag, steering_option, testbed_spec
from .notebooks import sweep_notebook
from .. import store, testbed
from ..measure import config as stackconfig, declarations
from ..measure.options import PROFILES


SPEC_FLAGS = ("repetitions", "duration", "warmup", "seed")


def register(sub) -> None:
    """run and sweep: the commands that measure."""
    r = commands.add(sub, "run")
    r.add_argument("experiment", choices=declarations.RUN_WORKLOADS, help="the traffic pattern (the paper's Fig. 2)")
    r.add_argument("--flows", type=int, default=1, help="n: flows (one-to-one, incast, outcast) or n x n (all-to-all)")
    r.add_argument("--senders", type=int, default=1, help="sender namespaces of a fresh testbed (bridge when > 1)")
    r.add_argument("--receivers", type=int, default=1, help="receiver namespaces of a fresh testbed")
    r.add_argument("--ssh", action="store_true", help="drive a fresh testbed's endpoints over SSH (sshd per namespace)")
    r.add_argument("--config", nargs="+", default=["all-opts"], metavar="NAME",
                   help=f"one or more of: {', '.join(stackconfig.CONFIGS)}")
    r.add_argument("--duration", type=int, default=5, help="measured seconds per point")
    r.add_argument("--warmup", type=int, default=2, help="seconds excluded before the window")
    r.add_argument("--repetitions", type=int, default=1)
    r.add_argument("--testbed", help="embedded (a fresh one, the default), the name of one that is up (hostnet "
                                     "testbed up), or a testbed.yaml of servers")
    runs_dir_option(r)
    r.add_argument("--campaign", help="campaign directory name (default: timestamp-experiment-testbed)")
    r.add_argument("--perf-freq", type=int, default=999, help="perf sampling frequency, Hz")
    r.add_argument("--cc", default="cubic", help="TCP congestion control (the paper's default: cubic)")
    r.add_argument("--rate-mbps", type=int, default=0, metavar="MBPS",
                   help="pace each long flow at this many Mbit/s (iperf3 -b; 0, the default: unpaced). A slow "
                        "testbed's harness needs CPU of its own (the NIC rehearsal: docs/nic-rehearsal.md)")
    r.add_argument("--rpc-size", type=int, metavar="BYTES",
                   help="short flows: ping-pong RPCs of this request/response size instead of long flows")
    r.add_argument("--rpc-tool", choices=("auto", "netperf", "sockperf"), default="auto",
                   help="auto: netperf where installed (make netperf), else sockperf")
    r.add_argument("--quiet", action="store_true", help="no progress line per point")
    reconnect_flag(r)
    steering_option(r)
    r.set_defaults(func=cmd_run)

    w = commands.add(sub, "sweep")
    w.add_argument("spec", help="a declared sweep's name (rx-buffer: hostnet/sweeps/rx-buffer.yaml), a sweep "
                                "YAML (experiment, configs, grid, repetitions, duration, ...), or a notebook (.ipynb)")
    w.add_argument("--config", nargs="+", help="sweep specs: these configs instead of the spec's")
    for flag in SPEC_FLAGS:
        w.add_argument(f"--{flag}", type=int, help=f"sweep specs: this {flag} instead of the spec's")
    w.add_argument("-f", "--file", help="notebook sweeps: params.yaml with grid, parameters, profile")
    w.add_argument("--mode", choices=("replay", "run"),
                   help="notebook sweeps (required): replay selects recorded points, run measures each live")
    w.add_argument("--profile", choices=tuple(PROFILES),
                   help="notebook sweeps, run mode: overrides params.yaml's profile (default quick)")
    w.add_argument("--output-dir", help="notebook sweeps, replay: where each point's notebook and figures go "
                                        "(default ./hostnet-sweeps/<time>-<notebook>)")
    w.add_argument("--dry-run", action="store_true", help="notebook sweeps: print where each point goes and "
                                                          "its parameters, run nothing")
    w.add_argument("--campaign", help="resume this campaign (default: a new one)")
    runs_dir_option(w, "where campaigns are written")
    w.add_argument("--senders", type=int, default=1, help="sender namespaces (a bridge joins more than two hosts)")
    w.add_argument("--receivers", type=int, default=1, help="receiver namespaces")
    w.add_argument("--ssh", action="store_true", help="an sshd in each namespace; endpoints driven through SSH")
    w.add_argument("--testbed", help="sweep specs: embedded (a fresh one, the default), the name of one that is "
                                     "up, or a testbed.yaml of servers")
    w.add_argument("--quiet", action="store_true", help="no progress line per point")
    reconnect_flag(w)
    steering_option(w)
    w.set_defaults(func=cmd_sweep)


def cmd_run(args) -> int:
    try:
        for c in args.config:
            stackconfig.get_config(c, congestion_control=args.cc)
        if args.duration <= 0 or args.warmup < 0 or args.repetitions < 1 or not args.reconnect_wait >= 0:
            raise ValueError("duration must be > 0 s, warm-up >= 0 s, repetitions >= 1 and --reconnect-wait >= 0 s")
    except ValueError as exc:
        die(str(exc))
    if args.experiment == "single-flow" and args.flows != 1:
        die("single-flow has one flow; use one-to-one, incast, outcast or all-to-all for more")
    # lazy: the run summary reads tidy tables with pandas (0.7 s); run --help and the refusals above do without
    from ..analysis import run_summary
    # lazy: the measuring floor (runner, probes, SSH) costs 1 s more, which the same answers do without
    from ..measure.sweep import SweepSpec, run_configs
    try:  # built once: checked here, run as it is
        sweep_spec = SweepSpec.of_configs(
            args.config, flows=args.flows, rpc_size=args.rpc_size, congestion_control=args.cc, rate_mbps=args.rate_mbps,
            workload=args.experiment, repetitions=args.repetitions, duration=args.duration, warmup=args.warmup,
            perf_freq_hz=args.perf_freq, rpc_tool=args.rpc_tool)
    except ValueError as exc:
        die(str(exc))
    tools = ("sockperf",) if args.rpc_size and args.rpc_tool != "netperf" else (
        ("netperf",) if args.rpc_size else ("iperf3",))
    if args.rpc_size and args.rpc_tool == "auto":
        tools = ()  # chosen by capability once the testbed is up
    spec = testbed_spec(args)
    if not testbed.session.is_file(spec):  # servers need nothing here: their tools are checked on them
        live_edge.require_live(("ip", "perf", "ethtool") + tools + (("sshd", "nc") if args.ssh else ()))
    shape = fresh_shape(args, spec)
    # a testbed that is up stays up and gets its settings back; a failed restore exits 2 (main)
    with testbed.using(spec, prefix="r", steering=live_options(args).steering, **shape) as tb:
        campaign = args.campaign or store.new_campaign_id(args.experiment, tb.kind)
        runs = run_configs(tb, sweep_spec, runs_dir=args.runs_dir, campaign=campaign, progress=not args.quiet,
                           reconnect_wait_s=args.reconnect_wait)
    print(run_summary.text(runs))
    return 0 if runs else 1


def cmd_sweep(args) -> int:
    if args.spec.endswith(".ipynb"):
        if given := [f"--{f}" for f in ("config", *SPEC_FLAGS) if getattr(args, f, None) is not None]:
            die(f"{', '.join(given)}: for sweep specs; a notebook sweep takes its parameters from -f params.yaml")
        return sweep_notebook(args)
    if args.mode or args.output_dir:
        die("--mode and --output-dir are for notebook sweeps; a sweep spec always measures live")
    if _declared_name(args.spec):  # an undeclared name is refused before the measuring code loads
        try:
            declarations.declaration(args.spec)
        except declarations.UndeclaredSweep as exc:
            die(str(exc))
    # lazy: the measuring floor (runner, probes, pandas: 1 s); sweep --help and an undeclared name do without
    from ..measure.sweep import SweepError, SweepSpec, declared, run_sweep
    try:  # a declared sweep (sweep.declared) or a spec file, with --config and SPEC_FLAGS over it
        changes = {k: getattr(args, k) for k in SPEC_FLAGS if getattr(args, k, None) is not None}
        if args.config:
            changes["configs"] = list(args.config)
        if _declared_name(args.spec):
            spec = declared(args.spec, **changes)
        else:
            spec = SweepSpec.from_yaml(Path(args.spec))
            spec = replace(spec, **changes) if changes else spec
        if not args.reconnect_wait >= 0:
            raise ValueError("--reconnect-wait must be >= 0 s")
    except (SweepError, ValueError) as exc:
        die(str(exc))
    where = testbed_spec(args)
    if not testbed.session.is_file(where):
        live_edge.require_live()
    with testbed.using(where, prefix="s", steering=live_options(args).steering, **fresh_shape(args, where)) as tb:
        # named after the declaration asked for (short-flows, zero-copy), else what the spec stores as
        stem = args.spec if _declared_name(args.spec) else spec.stored_as
        campaign = args.campaign or store.new_campaign_id(stem, tb.kind)
        out = run_sweep(tb, spec, runs_dir=args.runs_dir, campaign=campaign, progress=not args.quiet,
                        reconnect_wait_s=args.reconnect_wait)
    print(f"sweep {campaign}: {out['ran']} ran, {out['skipped']} already done, {out['failed']} failed; "
          f"runs in {out['campaign_dir']}")
    print(f"resume with: hostnet sweep {args.spec} --campaign {campaign}"
          + (f" --testbed {args.testbed}" if where not in testbed.session.FRESH else ""))
    return 0 if not out["failed"] else 1


def _declared_name(spec: str) -> bool:
    """`hostnet sweep SPEC` names a declared sweep (hostnet/sweeps/SPEC.yaml), not a file."""
    return not Path(spec).suffix and "/" not in spec
