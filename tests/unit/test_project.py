"""The project root comes from $HOSTNET_ROOT or the working directory (never the package's location),
relative paths resolve against it, and the reference data is read from the package."""
import ast

from conftest import REPO
from hostnet import project


def _checkout(tmp_path):
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    return tmp_path


def test_the_root_is_found_upward_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(project.ENV, raising=False)
    root = _checkout(tmp_path)
    assert project.root(root / "notebooks") == root.resolve()
    monkeypatch.chdir(root / "notebooks")
    assert project.root() == root.resolve()
    assert project.resolve("data/runs") == root.resolve() / "data" / "runs"
    assert project.resolve("/abs/where") == project.Path("/abs/where")


def test_a_path_inside_the_project_is_shown_relative_to_its_root_so_stored_outputs_do_not_depend_on_the_clone(
        tmp_path, monkeypatch):
    monkeypatch.delenv(project.ENV, raising=False)
    root = _checkout(tmp_path / "co")
    (root / "data" / "p.txt").write_text("x")
    assert project.shown(root / "data" / "p.txt", start=root / "notebooks") == "data/p.txt"
    assert project.shown(tmp_path / "outside.txt", start=root) == str(tmp_path / "outside.txt")


def test_the_environment_names_the_root_and_without_a_checkout_it_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(project.ENV, raising=False)
    (tmp_path / "elsewhere").mkdir()
    assert project.root(tmp_path / "elsewhere") == (tmp_path / "elsewhere").resolve()
    monkeypatch.setenv(project.ENV, str(_checkout(tmp_path / "co")))
    assert project.root(tmp_path / "elsewhere") == (tmp_path / "co").resolve()


def test_reference_data_comes_from_the_package_unless_a_directory_is_named(tmp_path):
    shipped = project.reference_dir()
    assert shipped == REPO / "hostnet" / "reference"
    assert (shipped / "findings.csv").read_text().startswith("id,")
    # the checkout's data/reference is a link to the same files, so docs naming it stay true
    assert (REPO / "data" / "reference").resolve() == shipped.resolve()
    assert project.reference_dir(tmp_path) == tmp_path


def test_no_module_finds_data_or_figures_from_its_own_location():
    """__file__ is the package's location (site-packages once installed): only the code's own
    provenance (measure.provenance.git_commit) and the C tools' sources and build cache may use it."""
    allowed = {"hostnet/measure/provenance.py", "hostnet/native/__init__.py"}
    users = set()
    for path in (REPO / "hostnet").rglob("*.py"):
        if any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(ast.parse(path.read_text()))):
            users.add(str(path.relative_to(REPO)))
    assert users <= allowed, users - allowed
