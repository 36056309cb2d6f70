"""The notebooks themselves: papermill executes them in replay mode and the report is built; every
section notebook follows the conventions and declares its profile parameters; nbval compares stored
outputs (a changed number fails)."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from hostnet.notebook import batch


def test_replay_writes_figures_and_report(tmp_path):
    figs = tmp_path / "figures"
    report = batch.run_notebooks(mode="replay", places=batch.Places(
        output_dir=tmp_path / "executed", figures_dir=figs, notebooks_dir=REPO / "notebooks"))
    numbered = [p.name for p in batch.section_notebooks(REPO / "notebooks")]
    metas = {p.name: json.loads(p.read_text()) for p in figs.glob("*.meta.json")}
    html = report.read_text()
    stems = [s for m in metas.values() for s in m["figures"]]
    # every numbered notebook ran and wrote its report section with at least one figure and a verdict table
    assert sorted(m["notebook"] for m in metas.values()) == numbered
    for name in numbered:
        assert (tmp_path / "executed" / name).exists()
    for m in metas.values():
        assert m["figures"] and m["verdicts"], m["notebook"]
    for stem in stems:
        assert (figs / f"{stem}.svg").stat().st_size > 1000
        assert (figs / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"{stem}.svg" in html
    assert {"single-flow-tpc", "single-flow-receiver-breakdown", "rx-buffer-latency"} <= set(stems)
    assert html.count("<img") == len(stems)
    assert "paper says" in html and "F07" in html
    from hostnet.notebook.report import verdict_class
    for m in metas.values():  # each notebook's verdict cells, as computed, with the class that colours them
        for v in m["verdicts"]:
            assert f"<td class='{verdict_class(v['verdict'])}'>{v['verdict']}</td>" in html, (m["notebook"], v["id"])


RX = REPO / "notebooks" / "02-rx-buffer.ipynb"


@pytest.mark.parametrize("nb", batch.section_notebooks(REPO / "notebooks"), ids=lambda p: p.name)
def test_section_notebooks_follow_the_conventions(nb):
    assert batch.check_conventions(nb) == []


def test_every_stored_chart_is_an_image_that_draws_without_scripts_or_network():
    """What JupyterLab shows an untrusted notebook, and GitHub and nbconvert show anyone: a stored
    image/png (or svg). altair's HTML output needs its scripts and the vega CDN; none is stored."""
    images = {}
    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        images[path.name] = 0
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                assert not any("vegalite" in kind or "vega.v" in kind for kind in data), (path.name, list(data))
                html = "".join(data.get("text/html", ""))
                # (not just "vega": notebook 14's table names TCP Vegas)
                chart = re.search(r"vega-embed|vegaEmbed|vega-lite|<script", html)
                assert not chart, f"{path.name}: an HTML chart is stored"
                images[path.name] += "image/png" in data or "image/svg+xml" in data
    assert len(images) == 16 and all(images.values()), images  # every notebook stores its charts


def _stored_charts(path):
    """(cell index, the spec it was drawn from, its width in CSS px) of each stored chart output."""
    from hostnet.charts import plots
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                meta = out.get("metadata", {})
                yield i, plots.stored_spec(meta), meta.get("image/png", {}).get("width")


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb")), ids=lambda p: p.name)
def test_every_stored_chart_shows_marks_in_every_view_at_a_width_the_page_shows_unscaled(path):
    """What JupyterLab, GitHub and nbconvert show: each stored chart's spec drawn again shows marks
    in every view (no view left in another's colours, or in none), and is no wider than a notebook's
    output area, so its text is shown at its size."""
    from hostnet.charts import drawn, plots
    charts = list(_stored_charts(path))
    assert charts
    for cell, spec, width in charts:
        assert spec is not None, f"{path.name} cell {cell}: no spec stored with the chart"
        assert drawn.problems(spec) == [], f"{path.name} cell {cell}"
        assert width <= plots.PANEL_WIDTH, f"{path.name} cell {cell}: {width} px wide"


def test_every_figure_shows_marks_in_every_view():
    from hostnet.charts import drawn
    figures = sorted((REPO / "figures").glob("*.svg"))
    assert len(figures) > 40
    assert {f.name: drawn.svg_problems(f.read_text()) for f in figures if drawn.svg_problems(f.read_text())} == {}


def test_notebooks_declare_the_profile_parameters_and_their_grids():
    from hostnet.notebook import batch
    common = {"mode", "campaign", "config", "duration", "warmup", "repetitions", "runs_dir", "reference_dir",
              "figures_dir", "include_contaminated", "testbed"}
    for name, grid in (("06-packet-loss", "loss_rates"), ("07-short-flows", "rpc_sizes"),
                       ("08-mixed-flows", "short_flows")):
        declared = batch.declared_parameters(REPO / "notebooks" / f"{name}.ipynb")
        assert common | {grid} <= set(declared), name  # papermill could not parse a line otherwise


def _bump_first_number(html: str) -> tuple[str, str]:
    m = re.search(r"<td[^>]*>\s*(\d+\.\d+)", html)  # a Styler's cell: "11.4 (10.8–12.0)"
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


def test_notebook_03_on_a_campaign_with_every_run_flagged_ends_normally_saying_so(tmp_path):
    """A busy machine flagged every run: papermill runs notebook 03 to its end (no FileNotFoundError),
    the output says what happened, the figures are marked and every verdict is not testable."""
    from conftest import busy_campaign
    campaign = busy_campaign(tmp_path)
    out = batch.execute(REPO / "notebooks" / "03-one-to-one.ipynb",
                        {"mode": "replay", "campaign": campaign, "runs_dir": str(tmp_path / "runs"),
                         "figures_dir": str(tmp_path / "figures")}, tmp_path / "executed")
    text = json.dumps(json.loads(out.read_text())["cells"])
    assert "NO CLEAN RUN: the tables and figures below show these flagged runs, marked as such" in text
    assert "stress-ng up to 100 %" in text and '"output_type": "error"' not in text
    meta = json.loads((tmp_path / "figures" / "03-one-to-one.meta.json").read_text())
    from hostnet.analysis.verdicts import NOT_TESTABLE
    assert {v["verdict"] for v in meta["verdicts"]} == {NOT_TESTABLE}
    assert "FLAGGED RUNS" in (tmp_path / "figures" / "one-to-one-tpc.svg").read_text()


def _papermill(*args, cwd, root=""):
    return subprocess.run([sys.executable, "-m", "papermill", "--no-progress-bar", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HOSTNET_ROOT": root})


def test_plain_papermill_outside_the_checkout_says_how_to_find_the_data_or_finds_it(tmp_path):
    """#31: from another directory, the first cell fails in one line naming HOSTNET_ROOT; with it set,
    the notebook replays from there (its figures where figures_dir says)."""
    res = _papermill(RX, tmp_path / "out.ipynb", cwd=tmp_path)
    assert res.returncode != 0 and "NoProject" in res.stderr and "set HOSTNET_ROOT=<a checkout>" in res.stderr
    figs = tmp_path / "figures"
    res = _papermill(RX, tmp_path / "out.ipynb", "-p", "figures_dir", figs, cwd=tmp_path, root=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (figs / "02-rx-buffer.meta.json").exists()


def test_plain_papermill_from_anywhere_in_the_checkout_and_an_undeclared_parameter_fails(tmp_path):
    """No --cwd: the notebook finds data/runs from the working directory (here docs/, inside the
    checkout); a parameter the notebook does not declare fails the run, not just papermill's warning."""
    figs = tmp_path / "figures"
    res = _papermill(RX, tmp_path / "out.ipynb", "-p", "figures_dir", figs, cwd=REPO / "docs")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (figs / "02-rx-buffer.meta.json").exists() and (figs / "rx-buffer-latency.svg").exists()
    res = _papermill(RX, tmp_path / "bad.ipynb", "-p", "figures_dirr", figs, cwd=REPO)
    assert res.returncode != 0
    assert "UndeclaredParameterError" in res.stderr and "figures_dirr" in res.stderr


def test_plain_papermill_in_replay_selects_what_it_is_given_and_never_writes_the_committed_figures(tmp_path):
    """#31: a papermill loop in replay with sizes_kb [200] showed all 8 sizes, and without --cwd
    the figures went into the checkout's committed figures/. Now the given size alone is shown,
    the figures land beside the output notebook, and a parameter only a live run uses is refused."""
    committed = REPO / "figures" / "02-rx-buffer.meta.json"
    before = committed.stat().st_mtime_ns
    out = tmp_path / "sweep" / "out.ipynb"
    out.parent.mkdir()
    res = _papermill(RX, out, "-y", "{sizes_kb: [200]}", "--inject-output-path", cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((tmp_path / "sweep" / "figures" / "02-rx-buffer.meta.json").read_text())
    assert [row["rx_buffer_kb"] for row in meta["summary"]] == [200]
    assert committed.stat().st_mtime_ns == before
    res = _papermill(RX, tmp_path / "bad.ipynb", "-p", "duration", "3", cwd=REPO)
    assert res.returncode != 0
    assert "ReplayParameterError: duration only shapes a live run" in res.stderr


def _nbval_project(tmp_path, stored: str):
    """notebooks/ with this directory's conftest, sanitize file and one unmarked cell whose stored output
    is `stored` (a fresh run prints 2)."""
    import nbformat
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    for name in ("conftest.py", "__init__.py", "nbval-sanitize.cfg"):
        (nbs / name).write_text((REPO / "notebooks" / name).read_text())
    cell = nbformat.v4.new_code_cell("print(1 + 1)", execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", text=stored)])
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (nbs / "tiny.ipynb").write_text(nbformat.writes(nb))
    return nbs


def test_nbval_is_strict_by_default_lax_on_request_and_runs_from_inside_notebooks(tmp_path):
    """#31: strict nbval failed on 00-explore; now it is the default (every cell compared)."""
    nbs = _nbval_project(tmp_path, "3\n")  # an unmarked cell's stored output that differs

    def pytest_(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=nbs,
                              capture_output=True, text=True, timeout=300)
    lax = pytest_("--nbval-lax")
    assert lax.returncode == 0 and "1 passed" in lax.stdout, lax.stdout[-2000:]
    strict = pytest_()
    assert strict.returncode == 1 and "1 failed" in strict.stdout, strict.stdout[-2000:]
