"""Probes run around one measurement window, once per machine of the testbed.

Each probe has start(host) and stop(host) -> {filename: text}: the raw output it
captured, stored verbatim in the run directory and parsed later by hostnet.parsers.
"""
from .cpu import ProcStatProbe
from .load import LoadProbe
from .perf import PerfProbe

__all__ = ["ProcStatProbe", "LoadProbe", "PerfProbe"]
