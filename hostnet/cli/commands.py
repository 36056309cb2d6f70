"""Every subcommand: the module of hostnet.cli that registers and runs it, and its line of help.

`hostnet` imports only the module of the command it is asked for (`hostnet --help`: none of them),
so a command's --help and its refusals pay for that command's imports and no other's (benchmark 8,
docs/performance.md). A test holds this table to what each module registers."""
from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    module: str  # hostnet.cli.<module> registers it (register(sub)) and holds its handler
    help: str


COMMANDS = {
    "testbed": Command("testbeds", "build, inspect or remove the embedded testbed"),
    "restore": Command("testbeds", "undo what a crashed or killed session left: processes, settings, namespaces "
                                   "(default: every testbed whose controller is dead)"),
    "run": Command("live", "run an experiment on the embedded testbed"),
    "sweep": Command("live", "run (or resume) a sweep spec (on --testbed; default a fresh embedded one), or sweep a "
                             "notebook over a parameter grid (NOTEBOOK.ipynb -f params.yaml)"),
    "breakdown": Command("profiles", "the paper's CPU breakdown of a perf profile: perf.data, perf script, perf "
                                     "report --stdio or folded stacks (hostnet's or perf's own format)"),
    "flamegraph": Command("profiles", "an interactive flame graph (offline HTML) of a run's folded perf stacks"),
    "compare": Command("profiles", "two campaigns side by side per point: tpc and category deltas with CIs"),
    "figures": Command("notebooks", "execute the notebooks with papermill and build figures/index.html"),
    "notebooks": Command("notebooks", "store-outputs: execute notebooks in replay mode and keep their outputs (nbval "
                                      "compares them); strip-outputs; check: parameter conventions"),
    "rederive": Command("data", "re-derive stored runs' CPU rows and breakdowns from their raw files under the "
                                "current CPU rule, taxonomy and attribution rule (the manifest keeps the old "
                                "versions)"),
    "data": Command("data", "stored runs' raw files: pack each run's raw/ into raw.tar.xz, or unpack one run's "
                            "archive into raw/ to read it"),
    "seal": Command("data", "record the sha256 of each ok run's tidy.csv (and row count) and raw.tar.xz in its "
                            "manifest, for runs written before manifests carried them (a changed file is then "
                            "refused)"),
    "receive-path": Command("study", "compare the embedded testbed's receive paths on the single-flow ladder "
                                     "(docs/receive-path.md)"),
    "top-up": Command("study", "more clean repetitions of exactly the points a campaign's inconclusive verdicts "
                               "need, until decided or the budget is spent (live)"),
}


def asked(argv: list[str]) -> str | None:
    """The command argv names: its first word that is not one of hostnet's own options (--root takes a
    value; the top-level parser takes no abbreviations, so no other spelling of it can hide one)."""
    words = iter(argv)
    for word in words:
        if word == "--root":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def add(sub, name: str):
    """The subparser of command `name`, with the table's help line (what each module's register calls)."""
    return sub.add_parser(name, help=COMMANDS[name].help)
