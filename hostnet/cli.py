"""`hostnet`: build testbeds and measure (testbed, run, sweep, top-up, receive-path), read stored runs
and profiles (breakdown, flamegraph, compare, rederive, seal), pack or unpack runs' raw files (data),
regenerate figures and notebooks (figures, notebooks), and undo what a crashed session left (restore)."""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import signal
import sys
from pathlib import Path
from .analysis import flags


# experiment name -> traffic pattern
EXPERIMENTS = {"single-flow": "single", "one-to-one": "one-to-one", "incast": "incast", "outcast": "outcast",
               "all-to-all": "all-to-all"}


PARTLY_LOADED_PCT = 90.0


def cpu_accounting_note(manifest: dict, busy_pct: dict[str, float]) -> str:
    """A warning when a side was partly loaded and its utilisation came from tick-sampled busy
    fields on a tick-accounted kernel: it may read low, and tpc high (capabilities.cpu_accounting).
    Runs that kept their /proc/stat snapshot times use wall minus idle instead, which has no such bias."""
    if "wall-minus-idle" in manifest.get("cpu_util_method", {}).values():
        return ""
    ticks = sorted({v.get("cpu_accounting", "") for v in manifest.get("versions", {}).values()
                    if v.get("cpu_accounting", "").startswith("tick")})
    partly = [s for s, pct in busy_pct.items() if pct < PARTLY_LOADED_PCT]
    if not ticks or not partly:
        return ""
    return (f"{' and '.join(partly)} CPU below {PARTLY_LOADED_PCT:.0f} % with {ticks[0]} CPU accounting: "
            "bursts between ticks are not counted, so utilisation may read low and tpc high")


def _die(msg: str) -> None:
    print(f"hostnet: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _require_live(tools=("ip", "iperf3", "perf", "ethtool")) -> None:
    from .hosts import LocalHost
    if os.geteuid() != 0:
        _die("live runs build network namespaces and need root; run as root")
    local = LocalHost()
    missing = [t for t in tools if not local.which(t)]
    if missing:
        _die(f"missing {', '.join(missing)}; run `make install` (Debian packages iperf3 linux-perf ethtool iproute2)")


def _unanswered(caps_by_host: dict) -> int:
    """1 when a host did not answer (each named with its reason on stderr, one line), else 0."""
    lost = {h: c["reachable"].detail for h, c in caps_by_host.items() if c.get("reachable") and not c["reachable"].ok}
    for host, why in lost.items():
        print(f"hostnet: {host} is not reachable: {' '.join(str(why).split())}", file=sys.stderr)
    return 1 if lost else 0


def _check(args) -> int:
    from . import testbed
    from .testbed import capabilities
    if args.file:
        from .testbed.servers import from_yaml
        tb = from_yaml(args.file)
        caps = {e.host.name: capabilities.detect(e.host, e.iface) for e in tb.endpoints.values()}
        print(capabilities.table(caps))
        return _unanswered(caps)
    _require_live(("ip",))

    def show(tb):
        caps = {e.role: capabilities.detect(e.host, e.iface) for e in tb.endpoints.values()}
        caps["root namespace"] = capabilities.detect(tb.machines["local"])
        print(f"testbed {tb.name}: {'; '.join(tb.notes)}")
        print(capabilities.table(caps))
    if args.name in {r["name"] for r in testbed.status()}:
        show(testbed.attach(args.name))
    else:  # nothing up under that name: check a temporary one
        with testbed.embedded(testbed.unique_name("c"), ssh=args.ssh) as tb:
            show(tb)
    return 0


def cmd_testbed(args) -> int:
    from . import testbed
    if args.action == "check":
        return _check(args)
    from .testbed import guests
    if args.nic or args.iommu or args.action == "down" and guests.has_state(args.name):
        return _guests(args)
    if args.action == "up":
        if (args.write_yaml or args.bastion) and not args.ssh:
            _die("--write-yaml and --bastion describe the testbed as servers reached over SSH: add --ssh")
        if args.write_yaml and not args.bastion:  # refused here, not by the first run that reads the file
            _die("--write-yaml needs --bastion: without a management network the SSH sessions reach each "
                 "namespace over its data interface, which hostnet never changes (knobs/guard.py), so no run "
                 "could use the testbed.yaml")
        _require_live(("ip",))
        tb = testbed.up(args.name, args.sender_cpus, args.receiver_cpus, persistent=True,
                        n_senders=args.senders, n_receivers=args.receivers, ssh=args.ssh, bastion=args.bastion,
                        steering=_live(args).steering)
        print(f"testbed {tb.name} is up ({'; '.join(tb.notes)}):")
        for e in tb.endpoints.values():
            print(f"  {e.role:<10} {e.ip:<13} {e.ip6 or '':<11} {e.iface:<14} CPUs {e.cpus}  "
                  f"via {e.host.describe()['kind']}")
        if args.write_yaml:
            from .testbed import as_servers
            try:
                path, conf = as_servers.write(args.name, args.write_yaml)
            except BaseException:
                testbed.down(args.name)  # a testbed the user cannot use as asked is not left up
                raise
            print(f"as servers: {path} (ssh_config {conf}); e.g. hostnet run single-flow --testbed {path}")
    elif args.action == "status":
        rows = testbed.status() + guests.status()
        if not rows:
            print("no embedded testbed and no NIC rehearsal is up")
        for r in rows:
            print(json.dumps(r))
    else:
        problems = testbed.down(args.name)
        if problems:
            _die("teardown problems: " + "; ".join(problems))
        print(f"testbed {args.name} is down; every journaled setting restored")
    return 0


def _guests(args) -> int:
    """`testbed up --nic` and the guests' status and down (testbed/guests.py: the NIC rehearsal)."""
    from .testbed import guests
    if args.action == "up":
        if not args.nic:
            _die("--iommu needs --nic e1000e, virtio or e1000")
        if args.ssh or args.bastion or args.senders != 1 or args.receivers != 1:
            _die("--nic boots two guests reached over SSH: --ssh, --bastion, --senders and --receivers do not apply")
        try:
            path = guests.up(args.name, args.nic, args.iommu, yaml_path=args.write_yaml)
        except guests.GuestsUnsupported as exc:
            _die(f"unsupported: {exc}")
        st = guests.state_of(args.name)
        print(f"NIC rehearsal {args.name} is up in {st['boot_s']} s: two guests with {args.nic}"
              f"{' behind an IOMMU' if args.iommu else ''} (Linux {st['kernel']}; {st['accel']})")
        print(f"  {guests.LABEL}")
        print(f"as servers: {path}; e.g. hostnet run single-flow --testbed {path}")
        return 0
    if args.action != "down":
        _die(f"testbed {args.action} does not take --nic or --iommu")
    problems = guests.down(args.name)
    if problems:
        _die("teardown problems: " + "; ".join(problems))
    print(f"NIC rehearsal {args.name} is down; every journaled setting restored")
    return 0


def _print_summary(runs: list[Path]) -> None:
    from . import store
    from .analysis import metrics
    if not runs:
        print("no run succeeded")
        return
    for run in runs:
        m = store.load_manifest(run)
        print(f"\n{m['config_label']} (repetition {m['repetition']}): status {m['status']}"
              + (f"  [FLAGGED: {flags.flagged(m)}]" if m["status"] == "ok" and flags.flagged(m) else ""))
        if m["status"] != "ok":
            print(f"  error: {m.get('error')}")
            print(f"  run directory: {run}")
            continue
        t = store.read_tidy(run)

        def v(metric, side, t=t):
            return float(t[(t.metric == metric) & (t.side == side)].value.iloc[0])
        print(f"  throughput        {v('throughput_gbps', 'both'):7.2f} Gbit/s  ({m['cores']})")
        flows = t[t.metric == "flow_throughput_gbps"]
        if len(flows) > 1:
            print("  per flow          " + ", ".join(f"#{r.flow} {r.value:.2f}" for r in flows.itertuples()))
        rpc = t[t.metric == "transactions_per_s"]
        if len(rpc):
            p99 = t[t.metric == "flow_latency_p99_usec"].value
            print(f"  RPCs              {rpc.value.iloc[0]:9.0f} /s ({m['workload']['tool']}, "
                  f"{m['workload']['size_bytes']} B), p99 latency {p99.max():.0f} us (worst flow)")
        print(f"  CPU sender        {v('cpu_util_pct', 'sender'):7.1f} %   receiver "
              f"{v('cpu_util_pct', 'receiver'):6.1f} %  (bottleneck: {m['bottleneck']})")
        print(f"  throughput/core   {v('tpc_gbps', 'both'):7.2f} Gbit/s")
        note = cpu_accounting_note(m, {s: v("cpu_util_pct", s) for s in ("sender", "receiver")})
        if note:
            print(f"  caution           {note}")
        for side in ("sender", "receiver"):
            top = metrics.top_categories(t, m["config"]["name"], side, 3)
            print(f"  top {side:<9}    " + ", ".join(f"{c} {p:.1f}%" for c, p in top))
        print(f"  foreign load      {m['load'][next(iter(m['load']))]['foreign_cpu_pct']:7.1f} % of a core")
        if "steal_pct" in m:  # the hypervisor's: neither the stack's CPU nor idle
            print("  steal             " + ", ".join(f"{s} {p:.1f} %" for s, p in m["steal_pct"].items()))
        print(f"  run directory: {run}")
    print("\nnote: without a hardware PMU perf samples on cpu-clock; the top categories attribute samples taken "
          "where interrupts come back on through their call chains (docs/measurement.md).")


def cmd_run(args) -> int:
    from . import store, testbed
    from .measure import config as stackconfig
    from .measure.sweep import run_configs
    try:
        for c in args.config:
            stackconfig.get_config(c, congestion_control=args.cc)
        if args.duration <= 0 or args.warmup < 0 or args.repetitions < 1 or not args.reconnect_wait >= 0:
            raise ValueError("duration must be > 0 s, warm-up >= 0 s, repetitions >= 1 and --reconnect-wait >= 0 s")
    except ValueError as exc:
        _die(str(exc))
    pattern = EXPERIMENTS[args.experiment]
    if pattern == "single" and args.flows != 1:
        _die("single-flow has one flow; use one-to-one, incast, outcast or all-to-all for more")
    try:  # built once: checked here, run as it is
        from .measure.sweep import SweepSpec
        sweep_spec = SweepSpec.of_configs(
            args.config, flows=args.flows, rpc_size=args.rpc_size, congestion_control=args.cc, rate_mbps=args.rate_mbps,
            experiment=args.experiment, repetitions=args.repetitions, duration=args.duration, warmup=args.warmup,
            perf_freq_hz=args.perf_freq, rpc_tool=args.rpc_tool)
    except ValueError as exc:
        _die(str(exc))
    tools = ("sockperf",) if args.rpc_size and args.rpc_tool != "netperf" else (
        ("netperf",) if args.rpc_size else ("iperf3",))
    if args.rpc_size and args.rpc_tool == "auto":
        tools = ()  # chosen by capability once the testbed is up
    spec = _testbed_spec(args)
    if not testbed.session.is_file(spec):  # servers need nothing here: their tools are checked on them
        _require_live(("ip", "perf", "ethtool") + tools + (("sshd", "nc") if args.ssh else ()))
    shape = _fresh_shape(args, spec)
    # a testbed that is up stays up and gets its settings back; a failed restore exits 2 (main)
    with testbed.using(spec, prefix="r", steering=_live(args).steering, **shape) as tb:
        campaign = args.campaign or store.new_campaign_id(args.experiment, tb.kind)
        runs = run_configs(tb, sweep_spec, runs_dir=args.runs_dir, campaign=campaign, progress=not args.quiet,
                           reconnect_wait_s=args.reconnect_wait)
    _print_summary(runs)
    return 0 if runs else 1


def cmd_sweep(args) -> int:
    if args.spec.endswith(".ipynb"):
        if given := [f"--{f}" for f in ("config", *SPEC_FLAGS) if getattr(args, f, None) is not None]:
            _die(f"{', '.join(given)}: for sweep specs; a notebook sweep takes its parameters from -f params.yaml")
        return _sweep_notebook(args)
    if args.mode or args.output_dir:
        _die("--mode and --output-dir are for notebook sweeps; a sweep spec always measures live")
    declaration = _declaration(args.spec)  # an undeclared name is refused before the measuring code loads
    from .measure.sweep import SweepError, run_sweep
    try:
        spec = _sweep_spec(args, declaration)
        if not args.reconnect_wait >= 0:
            raise ValueError("--reconnect-wait must be >= 0 s")
    except (SweepError, ValueError) as exc:
        _die(str(exc))
    from . import store, testbed
    where = _testbed_spec(args)
    if not testbed.session.is_file(where):
        _require_live()
    with testbed.using(where, prefix="s", steering=_live(args).steering, **_fresh_shape(args, where)) as tb:
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


SPEC_FLAGS = ("repetitions", "duration", "warmup", "seed")


def _reconnect_flag(parser) -> None:
    from .hosts import RECONNECT_WAIT_S
    parser.add_argument("--reconnect-wait", type=float, default=RECONNECT_WAIT_S, metavar="SECONDS",
                        help=f"how long a host that stopped answering mid-campaign is waited for before the "
                             f"campaign stops, its settings left journaled (default {RECONNECT_WAIT_S:g})")


def _declared_name(spec: str) -> bool:
    """`hostnet sweep SPEC` names a declared experiment (hostnet/sweeps/SPEC.yaml), not a file."""
    return not Path(spec).suffix and "/" not in spec


def _declaration(spec: str) -> Path:
    """The file `hostnet sweep SPEC` reads: hostnet/sweeps/SPEC.yaml for a declared experiment's
    name (an undeclared one refused, naming those there are), else SPEC itself."""
    from . import project
    if not _declared_name(spec):
        return Path(spec)
    names = sorted(p.stem for p in project.packaged("sweeps").glob("*.yaml"))
    if spec not in names:
        _die(f"{spec}: no declared experiment of that name (declared: {', '.join(names)}); or name a sweep spec file")
    return project.packaged("sweeps") / f"{spec}.yaml"


def _sweep_spec(args, declaration: Path):
    """The sweep `hostnet sweep SPEC` runs: its declaration (_declaration) with
    --config/--repetitions/--duration/--warmup/--seed over it."""
    from dataclasses import replace
    from .measure.sweep import SweepSpec
    changes = {k: getattr(args, k) for k in SPEC_FLAGS if getattr(args, k, None) is not None}
    if getattr(args, "config", None):
        changes["configs"] = list(args.config)
    spec = SweepSpec.from_yaml(declaration)
    return replace(spec, **changes) if changes else spec


def _testbed_spec(args) -> str:
    """--testbed as every command spells it: "embedded" (a fresh one, torn down after; the default),
    the name of an embedded testbed that is up, or a testbed.yaml path."""
    from . import testbed
    spec = args.testbed or "embedded"
    if testbed.session.is_file(spec) and not Path(spec).is_file():
        _die(f"--testbed {spec}: no such testbed.yaml")
    return spec


def _live(args):
    """The live options (measure/options.py): the environment's, with this command's --steering,
    --top-up-runs and --top-up-minutes over them; read here, at the edge, and passed down."""
    from .measure.options import LiveOptions
    return LiveOptions.from_environment(os.environ, steering=getattr(args, "steering", None),
                                        top_up_runs=getattr(args, "top_up_runs", None),
                                        top_up_minutes=getattr(args, "top_up_minutes", None))


def _hand_to_kernels(args) -> None:
    """The notebook kernels this command starts read the live options at their start (notebook.start):
    they get them through their environment, the one way into a kernel papermill starts."""
    os.environ.update(_live(args).environment())


def _fresh_shape(args, spec: str) -> dict:
    """--senders/--receivers/--ssh shape a fresh embedded testbed; with one that exists they are an error."""
    from . import testbed
    shape = {"n_senders": args.senders, "n_receivers": args.receivers, "ssh": args.ssh}
    if spec in testbed.session.FRESH:
        return shape
    given = [f"--{k.removeprefix('n_')}" for k, v in shape.items() if v not in (1, False)]
    if given:
        _die(f"{', '.join(given)} shape a fresh embedded testbed; --testbed {spec} is already built")
    return {}


def _sweep_notebook(args) -> int:
    """hostnet sweep NOTEBOOK.ipynb -f params.yaml --mode replay|run: the notebook once per grid
    point, serially; replay selects recorded points, run measures each live (batch.sweep_plan)."""
    from .notebook.batch import NotebookExecutionError, load_sweep_file, sweep_notebook, sweep_plan
    if not args.file:
        _die("a notebook sweep needs -f params.yaml (grid: {name: [values]}, parameters: {...}, profile: quick)")
    if not args.mode:
        _die("a notebook sweep needs --mode replay (select recorded points) or --mode run (measure each live)")
    spec = load_sweep_file(args.file)
    name = args.profile or spec["profile"]
    if args.testbed:  # every point on it, as the notebook's own `testbed` parameter would say
        spec["parameters"] = {**spec["parameters"], "testbed": _testbed_spec(args)}
    where = dict(runs_dir=Path(args.runs_dir), mode=args.mode,
                 output_dir=Path(args.output_dir) if args.output_dir else None)
    plan = sweep_plan(Path(args.spec), spec["grid"], spec["parameters"], name, **where)
    if args.dry_run:
        for entry in plan:
            print(f"{entry['dir']}: {json.dumps(entry['parameters'])}")
        return 0
    if args.mode == "run":
        _require_live()
        _hand_to_kernels(args)
    try:
        done = sweep_notebook(Path(args.spec), spec["grid"], spec["parameters"], name, **where)
    except NotebookExecutionError as exc:
        _die(str(exc))
    for entry in done:
        print(f"{entry['point']}: {entry['executed']} ({entry['seconds']} s)")
    if done:
        print(f"every point's summary: {done[0]['table']}")
    return 0


def cmd_notebooks(args) -> int:
    from .notebook import batch
    paths = [Path(p) for p in args.notebooks] or None
    if args.action == "store-outputs":
        for p in batch.store_outputs(paths):
            print(f"outputs stored in {p}")
    elif args.action == "strip-outputs":
        for p in batch.strip_outputs(paths):
            print(f"outputs removed from {p}")
    else:
        bad = {nb.name: batch.check_conventions(nb) for nb in (paths or batch.section_notebooks())}
        for name, problems in bad.items():
            print(f"{name}: " + ("; ".join(problems) if problems else "ok"))
        return 1 if any(bad.values()) else 0
    return 0


def cmd_breakdown(args) -> int:
    """The paper's breakdown of any perf profile: perf.data, perf script, perf report or folded stacks."""
    where = Path(args.file).parent
    if not Path(args.file).exists():  # said before the analysis code loads
        if where.name == "raw":  # store.RAW_DIR; store (and pandas) imported only then
            from . import store
            if store.is_packed(where.parent):
                _die(f"{args.file}: the run's raw files are packed; `hostnet data unpack {where.parent}` writes its "
                     f"raw/ first")
        _die(f"{args.file}: no such file")
    from .hosts import HostError
    from .analysis import profiles
    from .parsers import ParseError
    try:
        profile, results, series, series_from = profiles.analyse(
            args.file, cpus=args.cpus, comms=args.comm, kthreads=args.kthreads, series=args.series,
            embedded=args.embedded, event=args.event)
        if args.flamegraph:
            cpus = sorted({c for r in results for c in r["cpus"]})
            from .charts.profiles import flamegraph
            written = Path(flamegraph(profile, cpus, args.flamegraph))
            shown = (written if written.suffix == ".html"
                     else f"{written.with_suffix('.svg')} and {written.with_suffix('.png')}")
            print(f"flame graph written to {shown}", file=sys.stderr)
    except (ParseError, ValueError, OSError, HostError) as exc:
        _die(str(exc))
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
        _die(f"{run}: not a run directory (no manifest.json)")
    from .sections.explore import flamegraph, flamegraph_page
    # into the working directory: a run directory is recorded data, not a place for derived files
    out = Path(args.output or f"flamegraph-{run.resolve().name}-{args.side}.html")
    if out.suffix == ".html":  # interactive (d3-flame-graph inlined: opens offline)
        out.write_text(flamegraph_page(run, args.side))
        print(f"flame graph written to {out}")
    else:  # a static icicle chart: .svg or .png
        from .charts.plots import save
        save(flamegraph(run, args.side), out.with_suffix(""))
        print(f"icicle chart written to {out.with_suffix('.svg')} and {out.with_suffix('.png')}")
    return 0


def cmd_compare(args) -> int:
    from .analysis.compare import compare, format_comparison
    m = compare(args.runs_dir, args.a, args.b)
    if args.csv:
        print(m.to_csv(index=False), end="")
    elif args.json:
        print(json.dumps({**m.attrs, "rows": json.loads(m.to_json(orient="records"))}, indent=1))
    else:
        print(format_comparison(m))
    return 0


def cmd_restore(args) -> int:
    """Undo what crashed or killed sessions left behind (processes, settings, namespaces)."""
    from . import testbed
    if args.file:
        from .knobs.journal_file import HOST_DIR
        from .testbed.servers import restore as restore_servers
        problems, sources = restore_servers(args.file)
        if problems:
            _die("; ".join(problems))
        if not sources:
            print(f"hostnet: warning: no journal of {args.file} found (neither in {testbed.state_dir()} nor in "
                  f"{HOST_DIR} on its hosts): no setting was put back", file=sys.stderr)
            return 1
        print(f"restored {args.file} from {' and '.join(sources)}: hostnet's processes stopped, journaled "
              f"settings put back")
        return 0
    names = [args.name] if args.name else testbed.stale()
    held = _held_elsewhere()
    crumbs = _remove_crumbs()
    if not names:
        print("nothing to restore: no testbed was left behind by a dead session" + crumbs + held)
        return 0
    from .testbed.leftovers import is_servers
    failed = []
    for name in names:
        servers = is_servers(name)
        problems = testbed.restore(name)
        if problems:
            failed.append(f"{name}: " + "; ".join(problems))
        elif servers:
            print(f"restored {name}: journaled settings put back on its servers (stop hostnet's processes "
                  f"there with `hostnet restore --file` and its testbed.yaml)")
        else:
            kept = " (persistent testbed kept up)" if testbed.is_persistent(name) else ""
            print(f"restored {name}: processes stopped, journaled settings put back{kept}")
    if crumbs:
        print(crumbs.lstrip("; "))
    if failed:
        _die(" | ".join(failed))
    if held := _held_elsewhere():
        print(held.lstrip("; "))
    return 0


def _remove_crumbs() -> str:
    """Scratch files dead sessions left (tool output, perf.data), removed; what was removed."""
    from .hosts.base import remove_dead_scratch
    count, size = remove_dead_scratch()
    return f"; removed {count} scratch files of dead sessions ({size / 1e6:.1f} MB)" if count else ""


def _held_elsewhere() -> str:
    """Host-wide settings live testbeds hold (knobs/machine.py), which a restore leaves in place."""
    from . import testbed
    from .knobs.machine import Ledger
    held = [f"{e['knob']}[{e['key']}] = {v!r} by {Path(j).stem}"
            for e in Ledger(fallback=testbed.state_dir()).held() for j, v in e["holders"].items()]
    return ("; host-wide settings held by live testbeds, left as they are until the last lets go: "
            + ", ".join(held)) if held else ""


def cmd_figures(args) -> int:
    from .notebook.batch import NotebookExecutionError, Places, run_notebooks
    if args.testbed and args.mode != "run":
        _die("--testbed names what run mode measures on; replay reads recorded campaigns")
    if args.jobs is not None and (args.jobs < 1 or (args.mode == "run" and args.jobs != 1)):
        _die(f"--jobs {args.jobs}: replay takes 1 or more; run mode executes one notebook at a time "
             f"(side by side they would load each other's measurements)")
    if args.mode == "run":
        _require_live()
        _hand_to_kernels(args)
    try:
        places = Places(runs_dir=Path(args.runs_dir) if args.runs_dir else None,
                        figures_dir=Path(args.figures_dir) if args.figures_dir else None)
        out = run_notebooks(mode=args.mode, places=places, profile_name="quick" if args.quick else args.profile,
                            duration=args.duration, repetitions=args.repetitions,
                            testbed=_testbed_spec(args) if args.testbed else None, jobs=args.jobs)
    except NotebookExecutionError as exc:
        _die(str(exc))
    print(f"figures written; report: {out}")
    return 0


def parser() -> argparse.ArgumentParser:
    from . import __version__, project
    p = argparse.ArgumentParser(prog="hostnet", description=__doc__)
    p.add_argument("--version", action="version", version=f"hostnet {__version__}")
    p.add_argument("--root", help=f"the project root: where notebooks/, figures/ and data/ are (default: "
                                  f"${project.ENV}, else the nearest directory at or above the working directory "
                                  f"holding data/runs/, else the working directory)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more diagnostics on stderr (-v: debug); progress lines are shown by default")
    p.add_argument("--log-quiet", action="store_true", help="only warnings and errors on stderr")
    sub = p.add_subparsers(dest="command", required=True)
    _live_commands(sub)
    _data_commands(sub)
    _study_commands(sub)
    return p


def _live_commands(sub) -> None:
    """testbed, run, sweep: the commands that build testbeds and measure."""
    from .measure import config as stackconfig
    from .notebook.batch import PROFILES
    t = sub.add_parser("testbed", help="build, inspect or remove the embedded testbed")
    t.add_argument("action", choices=("up", "status", "down", "check"))
    t.add_argument("file", nargs="?", help="check: a testbed.yaml of real servers (default: the embedded testbed)")
    t.add_argument("--name", default="default", help="1-8 lowercase letters/digits (default: default)")
    t.add_argument("--sender-cpus", type=int, nargs="+", default=[0])
    t.add_argument("--receiver-cpus", type=int, nargs="+", default=[1])
    t.add_argument("--senders", type=int, default=1, help="sender namespaces (a bridge joins more than two hosts)")
    t.add_argument("--receivers", type=int, default=1, help="receiver namespaces")
    t.add_argument("--ssh", action="store_true", help="an sshd in each namespace; endpoints driven through SSH")
    t.add_argument("--bastion", action="store_true", help="with --ssh: a jump host namespace and a management "
                                                          "network; --write-yaml then reaches the endpoints through it")
    t.add_argument("--write-yaml", metavar="PATH", help="with --ssh --bastion: write a testbed.yaml (and PATH's "
                                                        ".ssh_config): the testbed as servers reached over SSH; "
                                                        "with --nic: where the guests' testbed.yaml goes")
    t.add_argument("--nic", choices=("e1000e", "virtio", "e1000"), help="the NIC rehearsal: two QEMU guests with this "
                   "emulated NIC, driven over SSH through a testbed.yaml (functional only, never a measurement)")
    t.add_argument("--iommu", action="store_true", help="with --nic: the guests' NIC behind an emulated Intel IOMMU")
    _steering_option(t)
    t.set_defaults(func=cmd_testbed)

    r = sub.add_parser("run", help="run an experiment on the embedded testbed")
    r.add_argument("experiment", choices=list(EXPERIMENTS), help="the traffic pattern (the paper's Fig. 2)")
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
    _runs_dir_option(r)
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
    _reconnect_flag(r)
    _steering_option(r)
    r.set_defaults(func=cmd_run)

    w = sub.add_parser("sweep", help="run (or resume) a sweep spec (on --testbed; default a fresh embedded one), "
                                      "or sweep a notebook over a parameter grid (NOTEBOOK.ipynb -f params.yaml)")
    w.add_argument("spec", help="a declared experiment's name (rx-buffer: hostnet/sweeps/rx-buffer.yaml), a sweep "
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
    _runs_dir_option(w, "where campaigns are written")
    w.add_argument("--senders", type=int, default=1, help="sender namespaces (a bridge joins more than two hosts)")
    w.add_argument("--receivers", type=int, default=1, help="receiver namespaces")
    w.add_argument("--ssh", action="store_true", help="an sshd in each namespace; endpoints driven through SSH")
    w.add_argument("--testbed", help="sweep specs: embedded (a fresh one, the default), the name of one that is "
                                     "up, or a testbed.yaml of servers")
    w.add_argument("--quiet", action="store_true", help="no progress line per point")
    _reconnect_flag(w)
    _steering_option(w)
    w.set_defaults(func=cmd_sweep)


def _runs_dir_option(p: argparse.ArgumentParser, what: str = "where campaigns are") -> None:
    """--runs-dir as every command reads it: as given (relative to the working directory, as a shell
    path is), else data/runs in the project root (main: --root, $HOSTNET_ROOT, or the checkout the
    working directory is in), so a command works from any directory of the checkout."""
    p.add_argument("--runs-dir", help=f"{what} (default: data/runs in the project root)")


def _cpu_set(text: str) -> list[int]:
    """"1", "0,1", "0-3" -> CPU numbers."""
    out = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU set: {text!r} (e.g. 1, 0,1 or 0-3)") from None
    return sorted(set(out))


def _data_commands(sub) -> None:
    """breakdown, flamegraph, compare, restore, figures: reading stored runs and regenerating figures."""
    from .notebook.batch import PROFILES
    k = sub.add_parser("breakdown", help="the paper's CPU breakdown of a perf profile: perf.data, perf script, "
                                          "perf report --stdio or folded stacks (hostnet's or perf's own format)")
    k.add_argument("file", help="perf.data (perf is run on it), perf script or perf report --stdio text, folded "
                                "stacks, or a run's RUN/raw/MACHINE.perf_report.txt (its CPUs named sender/receiver; "
                                "`hostnet data unpack RUN` first)")
    # one value per flag, repeated for more: a list flag (nargs="+") swallowed the FILE after it
    k.add_argument("--cpus", type=_cpu_set, action="append", metavar="SET",
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

    g = sub.add_parser("flamegraph", help="an interactive flame graph (offline HTML) of a run's folded perf stacks")
    g.add_argument("run", help="a run directory")
    g.add_argument("--side", choices=("sender", "receiver"), default="receiver", help="whose CPU (default: receiver)")
    g.add_argument("-o", "--output", help=".html (interactive), .svg or .png (default: flamegraph-RUN-SIDE.html "
                                          "in the working directory)")
    g.set_defaults(func=cmd_flamegraph)

    c = sub.add_parser("compare", help="two campaigns side by side per point: tpc and category deltas with CIs")
    c.add_argument("a", help="the baseline campaign (a directory name under --runs-dir)")
    c.add_argument("b", help="the campaign compared with it, point by point")
    _runs_dir_option(c, "where both campaigns are")
    out = c.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="one row per point, metric and side (run counts, means, "
                                                        "B-A and its interval)")
    out.add_argument("--json", action="store_true", help="the same rows, with each campaign's usable and flagged runs")
    c.set_defaults(func=cmd_compare)

    s = sub.add_parser("restore", help="undo what a crashed or killed session left: processes, settings, "
                                        "namespaces (default: every testbed whose controller is dead)")
    s.add_argument("--name", help="only this testbed (also a persistent one, whose namespaces are kept)")
    s.add_argument("--file", help="a testbed.yaml of real servers: stop hostnet's processes there, restore settings")
    s.set_defaults(func=cmd_restore)

    f = sub.add_parser("figures", help="execute the notebooks with papermill and build figures/index.html")
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
    _steering_option(f)
    f.set_defaults(func=cmd_figures)


def _study_commands(sub) -> None:
    """receive-path, rederive, data, notebooks: studies of the testbed itself and upkeep of stored data."""
    from .testbed import steering
    p_ = sub.add_parser("receive-path", help="compare the embedded testbed's receive paths on the single-flow "
                                             "ladder (docs/receive-path.md)")
    p_.add_argument("--record", action="store_true", help="record one campaign per mode first (live)")
    p_.add_argument("--modes", nargs="+", choices=steering.EMBEDDED_MODES, default=list(steering.EMBEDDED_MODES))
    p_.add_argument("--campaign", nargs="+", metavar="MODE=CAMPAIGN", help="recorded campaigns to compare")
    p_.add_argument("--duration", type=int, default=5)
    p_.add_argument("--warmup", type=int, default=2)
    p_.add_argument("--repetitions", type=int, default=5)
    _runs_dir_option(p_)
    p_.set_defaults(func=cmd_receive_path)

    d = sub.add_parser("rederive", help="re-derive stored runs' CPU rows and breakdowns from their raw files under "
                                        "the current CPU rule, taxonomy and attribution rule (the manifest keeps the "
                                        "old versions)")
    d.add_argument("campaigns", nargs="+")
    _runs_dir_option(d)
    d.add_argument("--force", action="store_true", help="also runs already derived under the current rules: "
                                                        "their rows rebuilt from the raw files (says how many changed)")
    d.set_defaults(func=cmd_rederive)

    _pack_commands(sub)

    d = sub.add_parser("seal", help="record the sha256 of each ok run's tidy.csv (and row count) and raw.tar.xz in its "
                                    "manifest, for runs written before manifests carried them (a changed file is then "
                                    "refused)")
    d.add_argument("campaigns", nargs="+")
    _runs_dir_option(d)
    d.set_defaults(func=cmd_seal)

    t = sub.add_parser("top-up", help="more clean repetitions of exactly the points a campaign's inconclusive "
                                      "verdicts need, until decided or the budget is spent (live)")
    t.add_argument("notebook", help="the section notebook whose verdicts judge the campaign, e.g. 01-single-flow")
    t.add_argument("campaign")
    t.add_argument("--budget-runs", type=int, default=40)
    t.add_argument("--budget-minutes", type=float, default=15.0)
    _runs_dir_option(t)
    t.add_argument("--reference-dir", default="", help="the paper's reference numbers (default: shipped with hostnet)")
    t.add_argument("--testbed", default="", help="a testbed.yaml of real servers (default: an embedded testbed "
                                                 "shaped like the campaign's)")
    t.set_defaults(func=cmd_top_up)

    n = sub.add_parser("notebooks", help="store-outputs: execute notebooks in replay mode and keep their outputs "
                                         "(nbval compares them); strip-outputs; check: parameter conventions")
    n.add_argument("action", choices=("store-outputs", "strip-outputs", "check"),
                   help="store-outputs, strip-outputs or check (see above)")
    n.add_argument("notebooks", nargs="*", help="default: 00-explore and every section notebook")
    n.set_defaults(func=cmd_notebooks)


def cmd_receive_path(args) -> int:
    from .sections import receive_path
    campaigns = dict(c.split("=", 1) for c in args.campaign or [])
    if args.record:
        _require_live()
        campaigns.update(receive_path.record(args.modes, runs_dir=args.runs_dir, duration=args.duration,
                                             warmup=args.warmup, repetitions=args.repetitions))
    if not campaigns:
        _die("nothing to compare: --record, or --campaign MODE=CAMPAIGN for each mode")
    for mode, campaign in campaigns.items():
        print(f"{mode}: {campaign}")
    print(receive_path.markdown(receive_path.table(args.runs_dir, campaigns)))
    return 0


def cmd_top_up(args) -> int:
    from .sections import SECTIONS, section
    if args.notebook not in SECTIONS and f"{args.notebook}.ipynb" not in SECTIONS:
        known = ", ".join(n.removesuffix(".ipynb") for n in SECTIONS)
        _die(f"{args.notebook}: not a notebook hostnet knows (one of {known})")
    from . import project, store, testbed
    if not store.Campaign(args.runs_dir, args.campaign).is_sweep():  # e.g. 13's before 2026-11-27
        _die(f"{args.campaign} is not a sweep (no {store.PLAN_FILE}): its notebook tops it up when it runs live")
    from .measure import topup
    module = section(args.notebook).load_module()
    manifest = store.load_manifests(args.runs_dir, args.campaign)[0]
    # a notebook of two campaigns (15: zero-copy and BIG TCP) names a judge per stored experiment
    judge = getattr(module, "JUDGES", {}).get(manifest.get("experiment"), getattr(module, "judge", None))
    if judge is None:
        _die(f"{args.notebook}: its verdicts do not name the points they need (no judge); nothing to top up")
    _require_live()
    shape = {} if args.testbed else topup.embedded_shape(manifest)
    with testbed.using(args.testbed, prefix="tu", **shape) as tb:
        log = topup.decide(tb, judge, runs_dir=args.runs_dir, campaign=args.campaign,
                           reference_dir=project.reference_dir(args.reference_dir), budget_runs=args.budget_runs,
                           budget_minutes=args.budget_minutes)
    for i, r in enumerate(log.per_round, 1):
        print(f"round {i}: {r['runs']} runs of {len(r['points'])} point(s) for {', '.join(r['findings'])}")
    print(f"{log.runs} runs in {log.rounds} rounds, {log.seconds / 60:.1f} min; stopped: {log.stopped}")
    return 0


def cmd_rederive(args) -> int:
    from . import store
    from .measure.tidy import rederive
    from .parsers import ParseError
    changed = total = differ = refused = 0
    stored = ("tidy.csv", "manifest.json")
    for campaign in args.campaigns:
        for run in store.list_runs(args.runs_dir, campaign):
            total += 1
            before = [(run / f).read_bytes() if (run / f).exists() else None for f in stored] if args.force else []
            try:
                went = rederive(run, force=args.force)
            # one run's damaged or hand-made files stop that run, named, not the campaign's others
            except (store.DamagedRun, store.PackError, ParseError, ValueError, KeyError, TypeError,
                    AttributeError, OSError) as exc:
                print(f"hostnet: {run}: not re-derived ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
                refused += 1
                continue
            if went:
                changed += 1
                differ += args.force and before != [(run / f).read_bytes() for f in stored]
    print(f"{changed} of {total} runs re-derived under the current CPU rule, taxonomy and attribution rule"
          + (f"; {differ} of them changed (tidy.csv or manifest.json)" if args.force else "")
          + (f"; {refused} could not be (above)" if refused else ""))
    return 1 if refused else 0


def _pack_commands(sub) -> None:
    """data pack|unpack: each run's raw/ as one archive beside its manifest, and back for reading."""
    d = sub.add_parser("data", help="stored runs' raw files: pack each run's raw/ into raw.tar.xz, or unpack one "
                                    "run's archive into raw/ to read it")
    act = d.add_subparsers(dest="action", required=True)
    p = act.add_parser("pack", help="pack runs' raw/ into raw.tar.xz (verified before raw/ is removed); runs "
                                    "packed already are skipped, a raw/ unpacked beside its archive is removed")
    p.add_argument("targets", nargs="*", metavar="CAMPAIGN_OR_RUN",
                   help="campaign or run directories, or campaign names under --runs-dir (default: every campaign)")
    _runs_dir_option(p)
    p.set_defaults(func=cmd_data_pack)
    u = act.add_parser("unpack", help="write one run's raw files into RUN_DIR/raw/ to read them (the archive stays; "
                                      "`hostnet data pack RUN_DIR` removes raw/ again)")
    u.add_argument("run", metavar="RUN_DIR", help="a run directory")
    u.set_defaults(func=cmd_data_unpack)


def _is_run(path: Path) -> bool:
    from . import store
    return any((path / f).exists() for f in ("manifest.json", store.RAW_DIR, store.RAW_ARCHIVE))


def _runs_to_pack(targets: list[str], runs_dir: str) -> tuple[list[Path], int]:
    """Run directories named, or in the campaigns named (a directory, or a name under runs_dir);
    runs still being written (*.partial) are left alone. A campaign or run that is a symlink, or
    resolves outside the directory it was found in, is skipped with a warning naming it: a received
    campaign's link would have pack archive and delete files elsewhere. Returns the runs and how
    many were skipped."""
    base = Path(runs_dir)
    if not targets:
        if not base.is_dir():
            raise FileNotFoundError(f"no runs directory {base}")
        targets = [str(c) for c in sorted(base.iterdir()) if c.is_dir()]
    runs, skipped = [], 0
    for t in targets:
        path = Path(os.path.abspath(t if Path(t).is_dir() else base / t))  # "." has a name and a parent too
        if not path.is_dir():
            raise FileNotFoundError(f"no run or campaign {t} (a directory, or a campaign under {base})")
        if path.is_symlink() or not _stays_in(path, path.parent):
            skipped += _skip_link(path)
            continue
        found = [path] if _is_run(path) else [r for r in sorted(path.iterdir()) if r.is_dir() and _is_run(r)]
        for r in found:
            if r.is_symlink() or not _stays_in(r, path if r != path else path.parent):
                skipped += _skip_link(r)
            elif not r.name.endswith(".partial"):
                runs.append(r)
    return runs, skipped


def _stays_in(path: Path, parent: Path) -> bool:
    return os.path.realpath(path) == os.path.join(os.path.realpath(parent), path.name)


def _skip_link(path: Path) -> int:
    print(f"hostnet: {path}: a symlink (or it leads outside {path.parent}): skipped, nothing read or removed",
          file=sys.stderr)
    return 1


def cmd_data_pack(args) -> int:
    from . import store
    log = logging.getLogger(__name__)
    packed = already = files = raw_bytes = archived = 0
    runs, refused = _runs_to_pack(args.targets, args.runs_dir)
    for run in runs:
        raw = run / store.RAW_DIR
        unpacked_copy = store.is_packed(run)
        sizes = [p.stat().st_size for p in raw.iterdir()] if raw.is_dir() and not raw.is_symlink() else []
        try:
            went = store.pack_raw(run)
        except (store.PackError, store.DamagedRun) as exc:  # raw/ kept; the other runs go on
            print(f"hostnet: {exc}", file=sys.stderr)
            refused += 1
            continue
        if not went or unpacked_copy:
            already += 1
            log.debug("%s: packed already%s", run, " (the raw/ unpacked beside it removed)" if went else "")
            continue
        packed += 1
        files += len(sizes)
        raw_bytes += sum(sizes)
        archived += (run / store.RAW_ARCHIVE).stat().st_size
        log.debug("%s: %d files packed", run, len(sizes))
    print(f"{packed} runs packed ({files} files, {raw_bytes / 1e6:.1f} MB of raw text in {archived / 1e6:.1f} MB "
          f"of {store.RAW_ARCHIVE}); {already} packed already" + (f"; {refused} refused (above)" if refused else ""))
    return 1 if refused else 0


def cmd_data_unpack(args) -> int:
    from . import store
    run = Path(args.run)
    if not run.is_dir() or not _is_run(run):
        raise FileNotFoundError(f"no run directory {run}")
    if links := store.linked(run):
        print(f"hostnet: {links[0]}: a symlink: not unpacked (a run's files are its own)", file=sys.stderr)
        return 1
    if (run / store.RAW_DIR).is_dir():
        print(f"{run / store.RAW_DIR}: there already ({'unpacked before' if store.is_packed(run) else 'not packed'})")
        return 0
    raw = store.unpack_raw(run)
    print(f"{raw}: {len(list(raw.iterdir()))} files unpacked from {store.RAW_ARCHIVE} to read (the archive stays "
          f"what hostnet reads; `hostnet data pack {run}` removes raw/ again)")
    return 0


def cmd_seal(args) -> int:
    from . import store
    sealed = total = refused = 0
    for campaign in args.campaigns:
        for run in store.list_runs(args.runs_dir, campaign):
            total += 1
            try:
                sealed += store.seal(run)
            except store.DamagedRun as exc:  # a table that no longer holds is not sealed with its archive
                print(f"hostnet: {exc}: not sealed", file=sys.stderr)
                refused += 1
    print(f"{sealed} of {total} runs sealed (the others had their checks, or no tidy table)"
          + (f"; {refused} refused (above)" if refused else ""))
    return 1 if refused else 0


def _steering_option(p: argparse.ArgumentParser) -> None:
    from .measure.options import ENV
    from .testbed import steering
    p.add_argument("--steering", choices=steering.EMBEDDED_MODES,
                   help=f"receive path of the embedded testbeds this command builds (default: "
                        f"${ENV['steering']}, else {steering.DEFAULT}; docs/receive-path.md)")


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """hostnet's loggers (progress at INFO, diagnostics at DEBUG) on stderr, one plain line each;
    other libraries' loggers stay as Python leaves them (warnings and errors)."""
    import logging

    class Stderr(logging.StreamHandler):  # the stderr of the moment (a test's capture, a redirect)
        stream = property(lambda self: sys.stderr, lambda self, _: None)
    handler = Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    top = logging.getLogger("hostnet")
    top.handlers[:] = [handler]
    top.propagate = False
    top.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    setup_logging(args.verbose, args.log_quiet)
    from . import project
    if args.root:  # the notebooks' kernels inherit it
        os.environ[project.ENV] = str(Path(args.root).resolve())
    if getattr(args, "runs_dir", "") is None and args.command != "figures":  # figures: each notebook's own
        args.runs_dir = str(project.root() / "data" / "runs")
    try:
        rc = args.func(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return rc
    except BrokenPipeError:  # `hostnet breakdown ... | head -1`: the reader stopped reading; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor a second error at exit's flush
        return 128 + signal.SIGPIPE  # what a tool killed by SIGPIPE returns (`cat big | head -1`)
    except Exception as exc:
        if isinstance(exc, _one_line_errors()):
            first = exc.__context__
            if isinstance(first, _one_line_errors()) and not exc.__suppress_context__:
                # e.g. a restore that failed after the campaign had stopped: both said, the cause first
                print(f"hostnet: {first}", file=sys.stderr)
            _die(str(exc))
        if isinstance(exc, OSError) and exc.errno in FULL:
            _die(f"{exc.strerror}: {exc.filename or 'a file hostnet writes'} (free space there, or point --runs-dir or "
                 f"HOSTNET_STATE_DIR elsewhere; a run cut short stays *.partial and is redone, never read)")
        raise
    return 1


# A disk that cannot take more: said in one line, not a traceback.
FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}

# Errors that say what went wrong in their message: one line, not a traceback. Looked up only in
# modules already imported (a command that never imported the runner cannot raise its
# PreflightError), so the CLI imports none of them up front.
ONE_LINE_ERRORS = (("hostnet.testbed.base", "TestbedError"), ("hostnet.measure.config", "ConfigError"),
                   ("hostnet.measure.runner", "PreflightError"), ("hostnet.testbed.capabilities", "MissingCapability"),
                   ("hostnet.hosts.base", "HostError"), ("hostnet.knobs", "KnobError"))


def _one_line_errors() -> tuple[type, ...]:
    return (FileNotFoundError, ValueError) + tuple(getattr(sys.modules[module], name)
                                                   for module, name in ONE_LINE_ERRORS if module in sys.modules)


if __name__ == "__main__":
    sys.exit(main())
