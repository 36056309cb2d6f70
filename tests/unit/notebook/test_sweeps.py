"""hostnet.notebook.sweeps: notebook sweeps planned (not run) in both modes, and refused before any
kernel starts. A replay sweep executed: tests/integration/test_notebook_sweep_replay.py; live
notebook sweeps: tests/live/test_live_batch.py."""
import pytest

from conftest import REPO
from hostnet import cli
from hostnet.notebook import batch, sweeps

RX = REPO / "notebooks" / "02-rx-buffer.ipynb"


def test_sweep_plan_one_campaign_per_point(tmp_path):
    plan = sweeps.sweep_plan(RX, {"sizes_kb": [200, 3200], "config": ["tsogro", "all-opts"]},
                             {"repetitions": 1}, "quick", tmp_path)
    assert len(plan) == 4 and len({e["campaign"] for e in plan}) == 4
    first = plan[0]
    assert first["point"] == {"sizes_kb": [200], "config": "tsogro"}  # a scalar fits the list parameter
    p = first["parameters"]
    assert p["mode"] == "run" and p["campaign"] == first["campaign"] and p["repetitions"] == 1
    assert p["duration"] == batch.QUICK["duration"] and p["warmup"] == 1
    assert p["runs_dir"] == str(tmp_path.resolve())
    assert p["figures_dir"] == str(tmp_path.resolve() / first["campaign"] / "figures")
    assert first["dir"] == tmp_path.resolve() / first["campaign"]
    assert "02-rx-buffer-sizes_kb-200-config-tsogro-embedded" in first["campaign"]


RX_CAMPAIGN = "20261128-053016-rx-buffer-embedded"  # the committed campaign notebook 02 replays


def test_a_replay_sweep_selects_recorded_points_into_its_own_directory(tmp_path):
    """#31: a replay sweep ran live (mode forced to "run"), and a papermill loop in replay showed all
    8 sizes for sizes_kb [200] and [3200] alike."""
    runs = REPO / "data" / "runs"
    plan = sweeps.sweep_plan(RX, {"sizes_kb": [200, 3200]}, {"include_contaminated": True}, None, runs,
                             mode="replay", output_dir=tmp_path / "out")
    assert [e["point"] for e in plan] == [{"sizes_kb": [200]}, {"sizes_kb": [3200]}]
    first = plan[0]
    assert first["campaign"] == RX_CAMPAIGN and first["dir"] == tmp_path / "out" / "sizes_kb-200"
    assert first["parameters"] == {"include_contaminated": True, "sizes_kb": [200], "mode": "replay",
                                   "runs_dir": str(runs.resolve()),
                                   "figures_dir": str(tmp_path / "out" / "sizes_kb-200" / "figures")}


def test_a_replay_sweep_refuses_what_a_replay_cannot_mean_before_any_kernel(tmp_path):
    from hostnet.sections.replay import ReplayParameterError
    runs = REPO / "data" / "runs"
    with pytest.raises(ReplayParameterError, match=r"^sizes_kb 300 is not recorded in the replayed campaign "
                                                   r"\(its rx_buffer_kb values: 100, 200, 400, 800, 1600, 3200, "
                                                   r"6400, 12800\)"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200, 300]}, {}, None, runs, mode="replay")
    with pytest.raises(ReplayParameterError, match="^duration, latency_sample_every only shape a live run"):
        sweeps.sweep_plan(RX, {"latency_sample_every": [1, 4]}, {"duration": 3}, None, runs, mode="replay")
    with pytest.raises(ReplayParameterError, match="^profile quick shapes live runs"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200]}, {}, "quick", runs, mode="replay")
    with pytest.raises(ValueError, match="mode is not a parameter of a sweep"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200]}, {"mode": "replay"}, None, runs, mode="replay")
    with pytest.raises(FileNotFoundError, match="no campaign nope in"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200]}, {"campaign": "nope"}, None, runs, mode="replay")
    assert not any(tmp_path.iterdir())


def test_sweep_refuses_undeclared_and_clashing_parameters(tmp_path):
    with pytest.raises(batch.NotebookParameterError, match="does not declare rpc_size"):
        sweeps.sweep_plan(RX, {"rpc_size": [4096, 65536]}, {}, "quick", tmp_path)
    with pytest.raises(batch.NotebookParameterError, match="does not declare flows"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200]}, {"flows": 2}, "quick", tmp_path)
    with pytest.raises(ValueError, match="both swept and fixed"):
        sweeps.sweep_plan(RX, {"sizes_kb": [200]}, {"sizes_kb": [400]}, "quick", tmp_path)
    with pytest.raises(ValueError, match="non-empty list"):
        sweeps.grid_points({"sizes_kb": 200})


def test_sweep_file_and_cli_dry_run(tmp_path, capsys):
    spec = tmp_path / "params.yaml"
    spec.write_text("profile: paper\nparameters: {config: tsogro}\ngrid: {sizes_kb: [200, 3200]}\n")
    assert sweeps.load_sweep_file(spec)["profile"] == "paper"
    assert cli.main(["sweep", str(RX), "-f", str(spec), "--runs-dir", str(tmp_path), "--mode", "run",
                     "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and '"duration": 20' in lines[0] and '"sizes_kb": [3200]' in lines[1]
    (tmp_path / "bad.yaml").write_text("grid: {sizes_kb: [200]}\nrepeats: 3\n")
    with pytest.raises(ValueError, match="unknown keys repeats"):
        sweeps.load_sweep_file(tmp_path / "bad.yaml")
    (tmp_path / "mode.yaml").write_text("grid: {sizes_kb: [200]}\nparameters: {mode: replay}\n")
    with pytest.raises(ValueError, match="mode in parameters would be overridden by the sweep: say --mode"):
        sweeps.load_sweep_file(tmp_path / "mode.yaml")
    with pytest.raises(SystemExit):
        cli.main(["sweep", str(RX)])  # a notebook sweep without -f
    with pytest.raises(SystemExit):
        cli.main(["sweep", str(RX), "-f", str(spec)])  # nor without --mode
    assert "needs --mode replay (select recorded points) or --mode run" in capsys.readouterr().err


def test_a_params_file_with_a_yaml_syntax_error_names_the_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("grid: {sizes_kb: [200, 3200}\n")
    with pytest.raises(ValueError, match=f'(?s)not valid YAML.*in "{path}", line 1'):
        sweeps.load_sweep_file(path)


def test_a_live_sweeps_table_goes_beside_its_campaigns(tmp_path):
    plan = [{"dir": tmp_path / "20261128-101010-02-rx-buffer-sizes_kb-200-embedded"},
            {"dir": tmp_path / "20261128-101010-02-rx-buffer-sizes_kb-3200-embedded"}]
    assert sweeps.sweep_table_path(plan, "run") == tmp_path / "20261128-101010-02-rx-buffer-sizes_kb-sweep.csv"
    assert sweeps.sweep_table_path(plan, "replay") == tmp_path / "sweep.csv"
    plan = [{"dir": tmp_path / "s-02-sizes_kb-200-embedded"}, {"dir": tmp_path / "s-02-sizes_kb-2000-embedded"}]
    assert sweeps.sweep_table_path(plan, "run") == tmp_path / "s-02-sizes_kb-sweep.csv"  # not "...-200-sweep"
