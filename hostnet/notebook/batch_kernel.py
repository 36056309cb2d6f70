"""The Jupyter kernel hostnet's batch runs start (papermill's notebooks): ipykernel, minus one import;
and the kernel manager that starts it (batch_kernel_manager).

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
import uuid
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


def batch_kernel_manager() -> type:
    """The kernel manager papermill starts each notebook's kernel with: IPC sockets in the user's
    Jupyter runtime directory (over TCP, ipykernel warns once per notebook that it runs without
    encryption), and no interrupt before the shutdown request (jupyter_client sends SIGINT first,
    for a cell still running; after papermill's last cell it landed in the kernel's reply handler,
    which logged "ERROR | KeyboardInterrupt caught in kernel" after every successful notebook)."""

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir

    class BatchKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            runtime = Path(jupyter_runtime_dir())
            runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
            super().__init__(transport="ipc", ip=str(runtime / f"hostnet-{uuid.uuid4().hex[:12]}-ipc"), **kwargs)

        def client(self, **kwargs):
            """A client, remembered so that the kept kernel's can be stopped (kept_kernel.release_clients)."""
            made = super().client(**kwargs)
            self.hostnet_clients = [*getattr(self, "hostnet_clients", []), made]
            return made

        def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
            return kernel_argv(super().format_kernel_cmd(extra_arguments))

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:  # an interrupt asked for stays one
                await super()._async_interrupt_kernel()

    return BatchKernelManager


if __name__ == "__main__":
    # as ipykernel_launcher: the working directory (the notebooks') leaves sys.path while ipykernel
    # loads; the kernel's shell puts it back
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    skip_unused_imports()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
