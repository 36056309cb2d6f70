"""What a parameter means in replay (hostnet.sections.replay): selecting parameters pick recorded
points, a value never recorded is an error naming what was, a parameter only a live run uses is
refused. The registry's declarations are checked against every notebook and its committed campaign."""
import ast

import pandas as pd
import pytest
from conftest import REPO

from hostnet.notebook import batch
from hostnet import store
from hostnet.notebook import parameters
from hostnet.sections import SECTIONS, Select, replay, section

RUNS = REPO / "data" / "runs"


def _manifest(run_id, **point):
    return {"run_id": run_id, "status": "ok", "point": {"id": run_id[:4], **point}}


MANIFESTS = [_manifest("a-r0", config="tsogro", rx_buffer_kb=200), _manifest("a-r1", config="tsogro", rx_buffer_kb=200),
             _manifest("b-r0", config="tsogro", rx_buffer_kb=3200), _manifest("c-r0", cpu=1)]  # c: another experiment


def test_recorded_values_are_distinct_and_sorted_numbers_compared_as_numbers():
    ms = [_manifest("x", loss_rate=0.0), _manifest("y", loss_rate=0.001), _manifest("z", loss_rate=0)]
    assert replay.recorded_values(ms, "loss_rate") == [0.0, 0.001]
    chosen = replay.selection(section("06-packet-loss"), {"loss_rates": [0]}, lambda _: ms)
    assert chosen["loss_rates"][1] == [0]  # 0 asked, 0.0 recorded: the same point


def test_a_selection_keeps_the_points_asked_for_and_runs_of_other_experiments():
    chosen = replay.selection(section("02-rx-buffer"), {"sizes_kb": [200], "duration": 9}, lambda _: MANIFESTS)
    tidy = pd.DataFrame({"run_id": ["a-r0", "a-r1", "b-r0", "c-r0"], "value": [1, 2, 3, 4]})
    kept_tidy, kept = replay.apply((tidy,), store.Manifests(MANIFESTS, unreadable=["broken"]), chosen)
    assert list(kept_tidy.run_id) == ["a-r0", "a-r1", "c-r0"]
    assert [m["run_id"] for m in kept] == ["a-r0", "a-r1", "c-r0"] and kept.unreadable == ["broken"]


def test_a_value_not_recorded_names_the_recorded_ones_in_one_line():
    with pytest.raises(replay.ReplayParameterError) as exc:
        replay.selection(section("02-rx-buffer"), {"sizes_kb": [200, 300], "config": "tsogro"}, lambda _: MANIFESTS)
    assert str(exc.value) == ("sizes_kb 300 is not recorded in the replayed campaign (its rx_buffer_kb values: "
                              "200, 3200); choose among those, or run live (mode \"run\")")


def test_values_are_converted_to_the_units_recorded_and_no_other_value_maps_onto_them():
    ms = [_manifest("a", rpc_size=4096), _manifest("b", rpc_size=65506)]  # sockperf's largest message for 64 KB
    chosen = replay.selection(section("07-short-flows"), {"rpc_sizes": [64]}, lambda _: ms)
    assert chosen["rpc_sizes"][1] == [65506]
    assert replay.selection(section("08-mixed-flows"), {"rpc_size": 4}, lambda _: ms)["rpc_size"][1] == [4096]
    # the review's finds: 100 KB is capped to 65506 bytes live, 4.5 became int 4 -> 4096
    with pytest.raises(replay.ReplayParameterError, match=r"^rpc_sizes 100 is not recorded"):
        replay.selection(section("07-short-flows"), {"rpc_sizes": [100]}, lambda _: ms)
    with pytest.raises(replay.ReplayParameterError, match=r"^rpc_size 4.5 is not recorded"):
        replay.selection(section("08-mixed-flows"), {"rpc_size": 4.5}, lambda _: ms)
    with pytest.raises(replay.ReplayParameterError, match=r"^rpc_sizes '4' is not recorded"):  # -r: a str
        replay.selection(section("07-short-flows"), {"rpc_sizes": ["4"]}, lambda _: ms)


def test_a_default_value_not_recorded_is_left_out_but_a_passed_one_is_an_error():
    """11's default algorithms name dctcp, which this host refused: the default shows what was
    recorded; dctcp passed by a person is an error; no recorded value at all is an error either way."""
    ms = [_manifest("a", congestion_control="cubic", flows=1), _manifest("b", congestion_control="bbr", flows=1)]
    asked = {"algorithms": ["cubic", "bbr", "dctcp"]}
    chosen = replay.selection(section("11-congestion-control"), asked, lambda _: ms, strict=set())
    assert chosen["algorithms"][1] == ["cubic", "bbr"]
    with pytest.raises(replay.ReplayParameterError, match=r"^algorithms 'dctcp' is not recorded .*bbr, cubic"):
        replay.selection(section("11-congestion-control"), asked, lambda _: ms, strict={"algorithms"})
    with pytest.raises(replay.ReplayParameterError, match=r"^algorithms 'vegas' is not recorded"):
        replay.selection(section("11-congestion-control"), {"algorithms": ["vegas"]}, lambda _: ms, strict=set())


def test_each_select_reads_the_campaign_its_parameter_names():
    udp = [_manifest("u", udp_rate_gbps=8, socket_buffer_kb=4096, app_cpu="same")]
    tcp = [_manifest("t", congestion_control="cubic", flows=1)]
    given = {"rates_gbps": [8], "algorithms": ["cubic"]}
    both = replay.selection(section("14-end-host-loss"), given, {"campaign": udp, "cc_campaign": tcp}.__getitem__)
    assert set(both) == {"rates_gbps", "algorithms"}
    only_udp = replay.selection(section("14-end-host-loss"), given, lambda _: udp, campaign="campaign")
    assert set(only_udp) == {"rates_gbps"}


def test_run_only_parameters_are_refused_in_one_line_naming_them_all():
    with pytest.raises(replay.ReplayParameterError, match=r"^testbed, duration, perf_freq_hz only shape a live "
                                                          r"run: a replay reads what was recorded"):
        replay.check(section("03-one-to-one"), {"perf_freq_hz": 99, "duration": 1, "testbed": "x", "flows": [1]},
                     lambda _: [])
    assert replay.run_only_given(section("03-one-to-one"), {"flows", "include_contaminated", "reference_dir"}) == []


class FakeShell:
    def __init__(self, *cells, **user_ns):
        self.history_manager = type("H", (), {"input_hist_raw": ["", *cells]})()
        self.user_ns = user_ns


PARAMS = 'mode: str = "replay"\nsizes_kb: list = [100, 200]\nduration: int = 5\nfigures_dir: str = ""\n'


def test_a_notebook_started_under_papermill_selects_and_refuses(tmp_path):
    shell = FakeShell(PARAMS, '# Parameters\nsizes_kb = [200]\n', "this cell")
    nb = parameters.start("02-rx-buffer.ipynb", "replay", shell)
    assert nb.given == {"sizes_kb": [200]}
    tidy = pd.DataFrame({"run_id": ["a-r0", "b-r0"]})
    kept_tidy, kept = nb.select(tidy, MANIFESTS)
    assert list(kept_tidy.run_id) == ["a-r0"] and len(kept) == 3
    live = parameters.start("02-rx-buffer.ipynb", "run", FakeShell(PARAMS, '# Parameters\nduration = 2\n', "x"))
    assert live.select(tidy, MANIFESTS)[0] is tidy  # a live run measured what it was asked: nothing to select
    with pytest.raises(replay.ReplayParameterError, match="^duration only shapes a live run"):
        parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, '# Parameters\nduration = 2\n', "x"))
    assert parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, "this cell")).given == {}


def test_in_jupyterlab_the_parameters_cell_selects_too():
    """No papermill: sizes_kb edited in the parameters cell selects from the kernel's own values."""
    nb = parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, "this cell", sizes_kb=[3200, 999]))
    kept_tidy, kept = nb.select(pd.DataFrame({"run_id": ["a-r0", "b-r0"]}), MANIFESTS)
    assert list(kept_tidy.run_id) == ["b-r0"]  # 999: not recorded and not passed, left out
    nb = parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, "this cell", sizes_kb=[999]))
    with pytest.raises(replay.ReplayParameterError, match="^sizes_kb 999 is not recorded"):
        nb.select(pd.DataFrame({"run_id": ["a-r0"]}), MANIFESTS)


def test_a_passed_value_of_the_wrong_type_is_refused_before_it_is_iterated_letter_by_letter():
    """-p algorithms cubic passes a str: notebook 11 built an empty table from its letters."""
    with pytest.raises(parameters.ParameterTypeError, match=r"^sizes_kb is declared list, given 200 \(int\); "
                                                          r"duration is declared int, given '5' \(str\)"):
        parameters.start("02-rx-buffer.ipynb", "run",
                         FakeShell(PARAMS, '# Parameters\nsizes_kb = 200\nduration = "5"\n', "this cell"))
    cell = 'x: "Optional[list]" = [1]\nr: float = 1.0\nflag: bool = False\n'
    assert parameters.annotations(cell) == {"x": "Optional[list]", "r": "float", "flag": "bool"}
    assert parameters.mistyped({"x": None, "r": 2, "flag": True}, parameters.annotations(cell)) == []
    assert parameters.mistyped({"r": True, "flag": 1}, parameters.annotations(cell)) == [
        "r is declared float, given True (bool)", "flag is declared bool, given 1 (int)"]
    assert parameters.injected(["", cell, "# Parameters\nr = float('inf')\n", "x"]) == {"r": float("inf")}


def test_figures_go_beside_the_output_notebook_or_in_the_working_directory_never_the_committed_ones(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOSTNET_ROOT", str(REPO))
    out = tmp_path / "elsewhere" / "out.ipynb"
    shell = FakeShell(PARAMS, f'# Parameters\nPAPERMILL_OUTPUT_PATH = "{out}"\n', "this cell")
    nb = parameters.start("02-rx-buffer.ipynb", "replay", shell)  # papermill's own path: not undeclared
    assert nb.paths("data/runs", "", "")[2] == tmp_path / "elsewhere" / "figures"
    plain = parameters.start("02-rx-buffer.ipynb", "replay", FakeShell(PARAMS, "this cell"))
    assert plain.paths("data/runs", "", "")[2] == tmp_path / parameters.DEFAULT_FIGURES
    assert plain.paths("data/runs", "", "figures")[2] == REPO / "figures"  # asked for by name
    for output in ("-", "s3://bucket/out.ipynb", str(REPO / "out.ipynb")):  # stdout, a URL, beside figures/
        shell = FakeShell(PARAMS, f'# Parameters\nPAPERMILL_OUTPUT_PATH = "{output}"\n', "this cell")
        figures = parameters.start("02-rx-buffer.ipynb", "replay", shell).paths("data/runs", "", "")[2]
        assert figures != REPO / "figures" and figures.name == parameters.DEFAULT_FIGURES, output


@pytest.mark.parametrize("name", [n for n in SECTIONS if n != "00-explore.ipynb"])
def test_every_declared_select_and_run_only_parameter_exists_and_selects_what_its_campaign_recorded(name):
    """The registry against the notebook (a renamed parameter would silently stop selecting) and
    against the committed campaign it replays by default (a wrong manifest key selects nothing)."""
    entry = section(name)
    declared = batch.declared_parameters(REPO / "notebooks" / name)
    assert {s.param for s in entry.selects} | set(entry.run_only) <= set(declared), name
    assert not {s.param for s in entry.selects} & set(entry.run_only)
    for sel in entry.selects:
        campaign = ast.literal_eval(declared[sel.campaign]["default"])
        manifests = store.load_manifests(RUNS, campaign)
        if not manifests:  # 09 and 10: the embedded testbed's capability check, no runs
            continue
        recorded = replay.recorded_values(manifests, sel.key)
        assert recorded, f"{name}: no run of {campaign} records point[{sel.key!r}]"
        default = ast.literal_eval(declared[sel.param]["default"])
        asked = [v for v in (default if isinstance(default, list) else [default])
                 if any(replay._same(replay._converter(sel)(v), r) for r in recorded)]
        assert asked, f"{name}: none of {sel.param}'s defaults is recorded in {campaign}"


def test_a_select_convert_names_a_function_or_kb():
    assert replay._converter(Select("x", "y", "kb"))(4) == 4096
    assert replay._converter(Select("x", "y", "short_flows:size_bytes"))(64) == 65506
    assert replay._converter(Select("x", "y"))("same") == "same"


def test_a_default_selects_nothing_in_a_campaign_without_such_runs():
    """09 on this testbed: the campaign is the capability check, no run records rpc_size."""
    assert replay.selection(section("09-numa"), {"rpc_size": 4096}, lambda _: [], strict=set()) == {}
    with pytest.raises(replay.ReplayParameterError, match=r"^rpc_size 4096 is not recorded .*values: none"):
        replay.selection(section("09-numa"), {"rpc_size": 4096}, lambda _: [], strict={"rpc_size"})
