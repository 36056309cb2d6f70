"""hostnet: where a Linux host spends its CPU moving data over TCP (docs/api.md).

What a notebook of one's own needs, by name here (each loaded when first used, so `import hostnet`
stays instant for the CLI, and the package root, which the store imports for __version__, names
no floor above it):

    load(campaign=None, section=None, runs_dir=None)   the recorded runs as one tidy frame
    breakdown(path, cpus=None, comms=None, ...)        the paper's breakdown of any perf profile
    SECTIONS, section(notebook)                        the section registry (its module, experiment)
    declared(name, ...), run_sweep(testbed, spec, ...) a declared sweep, and running it
    Campaign(runs_dir, name)                           a campaign directory and what it holds
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> (module, attribute): resolved on first use (PEP 562)
_PUBLIC = {"SECTIONS": ("hostnet.sections", "SECTIONS"), "section": ("hostnet.sections", "section"),
           "declared": ("hostnet.measure.sweep", "declared"), "run_sweep": ("hostnet.measure.sweep", "run_sweep"),
           "Campaign": ("hostnet.store", "Campaign")}

__all__ = ["__version__", "load", "breakdown", *_PUBLIC]


def __getattr__(name: str):
    if name in _PUBLIC:
        module, attr = _PUBLIC[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hostnet' has no attribute {name!r}")


def load(campaign=None, section=None, runs_dir=None):
    """The recorded runs as one tidy pandas frame, each point's parameters and each run's quality as
    columns (hostnet.analysis.dataset.load; docs/api.md)."""
    return importlib.import_module("hostnet.analysis.dataset").load(campaign=campaign, section=section,
                                                                     runs_dir=runs_dir)


def breakdown(path, *, cpus=None, comms=None, kthreads=None, series=None, embedded=False, event=None):
    """The paper's CPU breakdown of a perf profile (perf.data, perf script or perf report text, folded
    stacks), one row per CPU set and category, as `hostnet breakdown FILE --csv` prints it; a
    perf.data is read by running this machine's perf on it."""
    profiles = importlib.import_module("hostnet.analysis.profiles")
    perf = importlib.import_module("hostnet.probes.perf")
    local = importlib.import_module("hostnet.hosts").LocalHost()
    _, results, _, _ = profiles.analyse(path, cpus=cpus, comms=comms, kthreads=kthreads, series=series,
                                        embedded=embedded, event=event, perf=perf.PerfOnHost(local))
    return profiles.table(results)
