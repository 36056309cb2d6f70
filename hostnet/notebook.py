"""What every notebook's first code cell calls, so that a notebook behaves the same under plain
papermill, `hostnet figures` and JupyterLab, wherever it is run from:

- refuse_undeclared(): a parameter papermill injected that the `parameters` cell does not declare is
  an error (papermill itself only logs a warning and exits 0);
- paths() / path(): the path parameters, relative ones resolved against the project root (hostnet.project),
  reference_dir "" meaning the reference data shipped in the package.
"""
from __future__ import annotations

import ast
from pathlib import Path

from . import project

# papermill's injected cell starts with this comment (papermill.translators.PythonTranslator.codify)
INJECTED_HEADER = "# Parameters\n"


class UndeclaredParameterError(NameError):
    pass


def assigned_names(source: str) -> set[str]:
    """The names a cell of `name = value` statements assigns."""
    names = set()
    for stmt in ast.parse(source).body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def undeclared(history: list[str]) -> list[str]:
    """Names papermill injected that the parameters cell does not assign, from the kernel's input
    history (oldest first, the running cell last): papermill runs the parameters cell, then its
    injected cell, then this one. Without an injected cell nothing was passed: nothing to refuse."""
    if len(history) < 3 or not history[-2].startswith(INJECTED_HEADER):
        return []
    return sorted(assigned_names(history[-2]) - assigned_names(history[-3]))


def refuse_undeclared(shell=None) -> None:
    """Raise UndeclaredParameterError when papermill passed a parameter this notebook does not declare."""
    if shell is None:
        from IPython import get_ipython
        shell = get_ipython()
    if shell is None:  # not in a kernel (a plain script): papermill injected nothing
        return
    unknown = undeclared(list(shell.history_manager.input_hist_raw))
    if unknown:
        raise UndeclaredParameterError(
            f"this notebook does not declare the parameter(s) {', '.join(unknown)} (a misspelling?); "
            f"it declares {', '.join(sorted(assigned_names(shell.history_manager.input_hist_raw[-3])))}")


def path(value) -> Path:
    """A path parameter: as given when absolute, else relative to the project root."""
    return project.resolve(value)


def shown(value) -> str:
    """A path as printed in a notebook: relative to the project root when inside it."""
    return project.shown(value)


class NoProject(FileNotFoundError):
    """A relative runs_dir outside any project: nothing tells where the recorded data is."""


def paths(runs_dir, reference_dir, figures_dir) -> tuple[Path, Path, Path]:
    """runs_dir, reference_dir and figures_dir as absolute paths (docstring of hostnet.project).
    A relative runs_dir that does not exist, where no project was found (no HOSTNET_ROOT, no
    data/runs at or above the working directory: plain papermill run from elsewhere), is one error
    naming the ways to point at the data, not a missing campaign later."""
    runs = project.resolve(runs_dir)
    if not Path(runs_dir).expanduser().is_absolute() and not runs.is_dir() and not project.found():
        raise NoProject(f"no hostnet project at or above {Path.cwd()} (no {project.MARKER} there) and "
                        f"{project.ENV} is not set: set {project.ENV}=<a checkout> (or run papermill with "
                        f"--cwd inside it), or pass runs_dir as an absolute path")
    return runs, project.reference_dir(reference_dir), project.resolve(figures_dir)
