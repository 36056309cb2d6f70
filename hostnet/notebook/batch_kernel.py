"""The Jupyter kernel hostnet's batch runs start (papermill's notebooks): ipykernel, minus one import
(the kernel manager that starts it is kernel_manager.py's: this module stays light, every `hostnet`
command imports it for skip_unused_imports).

jsonschema imports rfc3987_syntax wherever it is installed (jupyter-events asks for
jsonschema[format-nongpl]), and rfc3987_syntax compiles ~40 Earley grammars as it is imported:
1.7 s of CPU on this machine in every kernel and every papermill worker, about a fifth of a
replayed notebook (jsonschema issue 1428). It serves only the "iri" and "iri-reference" formats,
which no schema validated here uses (vega-lite's: uri, uri-reference, color-hex; nbformat's: none).
Marked absent, jsonschema leaves those two formats unchecked and nothing else changes: the replay's
byte-identity test holds the figures and tables to that. A kernel a person starts (JupyterLab) is
ipykernel's own, untouched."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

SKIPPED = ("rfc3987_syntax",)


def exit_with_parent(parent: int | None = None, poll_s: float = 1.0) -> None:
    """End this process soon after `parent` (default: the process that started it) ends: a `hostnet
    figures` killed mid-replay left its worker processes running (a daemon thread watches the
    parent's pid; PR_SET_PDEATHSIG would follow the starting thread, not the process). Their
    kernels need nothing of this: ipykernel ends a kernel whose parent is gone (JPY_PARENT_PID)."""
    parent = parent or os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)  # orphaned: nobody reads what this process would still write
    threading.Thread(target=watch, daemon=True, name="hostnet-exit-with-parent").start()


def start_worker(parent: int | None = None) -> None:
    """A replay worker process's start (ProcessPoolExecutor's initializer; parent: the batch's pid,
    so a batch killed before the worker looked is seen too). Live notebooks run in the batch's own
    process, never in a worker."""
    skip_unused_imports()
    exit_with_parent(parent)


def skip_unused_imports() -> None:
    """Make `import rfc3987_syntax` fail (ImportError, which jsonschema expects), unless it is in already."""
    for name in SKIPPED:
        sys.modules.setdefault(name, None)


def kernel_argv(argv: list[str]) -> list[str]:
    """A kernelspec's command with `-m ipykernel_launcher` run as this module; any other command
    (a kernelspec of the user's that starts something else) as it is."""
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == "ipykernel_launcher":
            return [*argv[:i + 1], "hostnet.notebook.batch_kernel", *argv[i + 2:]]
    return list(argv)


if __name__ == "__main__":
    # as ipykernel_launcher: the working directory (the notebooks') leaves sys.path while ipykernel
    # loads; the kernel's shell puts it back
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    skip_unused_imports()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
