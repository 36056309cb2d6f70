"""The kernel manager papermill starts each batch notebook's kernel with (batch.py, and the kernel a
replay worker keeps, kept_kernel.py): IPC sockets in the user's Jupyter runtime directory (over TCP,
ipykernel warns once per notebook that it runs without encryption), the kernel started as
batch_kernel.py (ipykernel minus one import), and no interrupt before the shutdown request
(jupyter_client sends SIGINT first, for a cell still running; after papermill's last cell it landed
in the kernel's reply handler, which logged "ERROR | KeyboardInterrupt caught in kernel" after
every successful notebook)."""
from __future__ import annotations

import uuid
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir

from .batch_kernel import kernel_argv


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
