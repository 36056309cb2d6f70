"""Execute the notebooks with papermill (batch mode) and rebuild figures/index.html."""
from __future__ import annotations

from pathlib import Path

from . import report

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
QUICK = {"duration": 2, "warmup": 1, "repetitions": 1}


class NotebookParameterError(ValueError):
    pass


def declared_parameters(notebook: Path) -> dict:
    import papermill as pm
    return pm.inspect_notebook(str(notebook))


def execute(notebook: Path, parameters: dict, output_dir: Path) -> Path:
    """Run one notebook; a parameter it does not declare is an error, not silently ignored."""
    import papermill as pm
    declared = declared_parameters(notebook)
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise NotebookParameterError(f"{notebook.name} does not declare {', '.join(unknown)}; "
                                     f"it declares {', '.join(declared)}")
    output_dir.mkdir(parents=True, exist_ok=True)
    out = output_dir / notebook.name
    pm.execute_notebook(str(notebook), str(out), parameters=parameters, cwd=str(notebook.parent),
                        progress_bar=False, kernel_name="python3")
    return out


def run_notebooks(mode: str = "replay", duration: int | None = None, repetitions: int | None = None,
                  quick: bool = False, notebooks_dir: Path = NOTEBOOKS,
                  output_dir: Path | None = None, figures_dir: Path | None = None) -> Path:
    params: dict = {"mode": mode}
    if mode == "run":
        params["campaign"] = ""  # a new campaign, not the recorded one
        params.update(QUICK if quick else {})
        if duration is not None and not quick:
            params["duration"] = duration
        if repetitions is not None and not quick:
            params["repetitions"] = repetitions
    if figures_dir is not None:
        params["figures_dir"] = str(Path(figures_dir).resolve())
    output_dir = output_dir or notebooks_dir / "executed"
    for nb in sorted(notebooks_dir.glob("[0-9][0-9]-*.ipynb")):
        execute(nb, params, output_dir)
    return report.build(figures_dir or REPO / "figures")
