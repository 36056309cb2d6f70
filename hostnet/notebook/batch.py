"""Execute the notebooks with papermill: one notebook (execute), or batch mode (every section notebook,
then figures/index.html). Sweeps of one notebook over a grid are sweeps.py's, the outputs nbval
compares stored_outputs.py's.

Conventions every section notebook follows (checked by `check_conventions`): a literal-only
`parameters` cell declaring at least CONVENTION_PARAMETERS; `mode = "replay"` by default.
"""
from __future__ import annotations

import ast
import json
import logging
import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import papermill as pm
from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines

from . import batch_kernel, kept_kernel
from .kernel_manager import BatchKernelManager
from .. import project
from ..measure.options import PROFILES, QUICK, SMOKE  # noqa: F401 (batch.QUICK, batch.SMOKE: the tests' profiles)
from ..testbed.session import is_file

log = logging.getLogger(__name__)  # one line per notebook (INFO); the CLI shows them
# rfc3987_syntax (batch_kernel.skip_unused_imports) is kept out by the process that runs a batch before
# anything imports jsonschema (cli/__init__.py; a replay worker's start_worker): the imports above do
# (papermill's nbformat, the testbed's schema checks), so a skip here would come too late.


def default_notebooks_dir() -> Path:
    """The project's notebooks/ (hostnet.project: the root from the working directory or $HOSTNET_ROOT)."""
    return project.root() / "notebooks"


def default_runs_dir() -> Path:
    return project.root() / "data" / "runs"

# PAPERMILL_OUTPUT_PATH: declared so that `papermill --inject-output-path` (figures beside the output
# notebook) is a known parameter, not papermill's "Passed unknown parameter" warning on every run
CONVENTION_PARAMETERS = ("mode", "campaign", "duration", "warmup", "repetitions", "runs_dir", "reference_dir",
                         "figures_dir", "PAPERMILL_OUTPUT_PATH")


class NotebookParameterError(ValueError):
    pass


class NotebookExecutionError(RuntimeError):
    pass


def section_notebooks(directory: Path | None = None) -> list[Path]:
    """The paper-section notebooks (01-, 02-, ...), in order; 00-explore is interactive, not a section."""
    return [p for p in all_notebooks(directory) if not p.name.startswith("00-")]


def all_notebooks(directory: Path | None = None) -> list[Path]:
    """Every notebook of `directory` (default: the project's notebooks/); none there is an error,
    not an empty batch that looks like success."""
    directory = Path(directory or default_notebooks_dir())
    found = sorted(directory.glob("[0-9][0-9]-*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no hostnet notebooks in {directory}: run from a checkout (or a copy of its "
                                f"notebooks/ and data/), or name its root with --root / ${project.ENV}")
    return found


def profile(name: str) -> dict:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
    return dict(PROFILES[name])


def declared_parameters(notebook: Path) -> dict:
    return pm.inspect_notebook(str(notebook))


def check_declared(notebook: Path, names) -> dict:
    """The notebook's declared parameters; raise if any of `names` is not among them."""
    declared = declared_parameters(notebook)
    unknown = sorted(set(names) - set(declared))
    if unknown:
        raise NotebookParameterError(f"{Path(notebook).name} does not declare {', '.join(unknown)}; "
                                     f"it declares {', '.join(declared)}")
    return declared


def check_conventions(notebook: Path) -> list[str]:
    """What a section notebook misses of the shared conventions (empty: it follows them)."""
    declared = declared_parameters(notebook)
    problems = [f"does not declare {p}" for p in CONVENTION_PARAMETERS if p not in declared]
    if "mode" in declared and declared["mode"]["default"].strip("'\"") != "replay":
        problems.append(f"mode defaults to {declared['mode']['default']}, not \"replay\"")
    # papermill --help-notebook shows "Unknown type" for a parameter without an annotation
    problems += [f"parameter {name} has no type annotation" for name, p in declared.items()
                 if p["inferred_type_name"] == "None"]
    return problems + non_literal_parameters(notebook) + first_cell_problems(notebook) + composed_charts(notebook)


# altair's `a | b` and `a & b` share colour and offset scales between the charts (one view then
# draws in another's colours, or in none); hostnet.charts.plots.panel keeps them apart.
_COMPOSED = re.compile(r"charts\[[^\]]+\]\s*[|&]|[|&]\s*\(?\s*charts\[")


def composed_charts(notebook: Path) -> list[str]:
    nb = json.loads(Path(notebook).read_text())
    return [f"cell {i} composes charts with | or &; show them with panel(...)"
            for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and _COMPOSED.search("".join(c["source"]))]


# What the first code cell after `parameters` starts with (hostnet.notebook): start the notebook
# under its own name (undeclared parameters refused, papermill only warns; in replay, those only a
# live run uses) and resolve the path parameters against the project root.
FIRST_CELL_CALLS = ('nb = notebook.start("{name}", mode)',
                    "runs_dir, reference_dir, figures_dir = nb.paths(runs_dir, reference_dir, figures_dir)")


def first_cell_problems(notebook: Path) -> list[str]:
    nb = json.loads(Path(notebook).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged or tagged[0] + 1 >= len(code):
        return ["has no code cell after its parameters cell"]
    source = "".join(code[tagged[0] + 1]["source"])
    calls = [call.format(name=Path(notebook).name) for call in FIRST_CELL_CALLS]
    return [f"the cell after parameters does not call {call}" for call in calls if call not in source]


def non_literal_parameters(notebook: Path) -> list[str]:
    """Statements of the `parameters` cell that are not `name = literal` (papermill injects values
    after it, so a computed default would silently differ between interactive and batch runs)."""
    nb = json.loads(Path(notebook).read_text())
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        return [f"has {len(cells)} cells tagged parameters, not one"]
    problems = []
    for stmt in ast.parse("".join(cells[0]["source"])).body:
        text = ast.get_source_segment("".join(cells[0]["source"]), stmt)
        if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and
                all(isinstance(t, ast.Name) for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]))):
            problems.append(f"parameters cell line {stmt.lineno} is not `name = literal`: {text}")
            continue
        try:
            ast.literal_eval(stmt.value)
        except ValueError:
            problems.append(f"parameters cell line {stmt.lineno} has a non-literal value: {text}")
    return problems


def execute(notebook: Path, parameters: dict | None, output_dir: Path, output_name: str | None = None,
            keep_kernel: bool = False) -> Path:
    """Run one notebook; a parameter it does not declare is an error, not silently ignored.
    keep_kernel: in this process's kept kernel (kept_kernel.py), given a fresh session, rather than
    a kernel of its own."""
    if parameters:
        check_declared(notebook, parameters)
    output_dir.mkdir(parents=True, exist_ok=True)
    out = output_dir / (output_name or Path(notebook).name)
    if not keep_kernel:
        pm.execute_notebook(str(notebook), str(out), parameters=parameters or None, cwd=str(Path(notebook).parent),
                            progress_bar=False, kernel_name="python3",
                            kernel_manager_class=BatchKernelManager)
        return out
    km = kept_kernel.kernel(Path(notebook).parent.resolve())
    try:
        pm.execute_notebook(str(notebook), str(out), parameters=parameters or None, cwd=str(Path(notebook).parent),
                            progress_bar=False, kernel_name="python3", km=km, engine_name=_final_save_engine())
    finally:
        kept_kernel.release_clients(km)
    return out


FINAL_SAVE_ENGINE = "hostnet-final-save"


def _final_save_engine() -> str:
    """papermill's engine, minus the writes before the end: papermill writes the whole executed notebook
    (validated against nbformat's schema, charts included) as every cell starts and ends, a tenth of a
    replay's CPU. A replay writes it when it ends, twice: this engine's final save and papermill's own
    (also on an error: notebook_complete runs in a finally, and papermill writes a failed notebook
    with the error on top). Live runs keep the writes as cells end: a person can watch a long
    measurement fill the notebook in."""
    class FinalSave(NotebookExecutionManager):
        def save(self, **kwargs):
            if self.end_time is not None:  # set by notebook_complete, before its final save
                super().save(**kwargs)

    class FinalSaveEngine(NBClientEngine):
        @classmethod
        def execute_notebook(cls, nb, kernel_name, output_path=None, progress_bar=True, log_output=False,
                             autosave_cell_every=30, **kwargs):
            # papermill's Engine.execute_notebook with the manager above
            nb_man = FinalSave(nb, output_path=output_path, progress_bar=progress_bar, log_output=log_output,
                               autosave_cell_every=autosave_cell_every)
            nb_man.notebook_start()
            try:
                cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
            finally:
                nb_man.cleanup_pbar()
                nb_man.notebook_complete()
            return nb_man.nb

    papermill_engines.register(FINAL_SAVE_ENGINE, FinalSaveEngine)
    return FINAL_SAVE_ENGINE


def run_parameters(mode: str, profile_name: str = "quick", figures_dir: Path | None = None,
                   overrides: dict | None = None, runs_dir: Path | None = None, testbed: str | None = None) -> dict:
    """What batch mode passes every section notebook: run mode gets a new campaign, the profile and
    (when given) the testbed every notebook runs on, a testbed.yaml path made absolute (papermill
    runs each notebook from notebooks/)."""
    params: dict = {"mode": mode}
    if mode == "run":
        params["campaign"] = ""  # a new campaign, not the recorded one
        params.update(profile(profile_name))
        params.update({k: v for k, v in (overrides or {}).items() if v is not None})
        if testbed:
            params["testbed"] = str(Path(testbed).resolve()) if is_file(testbed) else testbed
    if figures_dir is not None:
        params["figures_dir"] = str(Path(figures_dir).resolve())
    if runs_dir is not None:
        params["runs_dir"] = str(Path(runs_dir).resolve())
    return params


def preflight(declared: dict[Path, dict], params: dict, figures_dir: Path | None = None) -> list[str]:
    """What would make the batch fail, found before any kernel starts (each costs seconds, and a
    replay of a missing runs dir used to end on an unrelated error): a figures directory that
    cannot be written; in replay, a runs directory or a recorded campaign a notebook names that is
    not there. Paths resolve as each notebook's kernel resolves them (from its directory)."""
    problems, notebooks = [], list(declared)
    figures = Path(figures_dir) if figures_dir is not None else project.root(notebooks[0].parent) / "figures"
    try:
        figures.mkdir(parents=True, exist_ok=True)
        if not os.access(figures, os.W_OK):
            problems.append(f"figures directory {figures} is not writable")
    except OSError as exc:
        problems.append(f"figures directory {figures}: {exc.strerror}")
    if params.get("mode") != "replay":
        return problems
    for nb, parameters in declared.items():
        try:
            value = {k: params.get(k, ast.literal_eval(v["default"])) for k, v in parameters.items()
                     if k == "runs_dir" or "campaign" in k}
        except (ValueError, SyntaxError):  # not a literal: check_conventions says so; the kernel decides
            continue
        if "runs_dir" not in value:
            continue
        runs = project.resolve(value.pop("runs_dir"), start=nb.parent)
        if not runs.is_dir():
            problems.append(f"runs directory {runs} does not exist")  # said once for every notebook
            continue
        for name in (c for v in value.values() for c in (v if isinstance(v, list) else [v]) if c):
            if not (runs / str(name)).is_dir():
                problems.append(f"{nb.name}: no campaign {name} in {runs}")
    return list(dict.fromkeys(problems))


def replay_jobs(n_notebooks: int) -> int:
    """How many notebooks a replay executes side by side: one more than the cores (each kernel also
    waits, on its start and on papermill's messages: on 2 cores 3 at once replayed the 14 in 20 s,
    2 at once in 23 s, 4 in 20 s with more CPU), at most one per notebook."""
    return max(1, min((os.cpu_count() or 1) + 1, n_notebooks))


@dataclass(frozen=True)
class Places:
    """Where a batch reads and writes; None: the default run_notebooks names for each."""
    notebooks_dir: Path | None = None  # the project's notebooks/
    output_dir: Path | None = None     # executed copies: notebooks/executed/
    figures_dir: Path | None = None    # the project's figures/
    runs_dir: Path | None = None       # each notebook's own default (data/runs)
    results_doc: Path | None = None    # docs/results.md beside the figures directory


def run_notebooks(mode: str = "replay", *, places: Places = Places(), profile_name: str | None = None,
                  duration: int | None = None, repetitions: int | None = None, testbed: str | None = None,
                  jobs: int | None = None) -> Path:
    """Every section notebook (replay, or run with a profile, its duration and repetitions when
    given), then figures/index.html and docs/results.md (places.results_doc; default:
    docs/results.md beside the figures directory, i.e. the repository's docs/results.md for the
    default figures/).

    Replay executes `jobs` notebooks side by side (default: one more than the cores; each writes only its own
    figures and meta file, and the report is built once all have ended). Run mode executes them one
    after another, in order: two live notebooks at once would load each other's measurements.

    A notebook that fails is reported and the others still run (a live batch takes most of an
    hour: one section's failure should not cost the rest); the report is built from what ran, and
    NotebookExecutionError names the failures at the end."""
    name = profile_name or "quick"
    overrides = {"duration": duration, "repetitions": repetitions}
    notebooks = section_notebooks(places.notebooks_dir)
    # asked for: the project's figures/ unless named (a notebook's own default is beside its output)
    figures_dir = Path(places.figures_dir or project.root(notebooks[0].parent) / "figures")
    params = run_parameters(mode, name, figures_dir, overrides, places.runs_dir, testbed)
    output_dir = places.output_dir or notebooks[0].parent / "executed"
    if mode == "run" and jobs not in (None, 1):
        raise ValueError(f"jobs={jobs}: live notebooks run one at a time (side by side they would load each "
                         f"other's measurements)")
    jobs = 1 if mode == "run" else (jobs or replay_jobs(len(notebooks)))
    declared = {nb: check_declared(nb, params) for nb in notebooks}  # all checked before the first one runs
    if problems := preflight(declared, params, figures_dir):
        raise NotebookExecutionError(f"nothing ran: {len(problems)} problems found before any kernel started:\n"
                                     + "\n".join(problems))
    failures, start = [], time.time()
    what = f"{mode}{', ' + name + ' profile' if mode == 'run' else ''}"
    for i, (nb, status, seconds) in enumerate(_execute_all(notebooks, params, output_dir, jobs, what), 1):
        log.info("[%d/%d] %s: %s in %.0f s", i, len(notebooks), nb.name, status, seconds)
        if status != "ok":
            failures.append(f"{nb.name}: {status}")
    # lazy: the report's pandas and verdicts (0.8 s), which replay's workers (importing this module) never need
    from . import report
    figures = figures_dir  # where the kernels wrote
    out = report.build(figures)
    doc = report.write_results(figures, places.results_doc or figures.parent / "docs" / "results.md")
    log.info("results: %s", doc)
    log.info("%d of %d notebooks ran in %.0f s%s", len(notebooks) - len(failures), len(notebooks),
             time.time() - start, f" ({jobs} side by side)" if jobs > 1 else "")
    if failures:
        raise NotebookExecutionError(f"{len(failures)} of {len(notebooks)} notebooks failed (executed copies in "
                                     f"{output_dir}; report built from the others): " + "; ".join(failures))
    return out


def _execute_all(notebooks: list[Path], params: dict, output_dir: Path, jobs: int, what: str):
    """(notebook, status, seconds) for each notebook as it ends. jobs > 1: worker processes, started
    fresh (spawn: papermill changes the working directory and holds ZeroMQ sockets, neither of
    which threads or a forked copy of this process may share)."""
    keep = params.get("mode") == "replay"  # a replay keeps each worker's kernel (kept_kernel.py)
    if jobs == 1:
        try:
            for nb in notebooks:
                log.info("%s (%s)", nb.name, what)
                yield (nb, *execute_with_status(nb, params, output_dir, keep))
        finally:
            if keep:
                kept_kernel.shutdown()
        return
    log.info("%d notebooks (%s), %d side by side", len(notebooks), what, jobs)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=batch_kernel.start_worker, initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(execute_with_status, nb, params, output_dir, keep): nb for nb in notebooks}
        for future in as_completed(futures):
            yield (futures[future], *future.result())


def execute_with_status(notebook: Path, parameters: dict, output_dir: Path, keep_kernel: bool = False
                        ) -> tuple[str, float]:
    """execute(), with a cell's error turned into a status ("failed: Name: message") and the time taken."""
    t0 = time.time()
    try:
        execute(Path(notebook), parameters, output_dir, **({"keep_kernel": True} if keep_kernel else {}))
        status = "ok"
    except pm.PapermillExecutionError as exc:
        status = f"failed: {exc.ename}: {exc.evalue}"
    return status, time.time() - t0
