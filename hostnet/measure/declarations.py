"""The workloads a sweep runs, by name (the traffic pattern each one's flows follow, which of them
`hostnet run` takes), and the declared sweeps: hostnet/sweeps/<name>.yaml. Nothing is imported here but
the project's paths and the patterns' names: the CLI checks a name with it before the measuring code loads."""
from __future__ import annotations

from pathlib import Path

from .. import project
from ..dictionary import PATTERNS
# mixed: one long flow + k RPC flows on one sender and one receiver core (workloads.MixedFlows)
WORKLOAD_PATTERNS = {"single-flow": "single", **{p: p for p in PATTERNS if p != "single"},
                     "udp-loss": "single", "mixed": "single", "time-budget": "single"}
# `hostnet run WORKLOAD`: long flows (or RPCs) in one of the paper's patterns
RUN_WORKLOADS = ("single-flow", *PATTERNS[1:])


class UndeclaredSweep(ValueError):
    """A name no declaration under hostnet/sweeps/ has (the message names those there are)."""


def declared_names() -> list[str]:
    return sorted(p.stem for p in project.packaged("sweeps").glob("*.yaml"))


def declaration(name: str) -> Path:
    """hostnet/sweeps/<name>.yaml (package data; sweeps/ in a checkout links to it)."""
    names = declared_names()
    if name not in names:
        raise UndeclaredSweep(f"{name}: no declared sweep of that name (declared: {', '.join(names)}); "
                              f"or name a sweep spec file")
    return project.packaged("sweeps") / f"{name}.yaml"
