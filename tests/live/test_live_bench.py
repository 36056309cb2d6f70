"""bench's quick mode, live (root, embedded testbed): one short smoke test. No timed assertions:
the targets are judged by `make bench`, not by the tests."""
import json
import os

import pytest

pytestmark = pytest.mark.live


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for the embedded testbed")
def test_quick_mode_runs_live(tmp_path, capsys):
    from bench.__main__ import main
    assert main(["--quick", "--only", "fidelity,profiler_cost,cpu_accounting", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("fidelity", "profiler_cost", "cpu_accounting"):
        res = json.loads((tmp_path / f"{name}.json").read_text())
        assert res["summary"]["n"] >= 1 and res["figure"] in out
        assert (tmp_path / f"{name}.csv").exists()
    assert "Harness fidelity" in (tmp_path / "summary.md").read_text()
