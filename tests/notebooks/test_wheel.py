"""The wheel, not the checkout: built from this checkout, installed in a fresh venv (no editable link,
nothing of the checkout on sys.path), it runs breakdown, compare, the notebook check, plain
papermill replays of notebooks 02 and 01 in a copied checkout and builds the report. Package data
(reference numbers, taxonomies) comes from site-packages, the project root from the working directory.

The fresh venv sees the test venv's installed libraries through a .pth file (everything but hostnet
and JupyterLab, an extra: the CLI and papermill must run without it),
and pip installs the wheel with --no-index: its dependency metadata must be satisfied by them, and
nothing is downloaded except the build backend (hatchling, build isolation). The wheel is built from a
read-only copy of the sources, which the build leaves as it was. About a minute."""
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

from conftest import REPO

RX = "20261128-053016-rx-buffer-embedded"  # notebook 02's campaign
RX_OLD = "20261123-rx-buffer-embedded"  # compared with it
SINGLE = "20261128-023507-single-flow-embedded"  # notebook 01's campaign


def _run(argv, cwd, env, timeout=300):
    res = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{argv}: {res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def _left_out(name: str) -> bool:
    """hostnet's own entries (editable finder, dist-info) and JupyterLab (an extra: not installed here)."""
    name = name.lower()
    return (name.startswith(("hostnet", "__editable__", "_hostnet")) or name.endswith(".pth")
            or name == "jupyterlab" or name.startswith("jupyterlab-"))


def _libraries_without_hostnet(target: Path) -> Path:
    """The test venv's site-packages as links, but for what _left_out names."""
    target.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _left_out(entry.name):
            (target / entry.name).symlink_to(entry)
    return target


def test_the_wheel_replays_a_notebook_of_a_copied_checkout(tmp_path, summary_line):
    t0 = time.time()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HOSTNET_ROOT")}
    # Built from a read-only copy of the sources, which the build must leave as it was (#31: setuptools
    # wrote hostnet.egg-info into the checkout, so a read-only one could not be installed).
    source = tmp_path / "source"
    shutil.copytree(REPO / "hostnet", source / "hostnet", ignore=shutil.ignore_patterns("__pycache__", "build"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(["chmod", "-R", "a-w", str(source)], check=True)
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path / "wheels", source], tmp_path,
         env)
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == before
    subprocess.run(["chmod", "-R", "u+w", str(source)], check=True)  # for pytest to remove it
    wheel = next((tmp_path / "wheels").glob("hostnet-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [f"hostnet/{p.relative_to(REPO / 'hostnet')}" for d in ("reference", "taxonomy", "native", "assets")
            for p in (REPO / "hostnet" / d).iterdir() if p.is_file()]
    assert set(data) <= names and not any("__pycache__" in n or "/build/" in n for n in names)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, env)
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).strip())
    (site / "libraries.pth").write_text(f"{_libraries_without_hostnet(tmp_path / 'libraries')}\n")
    _run([py, "-m", "pip", "install", "--quiet", "--no-index", wheel], tmp_path, env)

    checkout = tmp_path / "copy"  # what a researcher clones: notebooks and recorded data, no hostnet/
    shutil.copytree(REPO / "notebooks", checkout / "notebooks", ignore=shutil.ignore_patterns("executed"))
    for campaign in (RX, RX_OLD, SINGLE):
        shutil.copytree(REPO / "data" / "runs" / campaign, checkout / "data" / "runs" / campaign)
    where = _run([py, "-c", "import hostnet, hostnet.project as p; print(hostnet.__file__); print(p.reference_dir())"],
                 checkout, env).split()
    assert all(Path(w).is_relative_to(site) for w in where), where
    assert (Path(where[1]) / "findings.csv").exists()
    no_lab = subprocess.run([py, "-c", "import jupyterlab"], capture_output=True, text=True, env=env)
    assert "No module named 'jupyterlab'" in no_lab.stderr  # what follows runs without the lab extra

    bin_ = venv / "bin"
    run = next(p for p in (checkout / "data" / "runs" / RX).iterdir() if (p / "manifest.json").exists())
    if not (run / "raw").is_dir():  # a packed run: its raw files unpacked as a person would
        assert "files unpacked from raw.tar.xz" in _run([bin_ / "hostnet", "data", "unpack", run], checkout, env)
    out = _run([bin_ / "hostnet", "breakdown", run / "raw" / "local.perf_report.txt"], checkout, env)
    assert "CPU 0 sender, CPU 1 receiver" in out and "taxonomy linux-6/" in out
    out = _run([bin_ / "hostnet", "compare", RX_OLD, RX], checkout, env)
    assert "config=tsogro, rx_buffer_kb=100" in out and "tpc_gbps[both]" in out and "B-A" in out
    out = _run([bin_ / "hostnet", "notebooks", "check"], checkout / "notebooks", env)
    assert out.count(": ok") == 15
    # plain papermill from the copy's root: no --cwd, no parameters (its console script is the test
    # venv's, whose interpreter is not this venv's: the module is the same command)
    _run([py, "-m", "papermill", "--no-progress-bar", "notebooks/02-rx-buffer.ipynb", tmp_path / "02.ipynb"],
         checkout, env)
    meta = (checkout / "hostnet-figures" / "02-rx-buffer.meta.json").read_text()  # figures_dir "": not figures/
    assert RX in meta and '"verdicts"' in meta and not (checkout / "figures").exists()
    assert (checkout / "hostnet-figures" / "rx-buffer-latency.svg").stat().st_size > 1000
    # the paper's main experiment into the figures/ it names, then the report over both notebooks' figures
    _run([py, "-m", "papermill", "--no-progress-bar", "notebooks/01-single-flow.ipynb", tmp_path / "01.ipynb",
          "-p", "figures_dir", "hostnet-figures"], checkout, env)
    assert SINGLE in (checkout / "hostnet-figures" / "01-single-flow.meta.json").read_text()
    index = checkout / _run([py, "-c", "from hostnet.notebook import report; print(report.build('hostnet-figures'))"],
                            checkout, env).strip()
    html = index.read_text()
    assert index == checkout / "hostnet-figures" / "index.html" and SINGLE in html and RX in html
    summary_line(f"wheel test: build, fresh venv, install, four commands, notebooks 01 and 02 and the report "
                 f"in {time.time() - t0:.0f} s")
