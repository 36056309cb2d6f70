"""The outputs stored in the notebooks themselves, which nbval compares (`hostnet notebooks
store-outputs|strip-outputs`): each notebook replayed with its own defaults, what changes on every
execution stripped."""
from __future__ import annotations

import copy
import logging
import re
import tempfile
from pathlib import Path

import nbformat

from .batch import NotebookParameterError, all_notebooks, declared_parameters, execute

log = logging.getLogger(__name__)  # one line per notebook (INFO); the CLI shows them

VOLATILE_NOTEBOOK_KEYS = ("papermill", "widgets")
# Random per execution, replaced by ids fixed by the cell's position so stored outputs diff cleanly.
_RANDOM_IDS = [(re.compile(r"altair-viz-[0-9a-f]{32}"), "altair-viz-c{cell}n{n}"),
               (re.compile(r"\bT_[0-9a-f]{5}(?=[_\"'\s])"), "T_c{cell}n{n}"),
               (re.compile(r" at 0x[0-9a-f]{6,16}>"), " at 0x{cell}{n}>")]


def stable_ids(text: str, cell: int) -> str:
    for pattern, template in _RANDOM_IDS:
        seen: dict[str, str] = {}
        text = pattern.sub(lambda m, seen=seen, template=template: seen.setdefault(
            m.group(0), template.format(cell=cell, n=len(seen))), text)
    return text


VOLATILE_CELL_KEYS = ("papermill", "execution", "ExecuteTime", "collapsed", "scrolled")


def strip_volatile(nb: dict) -> dict:
    """A notebook without what changes on every execution (timings, papermill bookkeeping, widget state)."""
    nb = copy.deepcopy(nb)
    for key in VOLATILE_NOTEBOOK_KEYS:
        nb["metadata"].pop(key, None)
    nb["metadata"].get("language_info", {}).pop("version", None)
    for i, cell in enumerate(nb["cells"]):
        for key in VOLATILE_CELL_KEYS:
            cell.get("metadata", {}).pop(key, None)
        for out in cell.get("outputs", []):
            out.get("metadata", {}).pop("execution", None)
            # widget views reference models that are gone once the kernel stops
            out.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    text = stable_ids("".join(value) if isinstance(value, list) else value, i)
                    out["data"][mime] = text.splitlines(keepends=True) if isinstance(value, list) else text
    return nb


def store_outputs(notebooks=None, notebooks_dir: Path | None = None) -> list[Path]:
    """Execute notebooks (default: 00 and every section) in replay mode with their own default
    parameters and write the outputs back into the notebooks, volatile metadata stripped, so that
    nbval compares the cells marked `# NBVAL_CHECK_OUTPUT`."""
    targets = [Path(n) for n in notebooks] if notebooks else all_notebooks(notebooks_dir)
    written = []
    with tempfile.TemporaryDirectory(prefix="hostnet-outputs-") as tmp:
        for nb in targets:
            log.info("storing outputs of %s", nb.name)
            declared = declared_parameters(nb)
            if "mode" in declared and declared["mode"]["default"].strip("'\"") != "replay":
                raise NotebookParameterError(f"{nb.name}: mode must default to \"replay\" to store outputs")
            executed = execute(nb, None, Path(tmp))  # no injected parameters cell: the notebook as committed
            clean = nbformat.from_dict(strip_volatile(nbformat.read(executed, as_version=4)))
            nbformat.validate(clean)
            nbformat.write(clean, nb)
            written.append(nb)
    return written


def strip_outputs(notebooks=None, notebooks_dir: Path | None = None) -> list[Path]:
    """The inverse of store_outputs (e.g. before editing a notebook's code)."""
    targets = [Path(n) for n in notebooks] if notebooks else all_notebooks(notebooks_dir)
    for nb in targets:
        data = nbformat.read(nb, as_version=4)
        for cell in data.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nbformat.from_dict(strip_volatile(data)), nb)
    return targets
