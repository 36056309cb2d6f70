"""Notebook infrastructure: profiles, conventions, notebook sweeps (plan and live), stored outputs
compared by nbval (a changed number fails)."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, live_ready
from hostnet import cli, notebooks, short_flows

RX = REPO / "notebooks" / "02-rx-buffer.ipynb"


def test_run_parameters_follow_the_profile():
    quick = notebooks.run_parameters("run", "quick")
    assert quick == {"mode": "run", "campaign": "", "duration": 2, "warmup": 1, "repetitions": 2}
    paper = notebooks.run_parameters("run", "paper", overrides={"repetitions": 7, "duration": None})
    assert paper["duration"] == 20 and paper["repetitions"] == 7 and paper["warmup"] == 5
    assert notebooks.run_parameters("replay", "paper") == {"mode": "replay"}  # replay ignores profiles
    with pytest.raises(ValueError, match="unknown profile"):
        notebooks.run_parameters("run", "slow")


@pytest.mark.parametrize("nb", notebooks.section_notebooks(), ids=lambda p: p.name)
def test_section_notebooks_follow_the_conventions(nb):
    assert notebooks.check_conventions(nb) == []


def test_conventions_report_what_is_missing(tmp_path):
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ['mode = "run"\n', 'campaign = ""\n']
    bad = tmp_path / "99-bad.ipynb"
    bad.write_text(json.dumps(nb))
    problems = notebooks.check_conventions(bad)
    assert "does not declare duration" in problems and "does not declare figures_dir" in problems
    assert any("not \"replay\"" in p for p in problems)


def test_conventions_refuse_computed_parameter_defaults(tmp_path):
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] += ['\n', 'sizes = [100 * 2 ** i for i in range(3)]\n', 'import os\n', 'flows: int = 4\n']
    bad = tmp_path / "98-computed.ipynb"
    bad.write_text(json.dumps(nb))
    problems = notebooks.non_literal_parameters(bad)
    assert len(problems) == 2  # the annotated literal is fine
    assert "non-literal value: sizes = [100 * 2 ** i for i in range(3)]" in problems[0]
    assert "is not `name = literal`: import os" in problems[1]


def test_sweep_plan_one_campaign_per_point(tmp_path):
    plan = notebooks.sweep_plan(RX, {"sizes_kb": [200, 3200], "config": ["tsogro", "all-opts"]},
                                {"repetitions": 1}, "quick", tmp_path)
    assert len(plan) == 4 and len({e["campaign"] for e in plan}) == 4
    first = plan[0]
    assert first["point"] == {"sizes_kb": [200], "config": "tsogro"}  # a scalar fits the list parameter
    p = first["parameters"]
    assert p["mode"] == "run" and p["campaign"] == first["campaign"] and p["repetitions"] == 1
    assert p["duration"] == 2 and p["warmup"] == 1
    assert p["runs_dir"] == str(tmp_path.resolve())
    assert p["figures_dir"] == str(tmp_path.resolve() / first["campaign"] / "figures")
    assert "02-rx-buffer-sizes_kb-200-config-tsogro-embedded" in first["campaign"]


def test_sweep_refuses_undeclared_and_clashing_parameters(tmp_path):
    with pytest.raises(notebooks.NotebookParameterError, match="does not declare rpc_size"):
        notebooks.sweep_plan(RX, {"rpc_size": [4096, 65536]}, {}, "quick", tmp_path)
    with pytest.raises(notebooks.NotebookParameterError, match="does not declare flows"):
        notebooks.sweep_plan(RX, {"sizes_kb": [200]}, {"flows": 2}, "quick", tmp_path)
    with pytest.raises(ValueError, match="both swept and fixed"):
        notebooks.sweep_plan(RX, {"sizes_kb": [200]}, {"sizes_kb": [400]}, "quick", tmp_path)
    with pytest.raises(ValueError, match="non-empty list"):
        notebooks.grid_points({"sizes_kb": 200})


def test_sweep_file_and_cli_dry_run(tmp_path, capsys):
    spec = tmp_path / "params.yaml"
    spec.write_text("profile: paper\nparameters: {config: tsogro}\ngrid: {sizes_kb: [200, 3200]}\n")
    assert notebooks.load_sweep_file(spec)["profile"] == "paper"
    assert cli.main(["sweep", str(RX), "-f", str(spec), "--runs-dir", str(tmp_path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and '"duration": 20' in lines[0] and '"sizes_kb": [3200]' in lines[1]
    (tmp_path / "bad.yaml").write_text("grid: {sizes_kb: [200]}\nrepeats: 3\n")
    with pytest.raises(ValueError, match="unknown keys repeats"):
        notebooks.load_sweep_file(tmp_path / "bad.yaml")
    with pytest.raises(SystemExit):
        cli.main(["sweep", str(RX)])  # a notebook sweep without -f


def test_strip_volatile_keeps_outputs_drops_timings():
    nb = {"metadata": {"papermill": {"duration": 3.2}, "language_info": {"name": "python", "version": "3.11.2"}},
          "cells": [{"cell_type": "code", "metadata": {"papermill": {}, "execution": {"iopub.status.idle": "x"},
                                                       "tags": ["parameters"]},
                     "outputs": [{"output_type": "display_data", "metadata": {},
                                  "data": {"text/plain": "1.5", "application/vnd.jupyter.widget-view+json": {}}}],
                     "source": "", "execution_count": 3}]}
    out = notebooks.strip_volatile(nb)
    assert out["metadata"] == {"language_info": {"name": "python"}}
    assert out["cells"][0]["metadata"] == {"tags": ["parameters"]}
    assert out["cells"][0]["outputs"][0]["data"] == {"text/plain": "1.5"}
    assert nb["metadata"]["papermill"]  # the input is not modified


def _bump_first_number(html: str) -> tuple[str, str]:
    m = re.search(r"<td>(\d+\.\d+)</td>", html)
    bumped = f"{float(m.group(1)) + 1:.1f}"
    return html[:m.start(1)] + bumped + html[m.end(1):], bumped


def test_nbval_fails_on_a_changed_number(tmp_path):
    """The stored summary of notebook 02 with one number changed: nbval fails that cell and only it."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "data").symlink_to(REPO / "data")
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT\nsummary"))
    data = next(o for o in cell["outputs"] if "text/html" in o.get("data", {}))["data"]
    html = "".join(data["text/html"])
    data["text/html"], bumped = _bump_first_number(html)
    (tmp_path / "notebooks" / RX.name).write_text(json.dumps(nb))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                          f"--nbval-sanitize-with={REPO / 'notebooks' / 'nbval-sanitize.cfg'}",
                          f"notebooks/{RX.name}"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 1, res.stdout[-3000:]
    assert re.search(r"\b1 failed, \d+ passed", res.stdout), res.stdout[-3000:]
    assert bumped in res.stdout  # the report shows the stored (changed) value against the fresh one


@pytest.mark.live
def test_sweep_notebook_02_over_two_rx_buffer_sizes(tmp_path, state_dir):
    """Notebook 02 executed live, once per Rx buffer size, each into its own campaign (quick profile)."""
    why = live_ready()
    if why:
        pytest.skip(why)
    # include_contaminated: other jobs on a shared machine must not fail a test of the sweep mechanism
    done = notebooks.sweep_notebook(RX, {"sizes_kb": [200, 3200]}, {"repetitions": 1, "include_contaminated": True},
                                    "quick", tmp_path,
                                    progress=lambda line: None)
    assert [e["point"] for e in done] == [{"sizes_kb": [200]}, {"sizes_kb": [3200]}]
    for entry in done:
        cdir = tmp_path / entry["campaign"]
        executed = json.loads((cdir / RX.name).read_text())
        assert executed["metadata"]["papermill"]["parameters"]["sizes_kb"] == entry["point"]["sizes_kb"]
        manifests = [json.loads(p.read_text()) for p in cdir.glob("*/manifest.json")]
        assert manifests and {m["point"]["rx_buffer_kb"] for m in manifests} == set(entry["point"]["sizes_kb"])
        assert all(m["workload"]["duration_s"] == 2 for m in manifests)
        assert (cdir / "figures" / "rx-buffer-tpc.svg").stat().st_size > 1000
        assert json.loads((cdir / "notebook_sweep.json").read_text())["status"] == "ok"
    assert not (REPO / "notebooks" / "executed" / "sweep").exists()


def test_batch_run_mode_passes_the_profile_to_every_section_notebook(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(notebooks, "execute", lambda nb, params, out: calls.append((nb.name, params)))
    (tmp_path / "figs").mkdir()
    report = notebooks.run_notebooks(mode="run", profile_name="paper", repetitions=7, output_dir=tmp_path / "x",
                                     figures_dir=tmp_path / "figs", runs_dir=tmp_path / "runs")
    assert [name for name, _ in calls] == [p.name for p in notebooks.section_notebooks()]
    assert "00-explore.ipynb" not in [name for name, _ in calls]
    for _, params in calls:
        assert params == {"mode": "run", "campaign": "", "duration": 20, "warmup": 5, "repetitions": 7,
                          "figures_dir": str((tmp_path / "figs").resolve()),
                          "runs_dir": str((tmp_path / "runs").resolve())}
    assert report == tmp_path / "figs" / "index.html"


def test_batch_mode_checks_every_notebook_before_running_any(tmp_path, monkeypatch):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "01-ok.ipynb").write_text(RX.read_text())
    nb = json.loads(RX.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ['mode = "replay"\n', 'campaign = "x"\n']
    (nbs / "02-short.ipynb").write_text(json.dumps(nb))
    ran = []
    monkeypatch.setattr(notebooks, "execute", lambda *a: ran.append(a))
    with pytest.raises(notebooks.NotebookParameterError, match="02-short.ipynb does not declare duration"):
        notebooks.run_notebooks(mode="run", notebooks_dir=nbs, figures_dir=tmp_path / "f")
    assert ran == []


@pytest.mark.live
def test_sweep_notebook_07_over_two_rpc_sizes(tmp_path, state_dir):
    """Notebook 07 (short flows) executed live by papermill, once per RPC size, quick profile."""
    why = live_ready()
    if why:
        pytest.skip(why)
    nb = REPO / "notebooks" / "07-short-flows.ipynb"
    done = notebooks.sweep_notebook(nb, {"rpc_sizes": [4, 64]},
                                    {"repetitions": 1, "flows": 2, "include_contaminated": True},
                                    "quick", tmp_path, progress=lambda line: None)
    assert [e["point"] for e in done] == [{"rpc_sizes": [4]}, {"rpc_sizes": [64]}]
    for entry in done:
        cdir = tmp_path / entry["campaign"]
        assert json.loads((cdir / "notebook_sweep.json").read_text())["status"] == "ok"
        executed = json.loads((cdir / nb.name).read_text())
        assert executed["metadata"]["papermill"]["parameters"]["rpc_sizes"] == entry["point"]["rpc_sizes"]
        manifests = [json.loads(p.read_text()) for p in cdir.glob("*/manifest.json")]
        assert manifests and all(m["status"] == "ok" for m in manifests)
        # the notebook's KB become the workload's bytes (64 KB is capped at sockperf's largest message,
        # whichever tool runs, so points compare); every run is one 2 s quick-profile point
        kb = entry["point"]["rpc_sizes"][0]
        assert {m["point"]["rpc_size"] for m in manifests} == {min(kb * 1024, 65506)} == {short_flows.size_bytes(kb)}
        assert all(m["workload"]["duration_s"] == 2 and len(m["flows"]) == 2 for m in manifests)
        assert (cdir / "figures" / "short-flows-tpc.svg").stat().st_size > 1000


def test_batch_mode_runs_the_others_when_one_notebook_fails(tmp_path, monkeypatch):
    import papermill as pm
    ran, lines = [], []

    def execute(nb, params, out):
        ran.append(nb.name)
        if nb.name.startswith("04"):
            raise pm.PapermillExecutionError(3, 1, "boom", "RuntimeError", "testbed vanished", [])

    monkeypatch.setattr(notebooks, "execute", execute)
    (tmp_path / "figs").mkdir()
    with pytest.raises(notebooks.NotebookExecutionError,
                       match=r"1 of \d+ notebooks failed .*04-incast.ipynb: failed: RuntimeError: testbed vanished"):
        notebooks.run_notebooks(mode="replay", output_dir=tmp_path / "x", figures_dir=tmp_path / "figs",
                                progress=lines.append)
    assert ran == [p.name for p in notebooks.section_notebooks()]  # the ones after 04 still ran
    assert (tmp_path / "figs" / "index.html").exists()  # the report is built from what ran
    assert lines[0].startswith(f"[1/{len(ran)}] ") and "    failed: RuntimeError: testbed vanished in 0 s" in lines
