"""A replay worker's kept kernel: each notebook after the first starts in a fresh session (no
variable of the one before, execution counts from 1, a warning shown again, the working directory,
environment and warning filters as the kernel started), with the modules it imported still loaded."""
import json

import nbformat
import pytest

from hostnet.notebook import batch, kept_kernel


def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, path)
    return path


def _text(output: dict) -> str:
    text = output.get("text") or output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _outputs(path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(c["execution_count"], "".join(_text(o) for o in c["outputs"])) for c in cells]


def _count_writes(monkeypatch, *modules) -> list:
    """The paths papermill's write_ipynb is called with, through these modules' names for it."""
    writes = []
    for module in modules:
        def counted(nb, path, *args, _write=module.write_ipynb, **kwargs):
            writes.append(path)
            return _write(nb, path, *args, **kwargs)
        monkeypatch.setattr(module, "write_ipynb", counted)
    return writes


@pytest.fixture
def kept():
    yield
    kept_kernel.shutdown()


def test_the_next_notebook_in_a_kept_kernel_starts_a_fresh_session_with_the_modules_loaded(tmp_path, kept):
    first = _notebook(tmp_path / "a.ipynb",
                      "import os, sys, warnings\nx = 41\nos.environ['HOSTNET_KEPT_TEST'] = '1'\nos.chdir('/')\n"
                      "warnings.simplefilter('ignore')\nimport tabnanny\nimport pandas as pd\n"
                      "pd.set_option('display.max_colwidth', 7)\nsys.path.insert(0, '/nowhere')\n"
                      "print(os.getpid(), 'tabnanny' in sys.modules)",
                      "x + 1")
    second = _notebook(tmp_path / "b.ipynb",
                       "import os, sys, warnings\nprint(os.getpid(), 'tabnanny' in sys.modules, 'x' in dir(), "
                       "os.environ.get('HOSTNET_KEPT_TEST'), os.getcwd() == %r)" % str(tmp_path),
                       "warnings.warn('shown in each notebook', UserWarning)",
                       "import pandas as pd\nprint(pd.get_option('display.max_colwidth'), '/nowhere' in sys.path, "
                       "get_ipython().history_manager.hist_file)")
    out = tmp_path / "out"
    batch.execute(first, None, out, keep_kernel=True)
    batch.execute(second, None, out, keep_kernel=True)
    a, b = _outputs(out / "a.ipynb"), _outputs(out / "b.ipynb")
    pid = a[0][1].split()[0]
    assert a == [(1, f"{pid} True\n"), (2, "42")]
    # the same kernel process, tabnanny still imported; no x, no environment variable, back in tmp_path
    assert b[0] == (1, f"{pid} True False None True\n")
    assert b[1][0] == 2 and "shown in each notebook" in b[1][1]  # the filter the first set is gone
    # pandas' display options and sys.path back; history in memory, not in the user's IPython profile
    assert b[2] == (3, "50 False :memory:\n")
    assert kept_kernel._kept["km"].hostnet_clients == []  # papermill's clients of the kernel stopped


def test_a_kernel_that_died_is_replaced(tmp_path, kept):
    nb = _notebook(tmp_path / "a.ipynb", "import os\nprint(os.getpid())")
    batch.execute(nb, None, tmp_path / "o1", keep_kernel=True)
    from jupyter_core.utils import run_sync
    run_sync(kept_kernel._kept["km"].shutdown_kernel)(now=True)  # as if it crashed
    batch.execute(nb, None, tmp_path / "o2", keep_kernel=True)
    assert _outputs(tmp_path / "o1" / "a.ipynb") != _outputs(tmp_path / "o2" / "a.ipynb")  # another process


def test_a_kept_kernel_replay_writes_its_notebook_when_it_ends_and_a_failed_one_with_its_error(tmp_path, kept,
                                                                                              monkeypatch):
    """papermill writes the whole notebook as every cell starts and ends; a replay writes it when it
    ends (the engine's final save and papermill's own), a failed one too, with the error shown; and
    what the reset before the second notebook kept is out of the garbage collector's walks."""
    import papermill as pm
    from papermill import engines, execute
    writes = _count_writes(monkeypatch, engines, execute)
    four = _notebook(tmp_path / "four.ipynb", "x = 1", "y = 2", "z = 3", "print(x + y + z)")
    out = tmp_path / "out"
    batch.execute(four, None, out, keep_kernel=True)
    assert len(writes) == 2 and _outputs(out / "four.ipynb")[-1] == (4, "6\n")
    writes.clear()
    failing = _notebook(tmp_path / "failing.ipynb", "import gc\nprint(gc.get_freeze_count() > 0)",
                        "raise ValueError('a cell that fails')", "print('never')")
    with pytest.raises(pm.PapermillExecutionError, match="a cell that fails"):
        batch.execute(failing, None, out, keep_kernel=True)
    written = json.loads((out / "failing.ipynb").read_text())
    shown = json.dumps(written["cells"])
    assert "a cell that fails" in shown and "never" not in "".join(
        _text(o) for c in written["cells"] for o in c.get("outputs", []))
    assert "True" in _text(next(c for c in written["cells"] if "gc.get_freeze_count" in "".join(c["source"]))
                           ["outputs"][0])
    assert len(writes) == 2  # the final save, and papermill's own with the error banner on top


def test_live_notebooks_keep_papermills_writes_as_cells_end(tmp_path, monkeypatch):
    """A live run's notebook (its own kernel) fills in as it measures: the writes stay."""
    from papermill import engines
    writes = _count_writes(monkeypatch, engines)
    nb = _notebook(tmp_path / "two.ipynb", "x = 1", "print(x)")
    batch.execute(nb, None, tmp_path / "out")
    assert len(writes) >= 5  # the start, each cell's start and end, the end
