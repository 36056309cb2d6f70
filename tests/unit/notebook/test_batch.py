"""hostnet.notebook.batch: profiles, the conventions checker, batch mode (with papermill's execute
replaced). The notebooks themselves are checked and executed in tests/notebooks/; notebook sweeps are
test_sweeps.py's (live ones in tests/live/); the batch kernel started for real is
tests/integration/test_batch_kernel.py's."""
import os
import contextlib
import json
import logging
from pathlib import Path

import pytest

from conftest import REPO
from hostnet.notebook import batch
from hostnet import cli

RX = REPO / "notebooks" / "02-rx-buffer.ipynb"


def test_run_parameters_follow_the_profile():
    quick = batch.run_parameters("run", "quick")
    assert quick == {"mode": "run", "campaign": "", "duration": 3, "warmup": 1, "repetitions": 3}
    paper = batch.run_parameters("run", "paper", overrides={"repetitions": 7, "duration": None})
    assert paper["duration"] == 20 and paper["repetitions"] == 7 and paper["warmup"] == 5
    assert batch.run_parameters("replay", "paper") == {"mode": "replay"}  # replay ignores profiles
    with pytest.raises(ValueError, match="unknown profile"):
        batch.run_parameters("run", "slow")


def test_conventions_report_what_is_missing(tmp_path):
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ['mode = "run"\n', 'campaign = ""\n']
    bad = tmp_path / "99-bad.ipynb"
    bad.write_text(json.dumps(nb))
    problems = batch.check_conventions(bad)
    assert "does not declare duration" in problems and "does not declare figures_dir" in problems
    assert any("not \"replay\"" in p for p in problems)


def test_conventions_refuse_computed_parameter_defaults(tmp_path):
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] += ['\n', 'sizes = [100 * 2 ** i for i in range(3)]\n', 'import os\n', 'flows: int = 4\n']
    bad = tmp_path / "98-computed.ipynb"
    bad.write_text(json.dumps(nb))
    problems = batch.non_literal_parameters(bad)
    assert len(problems) == 2  # the annotated literal is fine
    assert "non-literal value: sizes = [100 * 2 ** i for i in range(3)]" in problems[0]
    assert "is not `name = literal`: import os" in problems[1]


def test_batch_run_mode_passes_the_profile_to_every_section_notebook(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(batch, "execute", lambda nb, params, out: calls.append((nb.name, params)))
    (tmp_path / "figs").mkdir()
    report = batch.run_notebooks(mode="run", profile_name="paper", repetitions=7, places=batch.Places(
        output_dir=tmp_path / "x", figures_dir=tmp_path / "figs", runs_dir=tmp_path / "runs"))
    assert [name for name, _ in calls] == [p.name for p in batch.section_notebooks()]
    assert "00-explore.ipynb" not in [name for name, _ in calls]
    for _, params in calls:
        assert params == {"mode": "run", "campaign": "", "duration": 20, "warmup": 5, "repetitions": 7,
                          "figures_dir": str((tmp_path / "figs").resolve()),
                          "runs_dir": str((tmp_path / "runs").resolve())}
    assert report == tmp_path / "figs" / "index.html"


def test_batch_run_mode_passes_one_testbed_to_every_section_notebook(tmp_path, monkeypatch):
    """`hostnet figures --mode run --testbed lab.yaml`: every section notebook declares `testbed` and
    gets the file's absolute path (papermill runs each from notebooks/); a name passes as it is."""
    calls = []
    monkeypatch.setattr(batch, "execute", lambda nb, params, out: calls.append((nb.name, params)))
    (tmp_path / "figs").mkdir()
    batch.run_notebooks(mode="run", testbed="lab.yaml", places=batch.Places(
        output_dir=tmp_path / "x", figures_dir=tmp_path / "figs", results_doc=tmp_path / "results.md"))
    assert len(calls) == 15 and {p["testbed"] for _, p in calls} == {str(Path("lab.yaml").resolve())}
    assert batch.run_parameters("run", testbed="lab1")["testbed"] == "lab1"
    assert "testbed" not in batch.run_parameters("run") and "testbed" not in batch.run_parameters("replay", testbed="x")
    for nb in batch.section_notebooks():
        assert batch.declared_parameters(nb)["testbed"]["default"] == '"embedded"', nb.name


def test_batch_mode_checks_every_notebook_before_running_any(tmp_path, monkeypatch):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "01-ok.ipynb").write_text(RX.read_text())
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ['mode = "replay"\n', 'campaign = "x"\n']
    (nbs / "02-short.ipynb").write_text(json.dumps(nb))
    ran = []
    monkeypatch.setattr(batch, "execute", lambda *a: ran.append(a))
    with pytest.raises(batch.NotebookParameterError, match="02-short.ipynb does not declare duration"):
        batch.run_notebooks(mode="run", places=batch.Places(notebooks_dir=nbs, figures_dir=tmp_path / "f"))
    assert ran == []


def test_batch_mode_runs_the_others_when_one_notebook_fails(tmp_path, monkeypatch):
    import papermill as pm
    ran, lines = [], []

    def execute(nb, params, out, keep_kernel=False):
        assert keep_kernel  # a replay keeps its kernel between notebooks (kept_kernel.py)
        ran.append(nb.name)
        if nb.name.startswith("04"):
            raise pm.PapermillExecutionError(3, 1, "boom", "RuntimeError", "testbed vanished", [])

    monkeypatch.setattr(batch, "execute", execute)
    (tmp_path / "figs").mkdir()
    with pytest.raises(batch.NotebookExecutionError,
                       match=r"1 of \d+ notebooks failed .*04-incast.ipynb: failed: RuntimeError: testbed vanished"), \
            _logged(batch.log, lines):
        places = batch.Places(output_dir=tmp_path / "x", figures_dir=tmp_path / "figs")
        batch.run_notebooks(mode="replay", places=places, jobs=1)  # in this process, where execute is replaced
    assert ran == [p.name for p in batch.section_notebooks()]  # the ones after 04 still ran
    assert (tmp_path / "figs" / "index.html").exists()  # the report is built from what ran
    assert lines[0] == "01-single-flow.ipynb (replay)" and lines[1] == f"[1/{len(ran)}] 01-single-flow.ipynb: ok in 0 s"
    assert f"[4/{len(ran)}] 04-incast.ipynb: failed: RuntimeError: testbed vanished in 0 s" in lines


@contextlib.contextmanager
def _logged(logger, lines: list):
    """What `logger` says at INFO, appended to `lines` while the block runs."""
    class Collect(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_live_batch_runs_one_notebook_at_a_time(tmp_path):
    with pytest.raises(ValueError, match="live notebooks run one at a time"):
        batch.run_notebooks(mode="run", places=batch.Places(output_dir=tmp_path / "x", figures_dir=tmp_path / "figs"),
                            jobs=2)
    assert batch.replay_jobs(14) == min(14, os.cpu_count() + 1) and batch.replay_jobs(1) == 1


def test_undeclared_parameter_is_an_error(tmp_path):
    nb = REPO / "notebooks" / "01-single-flow.ipynb"
    with pytest.raises(batch.NotebookParameterError, match="does not declare rx_buffer"):
        batch.execute(nb, {"rx_buffer": 1}, tmp_path)
    assert "mode" in batch.declared_parameters(nb)


def test_notebooks_come_from_the_project_root_and_none_there_is_an_error(tmp_path, monkeypatch):
    from hostnet import project
    monkeypatch.setenv(project.ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"no hostnet notebooks in {tmp_path}.*--root"):
        batch.section_notebooks()
    (tmp_path / "notebooks").mkdir()
    for name in ("00-explore.ipynb", "02-rx-buffer.ipynb"):
        (tmp_path / "notebooks" / name).write_text("{}")
    assert [p.name for p in batch.section_notebooks()] == ["02-rx-buffer.ipynb"]
    assert batch.default_runs_dir() == tmp_path.resolve() / "data" / "runs"


def test_the_cell_after_parameters_must_refuse_undeclared_parameters_and_resolve_paths(tmp_path):
    nb = json.loads((REPO / "notebooks" / "02-rx-buffer.ipynb").read_text())
    assert batch.first_cell_problems(REPO / "notebooks" / "02-rx-buffer.ipynb") == []
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[1]["source"] = ["from hostnet.sections import rx_buffer\n"]
    (tmp_path / "02.ipynb").write_text(json.dumps(nb))
    assert batch.first_cell_problems(tmp_path / "02.ipynb") == [
        'the cell after parameters does not call nb = notebook.start("02.ipynb", mode)',
        "the cell after parameters does not call "
        "runs_dir, reference_dir, figures_dir = nb.paths(runs_dir, reference_dir, figures_dir)"]


def test_a_replay_of_a_missing_runs_dir_or_campaign_fails_before_any_kernel_starts(tmp_path, monkeypatch, capsys):
    """#31: `hostnet figures --runs-dir /nonexistent` started all 14 kernels (38 s) and ended on an
    unrelated `[Errno 2] ... index.html`. Now nothing runs; the problems are the last lines."""
    import time
    ran = []
    monkeypatch.setattr(batch, "execute", lambda *a: ran.append(a))
    started = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        cli.main(["figures", "--runs-dir", str(tmp_path / "nonexistent"), "--figures-dir", str(tmp_path / "f")])
    assert exc.value.code == 2 and ran == [] and time.monotonic() - started < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"runs directory {tmp_path / 'nonexistent'} does not exist"
    assert "nothing ran: 1 problems found before any kernel started" in err[0]

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "20261128-024305-incast-embedded").mkdir()  # one recorded campaign of the fourteen
    declared = {nb: batch.declared_parameters(nb) for nb in batch.section_notebooks()}
    problems = batch.preflight(declared, {"mode": "replay", "runs_dir": str(runs)}, tmp_path / "f")
    assert f"04-incast.ipynb: no campaign 20261128-024305-incast-embedded in {runs}" not in problems
    assert f"13-time-budget.ipynb: no campaign 20261126-114855-time-budget-embedded in {runs}" in problems
    assert f"14-end-host-loss.ipynb: no campaign 20261128-025145-congestion-control-embedded in {runs}" in problems
    assert batch.preflight(declared, {"mode": "replay"}, tmp_path / "f") == []  # the checkout's own data


def test_a_figures_dir_that_cannot_be_written_is_found_first(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    declared = {nb: batch.declared_parameters(nb) for nb in batch.section_notebooks()[:1]}
    problems = batch.preflight(declared, {"mode": "run"}, blocked / "figs")
    assert problems == [f"figures directory {blocked / 'figs'}: Not a directory"]
