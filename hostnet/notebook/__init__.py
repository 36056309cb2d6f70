"""The notebook runtime: what a notebook's first cell calls, batches through papermill, the report.

parameters      start(): the parameters papermill injected, checked, and the paths they name
batch           one notebook or every notebook, executed
sweeps          one notebook over a grid of parameters
stored_outputs  the outputs stored in the notebooks for nbval
batch_kernel    the ipykernel batch runs start
report          figures/index.html and docs/results.md

A notebook imports this package and calls start(); path() and shown() are for its cells.
"""
from .parameters import NoProject, ParameterTypeError, UndeclaredParameterError, path, shown, start

__all__ = ["NoProject", "ParameterTypeError", "UndeclaredParameterError", "path", "shown", "start",
           "batch", "batch_kernel", "parameters", "report", "stored_outputs", "sweeps"]
