"""One declaration per experiment: a section's default sweep is its hostnet/sweeps/<name>.yaml, and
every notebook's parameter defaults, passed to its collect call, give exactly that sweep. The
notebook's parameters are read from the notebook itself (its collect calls, parsed), so a default
changed in one place and not the other fails here, naming both."""
import ast
import dataclasses
import importlib
import inspect
import json

import pytest

from conftest import REPO
from hostnet import project
from hostnet.measure import declarations
from hostnet.sections import SECTIONS
from hostnet.measure.sweep import SweepSpec, declared

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))
FIELDS = {f.name for f in dataclasses.fields(SweepSpec)}
# Where a notebook deliberately sweeps other than the declaration, and why.
OVERRIDES = {
    # F28 (the 2010 study) needs Vegas beside notebook 11's algorithms; 14 replays 11's campaign by default
    ("14-end-host-loss.ipynb", "congestion.collect"): {"algorithms"},
}


def _collect_calls(path):
    """(receiver module, collect function name, positional args, keyword args) of each collect call
    in the notebook's code, its names resolved to the literals the notebook binds them to first."""
    cells = json.loads(path.read_text())["cells"]
    tree = ast.parse("\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code"))
    literals, modules = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                literals.setdefault(node.targets[0].id, ast.literal_eval(node.value))
            except ValueError:
                pass
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            literals.setdefault(node.target.id, ast.literal_eval(node.value))  # papermill's typed parameters
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hostnet.sections"):
            for alias in node.names:
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr.startswith("collect") and isinstance(node.func.value, ast.Name):
            args = [literals[a.id] for a in node.args[1:] if isinstance(a, ast.Name)]  # after mode
            kwargs = {k.arg: literals[k.value.id] for k in node.keywords
                      if isinstance(k.value, ast.Name) and k.value.id in literals}
            yield modules[node.func.value.id], node.func.value.id, node.func.attr, args, kwargs


def _spec_function(module, collect_name: str):
    """collect -> spec, collect_big_tcp -> big_tcp_spec."""
    suffix = collect_name.removeprefix("collect").removeprefix("_")
    return getattr(module, f"{suffix}_spec" if suffix else "spec", None)


def test_every_declaration_is_a_valid_sweep_and_every_section_sweep_has_one():
    files = sorted(p.stem for p in project.packaged("sweeps").glob("*.yaml"))
    assert {"single-flow", "rx-buffer", "congestion-control", "time-budget", "zero-copy", "big-tcp"} <= set(files)
    for name in files:
        assert declared(name).repetitions >= 1, name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebooks_defaults_give_its_sections_declared_sweep(path):
    calls = list(_collect_calls(path))
    checked = 0
    for module_name, alias, collect_name, args, kwargs in calls:
        spec = _spec_function(importlib.import_module(module_name), collect_name)
        assert spec is not None, f"{path.name}: {alias}.{collect_name} has no spec function (its declared sweep)"
        params = set(inspect.signature(spec).parameters) | FIELDS
        given = {k: v for k, v in kwargs.items() if k in params}
        allowed = OVERRIDES.get((path.name, f"{alias}.{collect_name}"), set())
        ours, declared_one = spec(*args, **given), spec(*args)
        if allowed:
            ours = spec(*args, **{k: v for k, v in given.items() if k not in allowed})
        assert ours == declared_one, (f"{path.name}: {alias}.{collect_name}'s defaults differ from its sweeps/ file: "
                                      f"{ours} != {declared_one}")
        checked += 1
    if SECTIONS[path.name].experiment:  # a notebook that runs something (00-explore only reads)
        assert checked, f"{path.name}: no collect call whose sweep is declared"


def test_every_section_names_a_declared_sweep_or_a_label_a_declared_sweep_stores():
    """The registry's `experiment` is what a section's campaigns hold: the name of its declared
    sweep or a name some declared sweep's runs are stored under (rx-buffer's runs are single-flow
    ones, the time budget's batching points udp-batch)."""
    names = declarations.declared_names()
    stored = {label for name in names for label in declared(name).stored_names}
    for section in SECTIONS.values():
        if section.experiment:
            assert section.experiment in set(names) | stored, section.notebook
