"""One kernel a replay worker keeps for every notebook it executes, instead of one per notebook.

A fresh kernel spends ~3 s of CPU importing pandas, scipy.stats and altair before a notebook's first
line of work: 15 notebooks paid it 15 times, most of a replay's CPU (issue 44). A worker of
`hostnet figures --mode replay` keeps its kernel and, between notebooks, gives it a fresh session:
the user namespace and history reset, the execution counter back to 1, the working directory,
environment and warning filters as they were when the kernel started, and every module's record
of warnings already shown forgotten (so a warning prints in each notebook that triggers it, as in a
fresh kernel). Modules stay imported, which is the point. The replay's byte-identity test holds the
figures and tables to what fresh kernels write.

Live runs keep one kernel per notebook: their minutes of measuring dwarf the imports, and a kernel
that measured is not one to trust with the next notebook's state.
"""
from __future__ import annotations

import atexit
import logging
from pathlib import Path

from jupyter_core.utils import run_sync

from .kernel_manager import BatchKernelManager

log = logging.getLogger(__name__)

# Run silently in the kept kernel: once after it starts (what a fresh session looks like) and
# before every later notebook (back to it). Names start with _hostnet_ and go with the reset.
SNAPSHOT = """
import builtins as _hostnet_b, os as _hostnet_os, sys as _hostnet_sys, warnings as _hostnet_w
_hostnet_b._hostnet_fresh = (_hostnet_os.getcwd(), dict(_hostnet_os.environ), list(_hostnet_w.filters),
                             list(_hostnet_sys.path), list(_hostnet_sys.argv))
del _hostnet_b, _hostnet_os, _hostnet_sys, _hostnet_w
"""
FRESH_SESSION = """
import builtins as _hostnet_b, os as _hostnet_os, sys as _hostnet_sys, warnings as _hostnet_w
_hostnet_cwd, _hostnet_env, _hostnet_filters, _hostnet_path, _hostnet_argv = _hostnet_b._hostnet_fresh
_hostnet_os.chdir(_hostnet_cwd)
_hostnet_os.environ.clear()
_hostnet_os.environ.update(_hostnet_env)
_hostnet_sys.path[:] = _hostnet_path
_hostnet_sys.argv[:] = _hostnet_argv
# the filters as they were, and no module remembering a warning it showed (their registries are
# what "show once" consults; cleared, nothing stale is left to invalidate)
_hostnet_w.filters[:] = _hostnet_filters
_hostnet_w.onceregistry.clear()
for _hostnet_m in list(_hostnet_sys.modules.values()):
    if isinstance(getattr(_hostnet_m, "__warningregistry__", None), dict):
        _hostnet_m.__warningregistry__.clear()
if "pandas" in _hostnet_sys.modules:  # display options a notebook set (13: max_colwidth)
    with _hostnet_w.catch_warnings():
        _hostnet_w.simplefilter("ignore")
        _hostnet_sys.modules["pandas"].reset_option("^display\\.")  # "all" would reach plotting's backend
if "hostnet.charts.plots" in _hostnet_sys.modules:  # the PNG renderer, were interactive() called
    _hostnet_sys.modules["hostnet.charts.plots"].interactive(False)
get_ipython().reset(new_session=True)  # a new history session, the execution counter back to 1
# reset() ends in a full gc.collect(), which walked every object of pandas, scipy and altair before
# each notebook (0.2 s each): what survives it now is left out of every later collection (no name made)
__import__("gc").freeze()
"""
# As nbclient starts the kernels it owns: history in memory, not in the user's IPython profile
# (which several kept kernels would write at once).
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:"]

_kept: dict = {}


def _run(km, code: str) -> None:
    """Run code in the kernel without output or history; its error is raised here."""
    kc = km.client()
    kc.start_channels()
    try:
        run_sync(kc.wait_for_ready)(timeout=60)
        reply = run_sync(kc.execute_interactive)(code, silent=True, store_history=False, timeout=60,
                                                 output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the kept kernel could not start a fresh session: {reply['content'].get('evalue')}")
    finally:
        kc.stop_channels()


def kernel(cwd: Path):
    """The worker's kernel, started in `cwd` (the notebooks' directory) or given a fresh session;
    a kernel that died, or one started elsewhere, is replaced."""
    km = _kept.get("km")
    if km is not None and (_kept["cwd"] != cwd or not run_sync(km.is_alive)()):
        shutdown()
        km = None
    if km is not None:
        try:
            _run(km, FRESH_SESSION)
            return km
        except Exception as exc:  # a kernel that cannot start afresh is replaced, not trusted
            log.warning("the kept kernel could not start a fresh session (%s); starting another", exc)
            shutdown()
    km = BatchKernelManager(kernel_name="python3")
    run_sync(km.start_kernel)(cwd=str(cwd), extra_arguments=KERNEL_ARGUMENTS)
    _kept.update(km=km, cwd=cwd)
    _run(km, SNAPSHOT)
    if not _kept.get("atexit"):
        atexit.register(shutdown)
        _kept["atexit"] = True
    return km


def release_clients(km) -> None:
    """Stop the channels of the clients papermill made of the kept kernel: nbclient stops only those
    of kernels it owns, so each notebook would leave a client behind (its sockets and threads, its
    iopub socket receiving every later notebook's output)."""
    for client in getattr(km, "hostnet_clients", []):
        try:
            client.stop_channels()
        except Exception:  # channels already closed
            pass
    km.hostnet_clients = []


def shutdown() -> None:
    """Stop the kept kernel (at the worker's exit, or before replacing it)."""
    km = _kept.pop("km", None)
    if km is not None:
        release_clients(km)
        try:
            run_sync(km.shutdown_kernel)(now=True)
        except Exception:  # a kernel already gone: nothing left to stop
            pass
