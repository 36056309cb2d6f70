"""`hostnet`: build testbeds and measure (testbed, run, sweep, top-up, receive-path), read stored runs
and profiles (breakdown, flamegraph, compare, rederive, seal), pack or unpack runs' raw files (data),
regenerate figures and notebooks (figures, notebooks), and undo what a crashed session left (restore).

One module per concern registers its subcommands (register) and holds their handlers; commands.py
says which module serves which command, and only that module is imported (`hostnet --help`: none).
A command module imports at its top what its parser and handlers use, light packages included (the
store and the testbed load their modules on first use); a handler imports the heavy floors (pandas,
papermill, altair, the measuring floor) inside itself, after the arguments that can be refused
without them, so --help and a refusal answer in a quarter of a second (issue 44,
docs/performance.md). That is the reason for an import inside a function here, and each says so
(`# lazy:`, tests/unit/test_lazy_imports.py)."""
from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path

from .. import __version__, project
from ..notebook import batch_kernel
from .commands import COMMANDS, asked
from .edge import die

# jsonschema (the testbed.yaml and sweep checks) would compile rfc3987_syntax's grammars first: 2.7 s
# of a 3 s start. This process is hostnet's own, as a batch kernel is: the same two unused formats go.
batch_kernel.skip_unused_imports()


def parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """hostnet's parser with the arguments of `commands` (None: every command; main: the one asked
    for); any other command is listed by name and help only, its module not imported."""
    p = argparse.ArgumentParser(prog="hostnet", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"hostnet {__version__}")
    p.add_argument("--root", help=f"the project root: where notebooks/, figures/ and data/ are (default: "
                                  f"${project.ENV}, else the nearest directory at or above the working directory "
                                  f"holding data/runs/, else the working directory)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more diagnostics on stderr (-v: debug); progress lines are shown by default")
    p.add_argument("--log-quiet", action="store_true", help="only warnings and errors on stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = COMMANDS if commands is None else [c for c in commands if c in COMMANDS]
    modules = list(dict.fromkeys(COMMANDS[c].module for c in named))
    for module in modules:
        importlib.import_module(f"{__name__}.{module}").register(sub)
    for name, command in COMMANDS.items():
        if command.module not in modules:
            sub.add_parser(name, help=command.help)
    return p


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """hostnet's loggers (progress at INFO, diagnostics at DEBUG) on stderr, one plain line each;
    other libraries' loggers stay as Python leaves them (warnings and errors)."""
    class Stderr(logging.StreamHandler):  # the stderr of the moment (a test's capture, a redirect)
        stream = property(lambda self: sys.stderr, lambda self, _: None)
    handler = Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    top = logging.getLogger("hostnet")
    top.handlers[:] = [handler]
    top.propagate = False
    top.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser([asked(argv)]).parse_args(argv)
    setup_logging(args.verbose, args.log_quiet)
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
            die(str(exc))
        if isinstance(exc, OSError) and exc.errno in FULL:
            die(f"{exc.strerror}: {exc.filename or 'a file hostnet writes'} (free space there, or point --runs-dir or "
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
