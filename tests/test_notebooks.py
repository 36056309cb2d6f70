"""Batch mode: papermill executes the notebooks in replay mode and the report is built."""
import json

import pytest

from conftest import REPO
from hostnet import notebooks


def test_replay_writes_figures_and_report(tmp_path):
    figs = tmp_path / "figures"
    report = notebooks.run_notebooks(mode="replay", output_dir=tmp_path / "executed", figures_dir=figs)
    numbered = [p.name for p in notebooks.section_notebooks()]
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
    from hostnet.report import _verdict_class
    for m in metas.values():  # each notebook's verdict cells, as computed, with the class that colours them
        for v in m["verdicts"]:
            assert f"<td class='{_verdict_class(v['verdict'])}'>{v['verdict']}</td>" in html, (m["notebook"], v["id"])


def test_undeclared_parameter_is_an_error(tmp_path):
    nb = REPO / "notebooks" / "01-single-flow.ipynb"
    with pytest.raises(notebooks.NotebookParameterError, match="does not declare rx_buffer"):
        notebooks.execute(nb, {"rx_buffer": 1}, tmp_path)
    assert "mode" in notebooks.declared_parameters(nb)
