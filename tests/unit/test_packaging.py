"""How hostnet installs: environment.yml is pyproject.toml's dependency set, every dependency has a
floor that scripts/floors.py pins (and scripts/test-floors.sh tests), JupyterLab is an extra, the
license is an SPDX string with its file, CITATION.cff cites the tool and the paper, the wheel
ships what the code reads through importlib.resources, and uv.lock satisfies pyproject.toml."""
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from hostnet import __version__

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _requirement(text: str) -> tuple[str, str]:
    name, spec = re.match(r"^\s*([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*(.*)$", text.split("#")[0]).groups()
    return name.lower(), spec.replace(" ", "")


PIP_ONLY = {"virtme-ng"}


def test_environment_yml_is_pyprojects_dependency_set():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    wanted = [*PROJECT["dependencies"], *(r for extra in PROJECT["optional-dependencies"].values() for r in extra)]
    wanted = {_requirement(r) for r in wanted if _requirement(r)[0] != PROJECT["name"]}
    listed = {_requirement(d) for d in conda} - {("pip", "")}
    # virtme-ng (the rehearsal extra) is not on conda-forge: pip installs it with `-e .[dev]`
    assert listed == {r for r in wanted if r[0] not in PIP_ONLY} | {("python", PROJECT["requires-python"])}
    assert PIP_ONLY <= {r[0] for r in wanted}
    assert pip == ["-e .[dev]"]  # hostnet itself with the dev extra, as `make install`


def test_jupyterlab_is_an_extra_and_nothing_in_hostnet_imports_it():
    assert not any(_requirement(r)[0] == "jupyterlab" for r in PROJECT["dependencies"])
    assert [_requirement(r)[0] for r in PROJECT["optional-dependencies"]["lab"]] == ["jupyterlab"]
    assert "hostnet[lab]" in PROJECT["optional-dependencies"]["dev"]
    imports = re.compile(r"^\s*(import|from) jupyterlab", re.M)
    users = [p for p in (REPO / "hostnet").rglob("*.py") if imports.search(p.read_text())]
    assert users == []


def _floors_module():
    spec = importlib.util.spec_from_file_location("floors", REPO / "scripts" / "floors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floors_pin_every_dependency_at_its_lower_bound():
    pins = dict(line.split("==") for line in _floors_module().floors(PYPROJECT))
    assert pins["pandas"] == "2.2" and pins["numpy"] == "1.26" and pins["altair"] == "5.5"
    assert "hostnet" not in pins and pins["jupyterlab"] == "4.2"
    every = {_requirement(r)[0] for r in [*PROJECT["dependencies"],
                                          *(r for extra in PROJECT["optional-dependencies"].values() for r in extra)]}
    every -= {"hostnet"}
    assert set(pins) == every


def test_a_dependency_without_a_floor_is_refused():
    doc = {"project": {"name": "hostnet", "dependencies": ["pandas>=2.2,<4", "numpy<3"]}}
    with pytest.raises(SystemExit, match="no floor.*numpy<3"):
        _floors_module().floors(doc)


def test_the_license_is_an_spdx_string_and_its_file_ships():
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    build = PYPROJECT["build-system"]["requires"]
    assert build == ["hatchling>=1.27"]  # the first hatchling that reads project.license as SPDX


def test_citation_cites_this_version_and_the_paper():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["version"] == __version__
    paper = cff["references"][0]
    assert paper["title"] == "Understanding Host Network Stack Overheads" and paper["doi"] == "10.1145/3452296.3472888"
    assert [a["family-names"] for a in paper["authors"]] == ["Cai", "Chaudhary", "Vuppalapati", "Hwang", "Agarwal"]


def test_the_wheel_ships_every_file_read_through_resources():
    """hatchling puts the whole package in the wheel but what .gitignore names: no data file read
    through importlib.resources may be ignored (the wheel itself is built in tests/notebooks/test_wheel.py)."""
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["hostnet"]
    shipped = [str(p.relative_to(REPO)) for d in ("reference", "taxonomy", "native", "assets", "templates", "sweeps")
               for p in (REPO / "hostnet" / d).iterdir() if p.is_file()]
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", *shipped],
                             capture_output=True, text=True).stdout.split()
    assert len(shipped) > 10 and ignored == []


def test_the_lock_file_satisfies_pyproject():
    """#31: make venv installs uv.lock's exact versions; a pyproject.toml changed without `uv lock`
    would leave them behind (make install's `uv sync --locked` refuses that too)."""
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        pytest.skip("uv is not installed in this venv (make venv installs it)")
    res = subprocess.run([str(uv), "lock", "--check", "--offline"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-500:]
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    assert next(p for p in lock["package"] if p["name"] == "hostnet")["source"] == {"editable": "."}
