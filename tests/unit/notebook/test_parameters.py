"""A notebook refuses parameters papermill injected that its parameters cell does not declare (papermill
itself only warns), read from the kernel's input history; its path parameters resolve against the
project root."""
import pytest

from hostnet import project
from hostnet.notebook import parameters

PARAMS = 'mode = "replay"\nruns_dir = "data/runs"   # a comment\nsizes_kb = [1, 2]\n'


def test_an_undeclared_injected_parameter_is_named():
    injected = '# Parameters\nmode = "run"\nsize_kb = [3]\n'
    assert parameters.undeclared(["", PARAMS, injected, "notebook.refuse_undeclared()"]) == ["size_kb"]
    declared_only = '# Parameters\nmode = "run"\nsizes_kb = [3]\n'
    assert parameters.undeclared(["", PARAMS, declared_only, "this cell"]) == []


def test_without_an_injected_cell_nothing_is_refused():
    # JupyterLab: the parameters cell ran just before this one; or a first cell run on its own
    assert parameters.undeclared(["", PARAMS, "this cell"]) == []
    assert parameters.undeclared(["", "this cell"]) == []


class FakeShell:
    def __init__(self, *cells):
        self.history_manager = type("H", (), {"input_hist_raw": ["", *cells]})()


def test_injected_values_are_read_as_papermill_wrote_them_and_its_own_paths_are_not_undeclared():
    injected = '# Parameters\nsizes_kb = [200]\nPAPERMILL_OUTPUT_PATH = "/tmp/o.ipynb"\nratio = 0.5\n'
    history = ["", PARAMS, injected, "this cell"]
    assert parameters.injected(history) == {"sizes_kb": [200], "PAPERMILL_OUTPUT_PATH": "/tmp/o.ipynb", "ratio": 0.5}
    assert parameters.undeclared(history) == ["ratio"]
    annotated = 'mode: str = "replay"\nsizes_kb: list = [1]  # KB\n'
    assert parameters.assigned(annotated) == {"mode": '"replay"', "sizes_kb": "[1]"}


def test_refuse_undeclared_raises_with_what_the_notebook_declares():
    shell = FakeShell(PARAMS, '# Parameters\nfigures_dirr = "/tmp/x"\n', "this cell")
    with pytest.raises(parameters.UndeclaredParameterError, match="figures_dirr.*it declares mode, runs_dir, sizes_kb"):
        parameters.refuse_undeclared(shell)
    assert parameters.refuse_undeclared(FakeShell(PARAMS, '# Parameters\nmode = "run"\n', "this cell")) == {
        "mode": "run"}  # declared: fine, and what was injected


def test_paths_resolve_against_the_project_root(tmp_path, monkeypatch):
    monkeypatch.setenv(project.ENV, str(tmp_path))
    runs, reference, figures = parameters.paths("data/runs", "", "/abs/figures")
    assert (runs, figures) == (tmp_path.resolve() / "data" / "runs", project.Path("/abs/figures"))
    assert reference == project.packaged("reference")
    assert parameters.path("figures") == tmp_path.resolve() / "figures"


def test_outside_any_project_a_relative_runs_dir_is_one_error_naming_the_ways_out(tmp_path, monkeypatch):
    """#31: plain papermill from another directory ended in `FileNotFoundError: no campaign
    /home/<user>/elsewhere/data/runs/...`, with no word of HOSTNET_ROOT."""
    from conftest import REPO
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(project.ENV, raising=False)
    assert not project.found()
    with pytest.raises(parameters.NoProject, match=r"no hostnet project at or above .*HOSTNET_ROOT is not set: "
                                                 r"set HOSTNET_ROOT=<a checkout>.*absolute path") as exc:
        parameters.paths("data/runs", "", "figures")
    assert "\n" not in str(exc.value)
    runs, _, figures = parameters.paths(str(REPO / "data" / "runs"), "", "figures")  # absolute: as given
    assert runs == REPO / "data" / "runs" and figures == tmp_path / "figures"
    monkeypatch.setenv(project.ENV, str(REPO))
    assert project.found() and parameters.paths("data/runs", "", "figures")[0] == REPO / "data" / "runs"


def test_a_live_run_takes_the_live_options_its_kernel_started_with_and_a_replay_ignores_them(monkeypatch):
    from hostnet.measure.options import ENV, LiveOptions
    monkeypatch.setenv(ENV["steering"], "rps")
    monkeypatch.setenv(ENV["top_up_runs"], "7")
    run = parameters.start("02-rx-buffer.ipynb", "run", FakeShell(PARAMS, "this cell"))
    monkeypatch.setenv(ENV["steering"], "none")  # read once, at start: a later change is not seen
    live = run.live("lab1")
    assert (live.testbed, live.steering, live.top_up_runs) == ("lab1", "rps", 7)
    monkeypatch.setenv(ENV["steering"], "irq")  # a value a live run refuses
    replay = parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, "this cell"))
    assert replay.live("embedded") == LiveOptions()
