"""The shape of the code: the section registry matches notebooks/ one to one, docs/layout.md
names every module under hostnet/ (and nothing that is not there), DESIGN.md's floors picture is
the floors contract and the page stays short, every import resolves (import circles and the
floors are import-linter's: tests/integration/test_import_contracts.py), and the rule that keeps
live tests in tests/live/ (tests/conftest.py) finds what breaks it; tests/unit/ mirrors hostnet/'s
packages."""
import ast
import importlib
import re
from pathlib import Path

import pytest

from conftest import REPO, live_rule_violations
from hostnet.sections import SECTIONS, section

HOSTNET = REPO / "hostnet"
ENTRY = re.compile(r"^( *)([\w.-]+/|[\w.-]+\.py)(?: {2,}|$)")


def test_every_notebook_has_a_registry_entry_and_every_entry_a_notebook():
    notebooks = {p.name for p in (REPO / "notebooks").glob("*.ipynb")}
    assert notebooks == set(SECTIONS)


def test_registry_entries_name_modules_that_import_and_titles_that_are_unique():
    for entry in SECTIONS.values():
        module = entry.load_module()
        assert module.__doc__, entry.module
        assert entry.title and entry.paper
    assert len({s.title for s in SECTIONS.values()}) == len(SECTIONS)


def test_every_section_module_is_in_the_registry():
    helpers = {"common", "grid_view", "replay", "tables"}
    modules = {f"hostnet.sections.{p.stem}" for p in (HOSTNET / "sections").glob("*.py")
               if p.stem not in helpers | {"__init__"}}
    modules |= {f"hostnet.sections.{p.name}" for p in (HOSTNET / "sections").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    # receive_path is an experiment without a notebook (`hostnet receive-path`, docs/receive-path.md)
    assert modules == {s.module for s in SECTIONS.values()} | {"hostnet.sections.receive_path"}


def test_a_notebook_is_found_by_file_name_or_stem_and_an_unknown_one_is_refused():
    assert section("04-incast").notebook == "04-incast.ipynb"
    assert section("04-incast.ipynb").stem == "04-incast"
    with pytest.raises(KeyError, match="not a registered notebook"):
        section("99-nothing")


def design_tree() -> set[str]:
    """Paths named in docs/layout.md's tree, rebuilt from the indentation (2 spaces a level)."""
    text = (REPO / "docs" / "layout.md").read_text()
    block = text[text.index("```") + 3:]
    block = block[:block.index("```")]
    paths, stack = set(), []
    for line in block.splitlines():
        m = ENTRY.match(line)
        if not m or len(m.group(1)) % 2 or len(m.group(1)) // 2 > len(stack):
            continue  # a description's continuation line
        level = len(m.group(1)) // 2
        stack[level:] = [m.group(2)]
        paths.add("".join(stack))
    return paths


def test_the_layout_names_every_module_under_hostnet_and_only_those():
    named = {p for p in design_tree() if p.startswith("hostnet/")}
    on_disk = {str(p.relative_to(REPO)) for p in HOSTNET.rglob("*.py") if "__pycache__" not in p.parts}
    packages = {str(p.parent.relative_to(REPO)) + "/" for p in HOSTNET.rglob("__init__.py")}
    missing = sorted(on_disk - named - {f"{pkg}__init__.py" for pkg in packages if pkg in named})
    assert not missing, f"modules docs/layout.md does not name: {missing}"
    gone = sorted(p for p in named if p.endswith(".py") and p not in on_disk)
    gone += sorted(p for p in named if p.endswith("/") and not (REPO / p).is_dir())
    assert not gone, f"docs/layout.md names what does not exist: {gone}"


def test_the_layout_parser_reads_nesting_and_skips_continuations():
    assert {"hostnet/hosts/base.py", "hostnet/analysis/verdicts/rules.py", "hostnet/measure/runner.py",
            "tests/"} <= design_tree()


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def test_the_live_rule_names_each_test_on_the_wrong_side(tmp_path):
    live = tmp_path / "live"
    items = [("live/test_live_a.py::test_marked", live / "test_live_a.py", True),
             ("live/test_live_a.py::test_unmarked", live / "test_live_a.py", False),
             ("unit/test_a.py::test_marked", tmp_path / "unit" / "test_a.py", True),
             ("unit/test_a.py::test_unmarked", tmp_path / "unit" / "test_a.py", False),
             ("livery/test_b.py::test_unmarked", tmp_path / "livery" / "test_b.py", False)]
    assert live_rule_violations(items, live) == [
        "live/test_live_a.py::test_unmarked: under live/ but not marked live",
        "unit/test_a.py::test_marked: marked live but not under live/"]
    assert live_rule_violations([], live) == []


def _unresolved(module: str, names: list[str]) -> list[str]:
    """The names of `from module import names` that are neither attributes nor submodules."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return [f"{module} ({exc})"]
    out = []
    for name in names:
        if name != "*" and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                out.append(f"{module}.{name}")
    return out


def test_every_import_of_hostnet_resolves_including_those_inside_functions():
    """A moved module leaves no stale import behind, even one that only runs on a live path
    (a function-level `from .sshd import ...` once broke every SSH testbed after a move)."""
    stale = []
    sources = [p for d in ("hostnet", "tests", "bench") for p in (REPO / d).rglob("*.py")
               if "__pycache__" not in p.parts and "results" not in p.parts]
    for path in sources:
        name = _module_name(path) if path.is_relative_to(HOSTNET) else ""
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and name:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(parts + ([node.module] if node.module else []))
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "hostnet":
                module = node.module
            else:
                continue
            stale += [f"{path.relative_to(REPO)}:{node.lineno}: {s}"
                      for s in _unresolved(module, [a.name for a in node.names])]
    assert not stale, stale


def test_unit_tests_mirror_the_packages_without_a_package_prefix():
    """tests/unit/X/ exists only for a package hostnet/X/, and a file there is not named after X
    (test_parsers_counters.py): unit/ is a package, so names repeat across folders freely."""
    unit = REPO / "tests" / "unit"
    for folder in (p for p in unit.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        rel = folder.relative_to(unit)
        assert (HOSTNET / rel / "__init__.py").exists(), f"tests/unit/{rel}/ mirrors no package hostnet/{rel}/"
        assert (folder / "__init__.py").exists(), f"tests/unit/{rel}/ has no __init__.py"
        prefixed = [p.name for p in folder.glob(f"test_{folder.name}_*.py")]
        assert not prefixed, f"tests/unit/{rel}/: {prefixed} repeat the package's name"


def test_every_stored_run_is_packed_so_the_tree_stays_small():
    # A clone pays for every file: a run committed with its raw/ unpacked (hundreds of files each)
    # would bring back the tree lean data removed. `hostnet data pack CAMPAIGN` fixes it.
    runs = [m.parent for m in (REPO / "data" / "runs").glob("*/*/manifest.json")]
    assert len(runs) > 1000
    unpacked = [str(r.relative_to(REPO)) for r in runs if (r / "raw").exists()]
    unarchived = [str(r.relative_to(REPO)) for r in runs if not (r / "raw.tar.xz").is_file()]
    assert unpacked == [] and unarchived == []
    assert sum(1 for p in (REPO / "data").rglob("*") if p.is_file()) <= 6000


def test_design_md_draws_the_floors_the_contract_enforces_and_stays_short():
    """DESIGN.md's import picture is pyproject's floors contract, floor for floor (a floor added to
    one and not the other fails here); the page is the architecture in under 12 KB, the module
    detail being docs/layout.md's."""
    import tomllib
    text = (REPO / "DESIGN.md").read_text()
    block = text[text.index("## Imports: the floors"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    drawn = [re.sub(r"\s*\|\s*", " | ", re.match(r"^\s*([a-z_]+(?:\s*\|\s*[a-z_]+)*)", line)[1])
             for line in block.strip("\n").splitlines()]
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    floors = next(c for c in contracts if c["id"] == "floors")["layers"]
    assert drawn == floors, (drawn, floors)
    assert len(text.encode()) <= 12 * 1024, len(text.encode())
    assert "## Data flow" in text and "docs/layout.md" in text


def test_notebooks_import_only_hostnet_and_its_sections():
    """A notebook reaches hostnet through its public surface: `hostnet` (its runtime, hostnet.notebook,
    included) and `hostnet.sections`; deep paths (hostnet.analysis.profiles, hostnet.charts.plots)
    are the sections' to name (explore.analyse_profile, common.panel)."""
    import json
    allowed = re.compile(r"^(import hostnet|from hostnet import \w+|from hostnet\.sections import [\w, ]+)$")
    found = {}
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            tree = ast.parse("\n".join(line for line in "".join(cell["source"]).splitlines()
                                        if not line.lstrip().startswith(("%", "!"))))
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and "hostnet" in ast.unparse(node):
                    found.setdefault(nb.name, set()).add(ast.unparse(node))
    bad = {nb: sorted(i for i in imports if not allowed.match(i)) for nb, imports in found.items()}
    assert not any(bad.values()), bad
    assert len(found) == len(list((REPO / "notebooks").glob("*.ipynb")))  # every notebook was read
