"""What the commands that measure share at the edge (run, sweep, figures, testbed, receive-path,
top-up): the live prerequisites, the --testbed, --steering and --reconnect-wait options, and the
live options read from the environment here and passed down. The testbed package loads its
modules on first use, so importing this costs the hosts and the knobs, not a testbed."""
from __future__ import annotations

import os
from pathlib import Path

from .. import testbed
from ..hosts import RECONNECT_WAIT_S, LocalHost
from ..measure.options import ENV, LiveOptions
from ..testbed import steering
from .edge import die


def require_live(tools=("ip", "iperf3", "perf", "ethtool")) -> None:
    if os.geteuid() != 0:
        die("live runs build network namespaces and need root; run as root")
    local = LocalHost()
    missing = [t for t in tools if not local.which(t)]
    if missing:
        die(f"missing {', '.join(missing)}; run `make install` (Debian packages iperf3 linux-perf ethtool iproute2)")


def testbed_spec(args) -> str:
    """--testbed as every command spells it: "embedded" (a fresh one, torn down after; the default),
    the name of an embedded testbed that is up, or a testbed.yaml path."""
    spec = args.testbed or "embedded"
    if testbed.session.is_file(spec) and not Path(spec).is_file():
        die(f"--testbed {spec}: no such testbed.yaml")
    return spec


def live_options(args) -> LiveOptions:
    """The live options (measure/options.py): the environment's, with this command's --steering,
    --top-up-runs and --top-up-minutes over them; read here, at the edge, and passed down."""
    return LiveOptions.from_environment(os.environ, steering=getattr(args, "steering", None),
                                        top_up_runs=getattr(args, "top_up_runs", None),
                                        top_up_minutes=getattr(args, "top_up_minutes", None))


def hand_to_kernels(args) -> None:
    """The notebook kernels this command starts read the live options at their start (notebook.start):
    they get them through their environment, the one way into a kernel papermill starts."""
    os.environ.update(live_options(args).environment())


def fresh_shape(args, spec: str) -> dict:
    """--senders/--receivers/--ssh shape a fresh embedded testbed; with one that exists they are an error."""
    shape = {"n_senders": args.senders, "n_receivers": args.receivers, "ssh": args.ssh}
    if spec in testbed.session.FRESH:
        return shape
    given = [f"--{k.removeprefix('n_')}" for k, v in shape.items() if v not in (1, False)]
    if given:
        die(f"{', '.join(given)} shape a fresh embedded testbed; --testbed {spec} is already built")
    return {}


def reconnect_flag(parser) -> None:
    parser.add_argument("--reconnect-wait", type=float, default=RECONNECT_WAIT_S, metavar="SECONDS",
                        help=f"how long a host that stopped answering mid-campaign is waited for before the "
                             f"campaign stops, its settings left journaled (default {RECONNECT_WAIT_S:g})")


def steering_option(p) -> None:
    p.add_argument("--steering", choices=steering.EMBEDDED_MODES,
                   help=f"receive path of the embedded testbeds this command builds (default: "
                        f"${ENV['steering']}, else {steering.DEFAULT}; docs/receive-path.md)")
