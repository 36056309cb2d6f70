"""Batch mode: papermill executes the notebooks in replay mode and the report is built."""
import pytest

from conftest import REPO
from hostnet import notebooks


def test_replay_writes_figures_and_report(tmp_path):
    figs = tmp_path / "figures"
    report = notebooks.run_notebooks(mode="replay", output_dir=tmp_path / "executed", figures_dir=figs)
    for stem in ("single-flow-tpc", "single-flow-cpu", "single-flow-sender-breakdown",
                 "single-flow-receiver-breakdown", "rx-buffer-tpc", "rx-buffer-latency"):
        assert (figs / f"{stem}.svg").stat().st_size > 1000
        assert (figs / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = report.read_text()
    assert html.count("<img") == 6 and "single-flow-tpc.svg" in html and "rx-buffer-latency.svg" in html
    assert "paper says" in html and "reproduced" in html
    assert (tmp_path / "executed" / "01-single-flow.ipynb").exists()
    assert (tmp_path / "executed" / "02-rx-buffer.ipynb").exists()
    assert "F07" in html


def test_undeclared_parameter_is_an_error(tmp_path):
    nb = REPO / "notebooks" / "01-single-flow.ipynb"
    with pytest.raises(notebooks.NotebookParameterError, match="does not declare rx_buffer"):
        notebooks.execute(nb, {"rx_buffer": 1}, tmp_path)
    assert "mode" in notebooks.declared_parameters(nb)
