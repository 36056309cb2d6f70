"""What every notebook's first code cell calls, so that a notebook behaves the same under plain
papermill, `hostnet figures`, `hostnet sweep` and JupyterLab, wherever it is run from:

    nb = notebook.start("02-rx-buffer.ipynb", mode)
    runs_dir, reference_dir, figures_dir = nb.paths(runs_dir, reference_dir, figures_dir)
    ...
    tidy, manifests = nb.select(tidy, manifests)

- start(): the parameters papermill injected (`given`), read from the kernel's input history:
  papermill runs the parameters cell, then its injected cell, then this one. A name the
  parameters cell does not declare is an error (papermill itself only logs a warning and exits 0);
  in replay, a parameter only a live run uses is an error (hostnet.sections.replay).
  The history is the only place a kernel sees them: papermill's inspect_notebook reads the
  notebook file, whose path a kernel under plain papermill is not told.
- paths(): the path parameters, relative ones resolved against the project root (hostnet.project),
  reference_dir "" meaning the reference data shipped in the package, figures_dir "" meaning
  figures/ next to the output notebook when papermill names it (--inject-output-path), else
  hostnet-figures/ in the working directory: never the checkout's committed figures/ unless asked.
- select(): in replay, the recorded runs the selecting parameters pick (sizes_kb: [200] shows the
  200 KB point only), as papermill passed them or as the parameters cell says (JupyterLab). A value
  papermill passed that was not recorded is an error; a default one (dctcp where the host had
  none) is left out.
An injected value must have its parameter's declared type (`sizes_kb: list`): papermill's `-p
algorithms cubic` passes a str, which a notebook would iterate letter by letter.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import project
from ..measure.options import ENV as LIVE_ENV, LiveOptions
from ..sections import section

# papermill's injected cell starts with this comment (papermill.translators.PythonTranslator.codify)
INJECTED_HEADER = "# Parameters\n"
# what papermill injects itself with --inject-paths / --inject-output-path / --inject-input-path
PAPERMILL_PATHS = ("PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH")
# figures_dir "" without an output notebook to put them beside: in the working directory, under a
# name no checkout commits
DEFAULT_FIGURES = "hostnet-figures"


class UndeclaredParameterError(NameError):
    pass


class ParameterTypeError(TypeError):
    pass


# what a parameters cell's annotation admits (Optional[...] also admits None)
_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "list": (list,)}


def assigned(source: str) -> dict[str, str]:
    """{name: value source} of a cell of `name = value` statements (annotated or not), in order."""
    out = {}
    for stmt in ast.parse(source).body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        for t in targets:
            if isinstance(t, ast.Name) and getattr(stmt, "value", None) is not None:
                out[t.id] = ast.get_source_segment(source, stmt.value)
    return out


def assigned_names(source: str) -> set[str]:
    return set(assigned(source))


def annotations(source: str) -> dict[str, str]:
    """{name: annotation} of a cell's annotated assignments (a string annotation unquoted)."""
    out = {}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            a = stmt.annotation
            out[stmt.target.id] = a.value if isinstance(a, ast.Constant) else ast.unparse(a)
    return out


def mistyped(values: dict, declared: dict[str, str]) -> list[str]:
    """What of `values` does not have its declared type, one phrase each."""
    problems = []
    for name, value in values.items():
        annotation = declared.get(name, "")
        optional = annotation.startswith("Optional[")
        kinds = _TYPES.get(annotation.removeprefix("Optional[").removesuffix("]") if optional else annotation)
        if kinds is None or (value is None and optional):
            continue
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            problems.append(f"{name} is declared {annotation}, given {value!r} ({type(value).__name__})")
    return problems


def _cells(history: list[str]) -> tuple[str, str] | None:
    """(parameters cell, injected cell) from the kernel's input history (oldest first, the running
    cell last); None without an injected cell (JupyterLab, or nothing was passed)."""
    if len(history) < 3 or not history[-2].startswith(INJECTED_HEADER):
        return None
    return history[-3], history[-2]


def injected(history: list[str]) -> dict:
    """What papermill injected, as values (papermill writes each as a Python literal; a non-finite
    float as float('inf'), which is read as such)."""
    cells = _cells(history)
    return {} if cells is None else {k: _literal(v) for k, v in assigned(cells[1]).items()}


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except ValueError:
        if text.replace(" ", "") in ("float('inf')", "float('-inf')", "float('nan')"):
            return float(text.replace(" ", "")[7:-2])
        raise


def undeclared(history: list[str]) -> list[str]:
    """Names papermill injected that the parameters cell does not assign (its own paths aside)."""
    cells = _cells(history)
    if cells is None:
        return []
    return sorted(set(assigned(cells[1])) - set(assigned(cells[0])) - set(PAPERMILL_PATHS))


def _shell(shell=None):
    """The kernel's shell (None in a plain script): the one given, else IPython's running one."""
    if shell is None:
        # lazy: IPython (0.3 s) is loaded in a kernel already; every `hostnet` command imports this module
        from IPython import get_ipython
        shell = get_ipython()
    return shell


def _history(shell) -> list[str] | None:
    shell = _shell(shell)
    return None if shell is None else list(shell.history_manager.input_hist_raw)


def refuse_undeclared(shell=None) -> dict:
    """Raise UndeclaredParameterError when papermill passed a parameter this notebook does not
    declare; else return what it injected ({} outside a kernel or without papermill)."""
    history = _history(shell)
    if history is None:  # not in a kernel (a plain script): papermill injected nothing
        return {}
    if unknown := undeclared(history):
        raise UndeclaredParameterError(
            f"this notebook does not declare the parameter(s) {', '.join(unknown)} (a misspelling?); "
            f"it declares {', '.join(sorted(assigned_names(_cells(history)[0])))}")
    given = injected(history)
    if given and (wrong := mistyped(given, annotations(_cells(history)[0]))):
        raise ParameterTypeError("; ".join(wrong) + " (a list is passed with -y, e.g. -y '{algorithms: [cubic]}')")
    return given


@dataclass
class Started:
    """One notebook's run: which notebook, in which mode, with what papermill injected (`given`)
    and the selecting parameters' values in the kernel (`values`: given or the cell's own)."""
    notebook: str
    mode: str
    given: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    environ: dict = field(default_factory=dict)  # the live options' variables as the kernel started with them

    def live(self, testbed: str) -> LiveOptions:
        """Where and how this notebook's live run runs: its `testbed` parameter, and the receive
        steering and top-up budget the command that started the kernel handed over in its
        environment (read once, at start; measure/options.py). A replay runs nothing: the
        environment's values are not its concern, so one a live run would refuse does not stop it."""
        if self.mode == "replay":
            return LiveOptions(testbed=testbed or "embedded")
        return LiveOptions.from_environment(self.environ, testbed=testbed)

    def _section(self):
        return section(self.notebook)

    def paths(self, runs_dir, reference_dir, figures_dir) -> tuple[Path, Path, Path]:
        """runs_dir, reference_dir and figures_dir as absolute paths (module docstring). figures_dir
        "" never resolves to the project's committed figures/ (an output notebook at the root, or
        written to stdout): that one is written only when named."""
        runs, reference, figures = paths(runs_dir, reference_dir, figures_dir or ".")
        if not str(figures_dir or ""):
            output = str(self.given.get("PAPERMILL_OUTPUT_PATH") or "")
            local = output and output != "-" and "://" not in output
            figures = Path(output).expanduser().resolve().parent / "figures" if local else Path.cwd() / DEFAULT_FIGURES
            if figures == project.root() / "figures":
                figures = figures.with_name(DEFAULT_FIGURES)
        return runs, reference, figures

    def select(self, *frames_then_manifests, campaign: str = "campaign") -> tuple:
        """(frames..., manifests) cut to the recorded runs the selecting parameters of `campaign`
        (the parameter naming the campaign these came from) pick; unchanged in a live run. A value
        papermill passed that was not recorded: ReplayParameterError."""
        *frames, manifests = frames_then_manifests
        if self.mode != "replay":
            return (*frames, manifests)
        # lazy: replay is pandas (0.8 s); every `hostnet` command imports this module, and a live notebook skips it
        from ..sections import replay
        chosen = replay.selection(self._section(), {**self.values, **self.given}, lambda _: manifests, campaign,
                                  strict=set(self.given))
        return replay.apply(tuple(frames), manifests, chosen, campaign)


def start(notebook: str, mode: str = "replay", shell=None) -> Started:
    """The first call of a notebook (module docstring): undeclared or mistyped parameters refused,
    and in replay the parameters only a live run uses."""
    given = refuse_undeclared(shell)
    started = Started(notebook, mode, given, environ={v: os.environ[v] for v in LIVE_ENV.values() if v in os.environ})
    namespace = _namespace(shell)
    started.values = {s.param: namespace[s.param] for s in started._section().selects if s.param in namespace}
    if mode == "replay":
        # lazy: replay is pandas (0.8 s), as in Started.select; a live notebook skips it
        from ..sections import replay
        replay.refuse_run_only(started._section(), given)
    return started


def _namespace(shell) -> dict:
    return getattr(_shell(shell), "user_ns", None) or {}


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
