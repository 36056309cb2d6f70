"""What every command shares at the edge: refusing in one line (die), the live prerequisites, the
--testbed, --runs-dir, --steering and --reconnect-wait options and the live options read from the
environment here and passed down."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def die(msg: str) -> None:
    print(f"hostnet: {msg}", file=sys.stderr)
    raise SystemExit(2)


def require_live(tools=("ip", "iperf3", "perf", "ethtool")) -> None:
    from ..hosts import LocalHost
    if os.geteuid() != 0:
        die("live runs build network namespaces and need root; run as root")
    local = LocalHost()
    missing = [t for t in tools if not local.which(t)]
    if missing:
        die(f"missing {', '.join(missing)}; run `make install` (Debian packages iperf3 linux-perf ethtool iproute2)")


def testbed_spec(args) -> str:
    """--testbed as every command spells it: "embedded" (a fresh one, torn down after; the default),
    the name of an embedded testbed that is up, or a testbed.yaml path."""
    from .. import testbed
    spec = args.testbed or "embedded"
    if testbed.session.is_file(spec) and not Path(spec).is_file():
        die(f"--testbed {spec}: no such testbed.yaml")
    return spec


def live_options(args):
    """The live options (measure/options.py): the environment's, with this command's --steering,
    --top-up-runs and --top-up-minutes over them; read here, at the edge, and passed down."""
    from ..measure.options import LiveOptions
    return LiveOptions.from_environment(os.environ, steering=getattr(args, "steering", None),
                                        top_up_runs=getattr(args, "top_up_runs", None),
                                        top_up_minutes=getattr(args, "top_up_minutes", None))


def hand_to_kernels(args) -> None:
    """The notebook kernels this command starts read the live options at their start (notebook.start):
    they get them through their environment, the one way into a kernel papermill starts."""
    os.environ.update(live_options(args).environment())


def fresh_shape(args, spec: str) -> dict:
    """--senders/--receivers/--ssh shape a fresh embedded testbed; with one that exists they are an error."""
    from .. import testbed
    shape = {"n_senders": args.senders, "n_receivers": args.receivers, "ssh": args.ssh}
    if spec in testbed.session.FRESH:
        return shape
    given = [f"--{k.removeprefix('n_')}" for k, v in shape.items() if v not in (1, False)]
    if given:
        die(f"{', '.join(given)} shape a fresh embedded testbed; --testbed {spec} is already built")
    return {}


def reconnect_flag(parser) -> None:
    from ..hosts import RECONNECT_WAIT_S
    parser.add_argument("--reconnect-wait", type=float, default=RECONNECT_WAIT_S, metavar="SECONDS",
                        help=f"how long a host that stopped answering mid-campaign is waited for before the "
                             f"campaign stops, its settings left journaled (default {RECONNECT_WAIT_S:g})")


def runs_dir_option(p: argparse.ArgumentParser, what: str = "where campaigns are") -> None:
    """--runs-dir as every command reads it: as given (relative to the working directory, as a shell
    path is), else data/runs in the project root (main: --root, $HOSTNET_ROOT, or the checkout the
    working directory is in), so a command works from any directory of the checkout."""
    p.add_argument("--runs-dir", help=f"{what} (default: data/runs in the project root)")


def steering_option(p: argparse.ArgumentParser) -> None:
    from ..measure.options import ENV
    from ..testbed import steering
    p.add_argument("--steering", choices=steering.EMBEDDED_MODES,
                   help=f"receive path of the embedded testbeds this command builds (default: "
                        f"${ENV['steering']}, else {steering.DEFAULT}; docs/receive-path.md)")


def cpu_set(text: str) -> list[int]:
    """"1", "0,1", "0-3" -> CPU numbers."""
    out = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU set: {text!r} (e.g. 1, 0,1 or 0-3)") from None
    return sorted(set(out))
