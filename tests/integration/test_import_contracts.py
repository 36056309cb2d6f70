"""The floors' import contracts (pyproject.toml's [tool.importlinter], checked by import-linter):
the tree keeps them, and each contract breaks on the import it exists to stop, type-only ones included."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path, *contracts: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    only = [a for c in contracts for a in ("--contract", c)]
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache", *only], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_tree_keeps_every_contract():
    out = lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "6 kept, 0 broken" in out.stdout


@pytest.fixture
def tree(tmp_path):
    """A copy of hostnet's Python files and the contracts, to plant a bad import in."""
    shutil.copytree(REPO / "hostnet", tmp_path / "hostnet", ignore=lambda d, names: [
        n for n in names if not n.endswith(".py") and not (Path(d) / n).is_dir() or n == "__pycache__"])
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    return tmp_path


def plant(tree: Path, module: str, line: str) -> None:
    path = tree / module
    path.write_text(path.read_text() + "\n" + line + "\n")


@pytest.mark.parametrize("module, line, contract", [
    # a floor reaching up: knobs would depend on how experiments run
    ("hostnet/knobs/base.py", "from ..measure import runner  # noqa", "floors"),
    # an import for annotations only counts too
    ("hostnet/analysis/metrics.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                    "    from ..measure.runner import PendingRun  # noqa", "floors"),
    # two floors side by side that must not lean on each other
    ("hostnet/charts/plots.py", "from ..measure import config  # noqa", "floors"),
    # the shared ground pulling in a floor above it
    ("hostnet/store/reading.py", "from ..testbed import base  # noqa", "floors"),
    ("hostnet/schema.py", "from . import hosts  # noqa", "floors"),
    # the store running a command (it did, for git's commit) or deciding which runs analysis uses
    ("hostnet/store/rundir.py", "from ..hosts import LocalHost  # noqa", "store-files-only"),
    # analysis reaching a host, directly or through a floor below that does (probes -> hosts)
    ("hostnet/analysis/metrics.py", "from ..hosts import LocalHost  # noqa", "analysis-touches-no-host"),
    ("hostnet/analysis/ledger.py", "from ..probes import perf  # noqa", "analysis-touches-no-host"),
    # deriving rows reaching a host, directly or through a floor below (native's builds, knobs)
    ("hostnet/derive/tidy.py", "from ..native import build  # noqa", "derive-offline"),
    ("hostnet/derive/cpu.py", "from ..knobs import KNOBS  # noqa", "derive-offline"),
    # deriving rows is below measuring: it must not reach up for the runner
    ("hostnet/derive/workloads.py", "from ..measure import udp_loss  # noqa", "floors"),
    # a process started outside the Host seam
    ("hostnet/measure/runner.py", "import subprocess  # noqa", "commands-through-hosts"),
    ("hostnet/testbed/guests.py", "from fabric import Connection  # noqa", "commands-through-hosts"),
    # a circle inside one floor (sweep imports config)
    ("hostnet/measure/config.py", "from . import sweep  # noqa", "no-circles"),
])
def test_each_contract_breaks_on_the_import_it_forbids(tree, module, line, contract):
    assert lint(tree).returncode == 0  # the copy keeps them before the plant
    plant(tree, module, line)
    assert lint(tree).returncode != 0
    out = lint(tree, contract)  # the contract named is among the broken (an upward import is a circle too)
    assert out.returncode != 0 and "0 kept, 1 broken" in out.stdout, out.stdout


def test_a_module_on_no_floor_breaks_the_floors(tree):
    """The floors are exhaustive: a new top-level module of hostnet must be placed on one."""
    (tree / "hostnet" / "helpers.py").write_text('"""A module no floor names."""\n')
    out = lint(tree, "floors")
    assert out.returncode != 0 and "hostnet.helpers" in out.stdout, out.stdout
