"""The batch kernel (hostnet.notebook.batch_kernel) as papermill starts it: ipykernel without the
iri grammars, no TCP warning, no interrupt at shutdown; and a batch's worker or kernel ends when the
process that started it is killed. Its argv rewriting is a unit test (tests/unit/notebook/test_batch.py)."""
import json

from conftest import REPO
from hostnet.notebook import batch


def test_a_batch_kernel_prints_no_tcp_warning_and_no_interrupt_on_shutdown(tmp_path, capfd):
    """papermill through batch.execute: ipykernel warned about TCP without encryption once per
    notebook, and jupyter_client's interrupt before shutdown logged a KeyboardInterrupt."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("print(x + 1)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "tiny.ipynb").write_text(nbformat.writes(nb))
    for _ in range(3):  # the interrupt's error was a race: a few runs
        out = batch.execute(tmp_path / "tiny.ipynb", None, tmp_path / "out")
        assert json.loads(out.read_text())["cells"][1]["outputs"][0]["text"] == ["2\n"]
    err = capfd.readouterr().err
    assert "without encryption" not in err and "KeyboardInterrupt" not in err, err


def test_a_batch_kernel_is_ipykernel_without_the_iri_grammars(tmp_path):
    """hostnet.notebook.batch_kernel: the kernelspec's `-m ipykernel_launcher` runs as hostnet.notebook.batch_kernel,
    where jsonschema finds rfc3987_syntax absent (its ~40 grammars compiled at import were a fifth of
    a replayed notebook), so it has no "iri" checker; the others are what the installed packages give
    (at the dependency floors there is no "uri" checker either, kernel or not)."""
    import nbformat
    from hostnet.notebook import batch_kernel
    argv = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    assert batch_kernel.kernel_argv(argv) == ["/usr/bin/python3", "-m", "hostnet.notebook.batch_kernel", "-f",
                                              "{connection_file}"]
    other = ["/opt/conda/bin/xeus-python", "-f", "{connection_file}"]
    assert batch_kernel.kernel_argv(other) == other
    code = ("import sys, jsonschema\n"
            "checker = jsonschema.Draft7Validator.FORMAT_CHECKER\n"
            "print(sys.modules.get('rfc3987_syntax', 'not imported'), 'iri' in checker.checkers,"
            " sys.argv[0].endswith('batch_kernel.py'))")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "k.ipynb").write_text(nbformat.writes(nb))
    out = batch.execute(tmp_path / "k.ipynb", None, tmp_path / "out")
    assert json.loads(out.read_text())["cells"][0]["outputs"][0]["text"] == ["None False True\n"]


def test_a_batch_worker_or_kernel_ends_when_the_process_that_started_it_is_killed(tmp_path):
    """#45: kill -9 of a replaying `hostnet figures` left its ProcessPool workers running. Each
    watches its parent (batch_kernel.exit_with_parent) and ends after it; a kernel ends after the
    worker that started it (ipykernel's own parent poller)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    child_pid = tmp_path / "child.pid"
    (tmp_path / "child.py").write_text(
        "import os, sys, time\n"
        "from hostnet.notebook.batch_kernel import exit_with_parent\n"
        "exit_with_parent(poll_s=0.05)\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n")
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2]])\n"
        "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(tmp_path / "child.py"), str(child_pid)],
                              cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 30
        while not child_pid.exists() or not child_pid.read_text():
            assert time.monotonic() < deadline and parent.poll() is None, "the child never started"
            time.sleep(0.05)
        pid = int(child_pid.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, f"the orphaned child {pid} still runs 10 s after its parent died"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
        if child_pid.exists() and child_pid.read_text() and _alive(int(child_pid.read_text())):
            os.kill(int(child_pid.read_text()), signal.SIGKILL)  # the test's own child, by its pid


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan is reaped by init, or by pytest's process as a subreaper)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
