"""bench/: its pure parts (ratios, medians, order, mpstat parsing, the artifact arithmetic, the
result tables). No timed assertions: the targets are judged by `make bench`, not by the tests.
The short live smoke test of the quick mode is tests/live/test_live_bench.py; benchmark 8's real
processes, tests/integration/test_bench_cli_start.py."""
import json
import math
from pathlib import Path

import pytest

import bench.__main__ as bench_main
from bench import artifact, live, results, stats, sweep_overhead
from bench.mpstat import parse_mpstat_average
from bench.stats import Summary
from bench.sweep_overhead import phases
from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.probes.perf import DEFAULT_FREQ_HZ
from hostnet.measure.runner import RunFailed
from hostnet.derive.patterns import Flow
from hostnet.derive.workloads import LongFlows


def test_alternating_order_rotates_and_covers_every_pair():
    order = stats.alternating(["A", "B", "C"], 3)
    assert order[:3] == [(0, "A"), (0, "B"), (0, "C")]
    assert [v for r, v in order if r == 1] == ["B", "C", "A"]
    assert [v for r, v in order if r == 2] == ["C", "A", "B"]
    assert sorted(order) == sorted((r, v) for r in range(3) for v in "ABC")


def test_paired_ratios_use_only_repetitions_both_ran():
    assert stats.paired_ratios({0: 9.0, 1: 10.0, 2: 4.0}, {0: 10.0, 1: 10.0}) == [0.9, 1.0]


def test_summarize_median_range_and_failed_repetitions():
    s = stats.summarize([1.0, 3.0, float("nan"), 2.0, 10.0])
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4)
    assert stats.summarize([]).n == 0 and math.isnan(stats.summarize([]).median)


def test_verdicts_against_targets():
    assert stats.verdict(0.99, ">=", 0.98) == "met"
    assert stats.verdict(0.97, ">=", 0.98) == "below target"
    assert stats.verdict(1.2, "<=", 1.15) == "below target"
    assert stats.verdict(float("nan"), "<=", 1.15) == "not measured"


def test_linear_fit_tells_linear_from_superlinear():
    lin = stats.linear_fit([1e5, 1e6, 1e7], [1.0, 10.0, 100.0])
    assert lin["per_item_growth"] == pytest.approx(1.0) and lin["slope"] == pytest.approx(1e-5)
    assert stats.linear_fit([1e5, 1e6], [1.0, 20.0])["per_item_growth"] == pytest.approx(2.0)


def test_mpstat_average_per_cpu_on_captured_output():
    # tests/fixtures/mpstat_P_ALL_1.txt: `mpstat -P ALL 1`, SIGINT after 3.5 s (sysstat 12.6, this VM)
    avg = parse_mpstat_average(fixture_text("mpstat_P_ALL_1.txt"))
    assert sorted(avg) == [0, 1]
    assert avg[0]["usr"] == 89.63 and avg[1]["soft"] == 0.99
    assert avg[0]["busy"] == pytest.approx(100 - 0.0 - 0.33)  # iowait is idle, as in /proc/stat
    assert avg[1]["busy"] == pytest.approx(100 - 0.0 - 0.99)


def test_mpstat_without_a_whole_interval_is_an_error():
    head = fixture_text("mpstat_P_ALL_1.txt").split("\n\n")[0]
    with pytest.raises(ParseError, match="no per-CPU Average"):
        parse_mpstat_average(head)
    with pytest.raises(ParseError, match="before its header"):
        parse_mpstat_average("Average:       0   1.0\n")


def test_artifact_overhead_from_its_readme_runtime():
    a = artifact.artifact_single_flow()
    assert a["measurement_s"] == 140  # 7 configurations x 20 s
    assert a["ratio"] == pytest.approx(360 / 140)
    assert a["per_point_overhead_s"] == pytest.approx(360 / 7 - 20)
    # the run length is not in the README: labelled an assumption, with its sensitivity beside it
    assert a["sources"]["run_s"].startswith("ASSUMPTION")
    assert "~6 minutes" in a["sources"]["runtime_min"]
    assert a["ratio_if_run_s"] == {"10": pytest.approx(360 / 70), "30": pytest.approx(360 / 210)}
    with pytest.raises(ValueError):
        artifact.overhead_ratio(6, 0, 20)


def test_artifact_readme_text_is_quoted_from_the_seed():
    seed = Path("/work/shared/seeds/003_4c238b68d9995fae.txt")
    if not seed.exists():
        pytest.skip("seed not available")
    text = seed.read_text()
    assert artifact.README_TEXT in text
    assert "20 s" not in text and "20 seconds" not in text  # why run_s is an assumption


def _rows(values: dict[str, list[float]]) -> list[dict]:
    return [{"repetition": i, "variant": v, "throughput_gbps": x} for v, xs in values.items() for i, x in enumerate(xs)]


def test_fidelity_and_profiler_cost_are_paired_medians():
    rows = _rows({"hand": [10.0, 20.0, 10.0], "harness": [9.9, 19.0, 10.0], "perf99": [9.9, 19.0, 10.0],
                  "perf4000": [7.0, 15.0, 8.0], "perf999": [9.0, 19.0, 9.8], "default": [8.0, 17.0, 9.0],
                  "perf-nostat": [9.9, 19.0, 10.0]})
    fid = live.fidelity(rows)
    assert fid["value"] == pytest.approx(0.99) and fid["verdict"] == "met"
    cost = live.profiler_cost(rows)
    assert cost["curve"]["99"]["median"] == pytest.approx(1.0)
    assert cost["curve"]["4000"]["median"] == pytest.approx(15 / 19)
    assert cost["chosen_freq_hz"] == 99  # 499 Hz was not measured: nothing above 99 Hz qualifies
    assert "499 Hz has 0 clean" in cost["chosen_why"]
    # the headline is hostnet's default profiling (perf999); the latency probe's run is a part of its own
    assert cost["value"] == pytest.approx(0.98) and cost["figure"].startswith("profiler cost")
    assert cost["recommend_default_change"] is (DEFAULT_FREQ_HZ != 99)
    assert "RECOMMENDATION" in cost["figure"] and "change the default to 99 Hz" in cost["figure"]
    assert cost["parts"]["perf-nostat"]["geomean"] == pytest.approx(1.0) and cost["parts"]["perf-nostat"]["n"] == 3
    assert cost["parts"]["default"]["geomean"] < 0.9  # perf + the latency probe: every pair slower
    assert "resolving 2 % at this spread would take ~" in cost["figure"]


def _curve(medians: dict[int, float], n: int = 4) -> dict[int, Summary]:
    return {f: Summary(m, m, m, n) for f, m in medians.items()}


def test_choose_frequency_needs_every_lower_frequency_to_meet_the_target():
    chosen, _ = live.choose_frequency(_curve({99: 1.0, 499: 0.97, 999: 0.96, 4000: 0.8}), 0.95)
    assert chosen == 999
    # 999 and 4000 Hz meet the target but 499 Hz does not: the prefix stops at 99 Hz
    chosen, why = live.choose_frequency(_curve({99: 1.0, 499: 0.90, 999: 0.97, 4000: 0.96}), 0.95)
    assert chosen == 99 and "499 Hz has median 0.900" in why
    assert live.choose_frequency(_curve({99: 1.0, 499: 1.0, 999: 0.99, 4000: 0.96}), 0.95)[0] == 4000
    chosen, why = live.choose_frequency(_curve({99: 0.9, 499: 1.0, 999: 1.0, 4000: 1.0}), 0.95)
    assert chosen is None and "99 Hz" in why


def test_choose_frequency_needs_enough_clean_pairs():
    curve = _curve({99: 1.0, 499: 1.0, 999: 1.0, 4000: 1.0})
    curve[499] = Summary(1.0, 1.0, 1.0, 1)  # one clean pair is not a median
    assert live.choose_frequency(curve, 0.95) == (99, "499 Hz has 1 clean repetition(s), fewer than 2; "
                                                      "99 Hz and every lower frequency meet it")
    del curve[99]  # not measured at all
    assert live.choose_frequency(curve, 0.95)[0] is None


def _flag(rows: list[dict], flagged: set[tuple[str, int]]) -> list[dict]:
    for r in rows:
        r["contaminated"] = (r["variant"], r["repetition"]) in flagged
    return rows


def test_profiler_cost_chooses_from_clean_runs_only():
    # as measured, 499 Hz looks fine (median 1.0 over 4 pairs); its 2 clean pairs are 0.8
    rows = _flag(_rows({"harness": [10.0] * 4, "perf99": [10.0] * 4, "perf499": [8.0, 8.0, 12.0, 12.0],
                        "perf999": [10.0] * 4, "perf4000": [10.0] * 4, "default": [10.0] * 4}),
                 {("perf499", 2), ("perf499", 3)})
    cost = live.profiler_cost(rows)
    assert cost["curve"]["499"]["median"] == pytest.approx(1.0)
    assert cost["curve_clean"]["499"] == {"median": 0.8, "min": 0.8, "max": 0.8, "n": 2}
    assert cost["chosen_freq_hz"] == 99
    # every run flagged: nothing is chosen, and the figure says so plainly
    rows = _flag(rows, {(r["variant"], r["repetition"]) for r in rows})
    cost = live.profiler_cost(rows)
    assert cost["chosen_freq_hz"] is None and "no frequency chosen: 99 Hz has 0 clean" in cost["figure"]
    assert cost["verdict"].startswith("inconclusive") and not cost["recommend_default_change"]


def test_profiler_cost_recommends_only_when_the_choice_differs_from_hostnet():
    assert "RECOMMENDATION" not in live.frequency_text(DEFAULT_FREQ_HZ, "why", DEFAULT_FREQ_HZ)
    assert "change the default to 499 Hz" in live.frequency_text(499, "why", 999)
    assert live.frequency_text(None, "99 Hz has 0 clean", 999).startswith("no frequency chosen: 99 Hz has 0 clean")


def test_failed_runs_are_left_out_and_counted():
    rows = _rows({"hand": [10.0, 10.0, 10.0], "harness": [9.9, float("nan"), 9.9]})
    rows[4].update(failed=True, error="RunFailed: boom")
    rows[4]["contaminated"] = True  # a failed run is no measurement: not counted as flagged either
    fid = live.fidelity(rows)
    assert fid["summary"]["n"] == 2 and fid["value"] == pytest.approx(0.99) and fid["verdict"] == "met"
    assert "1 run(s) failed and left out (harness r1)" in fid["figure"]
    assert live.by_variant(rows, "harness") == {0: 9.9, 2: 9.9}
    # as read back from CSV
    assert live.is_true("True") and not live.is_true(float("nan")) and not live.is_true("False")


def test_run_variants_records_a_failure_and_goes_on(monkeypatch, tmp_path):
    calls = []

    def fake_run_point(tb, req):
        run_id = req.run_id
        calls.append(run_id)
        if run_id == "harness-r0":
            raise RunFailed("iperf3 exited 1 (run directory: x)")
        d = tmp_path / run_id
        (d).mkdir()
        (d / "tidy.csv").write_text("metric,side,value\nthroughput_gbps,both,9.5\nforeign_cpu_pct,both,1.0\n")
        (d / "manifest.json").write_text(json.dumps({"contaminated": False}))
        return d

    def fake_by_hand(tb, cfg, wl):
        if wl.duration_s and len(calls) == 2:
            raise TimeoutError("iperf3 client hung")
        return 10.0

    monkeypatch.setattr(live, "run_point", fake_run_point)
    monkeypatch.setattr(live, "by_hand", fake_by_hand)
    rows = live.run_variants(None, ["hand", "harness"], 2, 2, 1, tmp_path, "c", lambda msg: None)
    assert [(r["variant"], r["repetition"], live.failed(r)) for r in rows] == [
        ("hand", 0, False), ("harness", 0, True), ("harness", 1, False), ("hand", 1, True)]
    assert "RunFailed" in rows[1]["error"] and "TimeoutError" in rows[3]["error"]
    assert live.fidelity(rows)["summary"]["n"] == 0  # no repetition where both ran


def test_paced_flow_is_hostnets_argv_plus_a_rate():
    f = Flow(0, "sender", 0, "receiver", 1, 5201)
    paced, plain = live.PacedFlows(4, 2, rate_gbps=5.0), LongFlows(4, 2)
    assert paced.client_argv(f, "10.0.0.2") == [*plain.client_argv(f, "10.0.0.2"), "-b", "5G"]
    assert paced.server_argv(f, "10.0.0.2") == plain.server_argv(f, "10.0.0.2")
    assert isinstance(live.workload("cpu-partial", 4, 2), live.PacedFlows)
    assert type(live.workload("default", 4, 2)) is LongFlows


def test_mpstat_runs_in_neither_compared_variant_of_benchmark_2():
    assert "extra" not in live.variant_kwargs("default")
    assert "extra" not in live.variant_kwargs("harness")
    assert live.variant_kwargs("default")["latency_sample_every"] == 1
    for v in live.CPU_VARIANTS:
        kw = live.variant_kwargs(v)
        assert kw["perf_freq_hz"] == DEFAULT_FREQ_HZ and kw["latency_sample_every"] == 1
        assert [p.name for p in kw["extra"]()] == ["mpstat"]
    assert live.variants_for(["cpu_accounting"], bench_main.FULL["variants"]) == ["cpu", "cpu-partial", "spin",
                                                                                  "spin-partial"]
    assert live.variants_for(["fidelity"], bench_main.FULL["variants"]) == ["hand", "harness"]


def _side(rep, variant, side, ours, mp, perf, contaminated=False):
    return {"repetition": rep, "variant": variant, "load": live.CPU_VARIANTS[variant], "side": side,
            "cpus": [0 if side == "sender" else 1], "contaminated": contaminated,
            "hostnet_pct": ours, "mpstat_pct": mp, "perf_pct": perf}


def _cpu_runs(perf_off: float = 0.5, partial_busy: float = 45.0, contaminated: bool = False) -> list[dict]:
    out = []
    for rep in range(2):
        out += [_side(rep, "cpu", "sender", 99.0, 99.2, 99.5, contaminated),
                _side(rep, "cpu", "receiver", 98.0, 98.1, 98.4, contaminated),
                _side(rep, "cpu-partial", "sender", partial_busy, partial_busy - 0.3, partial_busy + perf_off,
                      contaminated),
                _side(rep, "cpu-partial", "receiver", 30.0, 30.4, 31.0, contaminated)]
    return out


def test_cpu_accounting_judges_mpstat_and_perf_against_2pp():
    res = live.cpu_agreement([], _cpu_runs())
    assert res["verdict"] == "met" and res["value"] == pytest.approx(1.0)
    assert res["by_load"]["partial"]["busy_pct"]["sender"]["median"] == 45.0
    # mpstat agrees, perf's samples are 3 pp off at the partial point: below target
    res = live.cpu_agreement([], _cpu_runs(perf_off=3.0))
    assert res["verdict"] == "below target" and res["value"] == pytest.approx(3.0)
    assert "worst 0.40 (met)" in res["figure"] and "worst 3.00 (below target)" in res["figure"]


def test_cpu_accounting_needs_a_partly_loaded_point_and_clean_runs():
    full_only = [r for r in _cpu_runs() if r["load"] == "full"]
    assert live.cpu_agreement([], full_only)["verdict"] == "inconclusive: no partly loaded run (met as measured)"
    busy = _cpu_runs(partial_busy=99.0)
    for r in busy:
        r["hostnet_pct"] = max(r["hostnet_pct"], 95.0)
        r["mpstat_pct"] = r["perf_pct"] = r["hostnet_pct"]
    assert live.cpu_agreement([], busy)["verdict"].startswith("inconclusive: no side of the paced runs was 10-90 %")
    assert live.cpu_agreement([], _cpu_runs(contaminated=True))["verdict"] == (
        "inconclusive: 4 of 4 runs under foreign load (met as measured)")
    missing = _cpu_runs()
    missing[0]["perf_pct"] = float("nan")  # a source that gave nothing is not agreement
    assert live.cpu_agreement([], missing)["verdict"] == "not measured"


def test_cpu_accounting_pairs_the_spinner_runs_with_the_same_repetition_and_load():
    """The SCHED_IDLE spinner is the source independent of the kernel's tick accounting: a paced flow
    that /proc/stat calls 2 % busy but that took 20 % of the spinner's CPU fails the 2 pp target."""
    runs = _cpu_runs()
    for r in runs:
        if r["load"] == "partial" and r["side"] == "receiver":
            r.update(hostnet_pct=2.0, mpstat_pct=2.1, perf_pct=2.5)
    spins = [{"repetition": rep, "variant": v, "spin_sender_pct": s, "spin_receiver_pct": rcv}
             for rep in range(2) for v, s, rcv in (("spin", 98.5, 97.0), ("spin-partial", 45.5, 20.0))]
    spins.append({"repetition": 1, "variant": "spin", "spin_sender_pct": 10.0, "spin_receiver_pct": 10.0,
                  "spin_overran": True})  # a spinner that outlasted its flow measured idle time: left out
    res = live.cpu_agreement(spins, runs)
    assert res["verdict"] == "below target" and res["value"] == pytest.approx(18.0)
    assert res["by_load"]["partial"]["spin_busy_pct"]["receiver"]["median"] == 20.0
    assert "spinner (own run of the same flow) finds sender 46 %, receiver 20 % busy" in res["figure"]
    # the paced point counts as partly loaded when the spinner says so, though /proc/stat says 2-3 %
    low = _cpu_runs()
    for r in low:
        if r["load"] == "partial":
            r.update(hostnet_pct=2.5, mpstat_pct=2.4, perf_pct=2.6)
    assert live.cpu_agreement(spins, low)["verdict"] == "below target"
    assert live.cpu_agreement([], low)["verdict"].startswith("inconclusive: no side of the paced runs")
    # older stored results have no spin runs: judged on mpstat and perf as before
    assert live.cpu_agreement([], _cpu_runs())["verdict"] == "met"


def test_sweep_overhead_is_judged_on_measurement_windows_over_repeated_sweeps():
    def sweep(wall, window=9.0):
        return {"wall_s": wall, "failed": 0, "points": [
            {"setup_s": 0.1, "traffic_s": 12.0, "after_s": 1.0, "window_s": window, "point_wall_s": wall / 3}] * 3}
    m = {"sweeps": [sweep(39.0), sweep(42.0), sweep(40.5),
                    {"wall_s": 5.0, "points": [], "failed": 3, "error": "PreflightError: x"}]}
    res = sweep_overhead.result(m, 10, 2)
    # points without their start times (stored before they kept them): judged the earlier way,
    # per point (wall - 3 warm-ups of 2 s - 3 windows of 9 s) / 3
    assert res["summary"] == {"median": pytest.approx(2.5), "min": pytest.approx(2.0), "max": pytest.approx(3.0),
                              "n": 3}
    assert res["verdict"] == "below target" and res["unit"] == "s"  # 2.5 s > 0.5 s
    assert res["ratio_windows"]["median"] == pytest.approx(1.5)
    assert res["ratio_iperf3"]["median"] == pytest.approx(40.5 / 36)
    assert res["floor_windows"]["median"] == pytest.approx(36 / 27)
    assert "sweep 3: PreflightError: x" in res["figure"] and "ASSUMPTION" not in res["figure"]
    assert "an assumption" in res["figure"]
    # the earlier stored format: one sweep, its points as rows
    old = {"wall_s": 44.5, "rows": sweep(0)["points"], "failed": 0}
    assert sweep_overhead.result(sweep_overhead.stored_sweeps(old), 10, 2)["value"] == pytest.approx((44.5 - 33) / 3)
    # with start times: a point is judged by start to next start beyond its warm-up and window;
    # what the sweep pays once (wall - the steps - the warm-ups - the windows) beside it
    timed = {"wall_s": 40.0, "failed": 0, "points": [
        {"setup_s": 0.1, "traffic_s": 12.0, "after_s": 1.0, "window_s": 9.0, "point_wall_s": 12.0, "started": t}
        for t in (100.0, 111.4, 123.0)]}
    res = sweep_overhead.result({"sweeps": [timed]}, 10, 2)
    assert res["value"] == pytest.approx(((11.4 - 11) + (11.6 - 11)) / 2)
    assert res["once_per_sweep_s"]["median"] == pytest.approx(40 - (0.4 + 0.6) - 6 - 27)
    assert res["whole_sweep_s_per_point"]["median"] == pytest.approx((40 - 6 - 27) / 3)
    assert "start to next start" in res["metric"] and "once per sweep" in res["figure"]
    # hostnet's default profiling: perf (and perf stat); the latency probe is the Rx-buffer study's own
    assert sweep_overhead.spec(3, 10, 2).latency_sample_every == 0
    assert sweep_overhead.spec(3, 10, 2).perf_freq_hz == DEFAULT_FREQ_HZ


def test_perf_sample_share_per_cpu_on_captured_report():
    share = live.perf_busy_pct(fixture_text("perf_report_all-opts.txt"), "6.18.44")
    assert set(share) == {0, 1}
    assert all(0 < v <= 100 for v in share.values())


def test_sweep_phases_from_manifest_timestamps():
    m = {"started": 100.0, "ended": 116.0, "window": {"clients_started": 101.5, "seconds": 9.3}}
    p = phases(m, 12.0)
    assert p == {"setup_s": 1.5, "traffic_s": 12.0, "after_s": 2.5, "window_s": 9.3, "point_wall_s": 16.0,
                 "started": 100.0}


def test_summary_table_and_doc_block_keep_the_prose(tmp_path):
    res = {"name": "fidelity", "title": "Harness fidelity", "metric": "m", "unit": "ratio", "value": 0.99,
           "summary": {"median": 0.99, "min": 0.97, "max": 1.0, "n": 3}, "op": ">=", "target": 0.98,
           "verdict": "met", "figure": "harness fidelity = 0.99"}
    assert "| 1 | Harness fidelity | m | 0.990 (0.970–1.000, n=3) → **0.990** | >= 0.98 | met |" in results.table([res])
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\nintro\n{results.BEGIN}\nold\n{results.END}\n## Why\nprose\n")
    results.update_doc("new table\n", doc)
    text = doc.read_text()
    assert "old" not in text and "new table" in text and text.endswith("## Why\nprose\n")


def test_doc_block_is_rewritten_only_when_every_benchmark_ran(monkeypatch, tmp_path, capsys):
    written = []
    monkeypatch.setattr(results, "update_doc", lambda text: written.append(text))
    some = [{"name": n} for n in bench_main.NAMES[:4]]
    assert not bench_main.update_doc_if_complete(some, "partial", tmp_path)
    assert written == []
    assert "analysis_speed, replay_speed, flow_start, cli_start, text_speed did not run" in capsys.readouterr().out
    assert bench_main.update_doc_if_complete([{"name": n} for n in bench_main.NAMES], "full", tmp_path)
    assert written == ["full"]


def test_rejudge_reads_the_earlier_stored_format(tmp_path):
    meta = {"quick": False, "params": {"sweep_duration": 10, "sweep_warmup": 2}}
    (tmp_path / "summary.json").write_text(json.dumps({"meta": meta}))
    (tmp_path / "fidelity.csv").write_text("repetition,variant,throughput_gbps,contaminated\n0,hand,10,\n1,hand,10,\n")
    (tmp_path / "profiler_cost.csv").write_text(
        "repetition,variant,throughput_gbps,contaminated\n0,harness,10,True\n1,harness,10,True\n"
        "0,default,9,True\n1,default,9,True\n0,perf99,10,False\n1,perf99,10,False\n")
    (tmp_path / "cpu_accounting.csv").write_text(
        "repetition,side,cpus,hostnet_pct,mpstat_pct,perf_pct\n0,sender,[0],99,99,99.5\n1,receiver,[1],100,100,100\n")
    (tmp_path / "cpu_accounting.json").write_text("{}")
    (tmp_path / "sweep_overhead.json").write_text(json.dumps({"wall_s": 30.0, "failed": 0, "rows": [
        {"setup_s": 0.1, "traffic_s": 12, "after_s": 1.0, "window_s": 10.0, "point_wall_s": 15.0}] * 2}))
    done = {r["name"]: r for r in bench_main.rejudge(tmp_path, meta)}
    assert set(done) == {"fidelity", "profiler_cost", "cpu_accounting", "sweep_overhead"}
    assert done["profiler_cost"]["verdict"].startswith("inconclusive: 4 of 4")
    assert done["profiler_cost"]["chosen_freq_hz"] is None  # its harness runs were all flagged
    # the foreign-load flag of the earlier cpu rows comes from the default runs of profiler_cost
    assert done["cpu_accounting"]["verdict"] == (
        "inconclusive: 2 of 2 runs under foreign load; no partly loaded run (met as measured)")
    # (30 s - 2 warm-ups of 2 s - 2 windows of 10 s) / 2 points; the earlier judged ratio stays beside it
    assert done["sweep_overhead"]["value"] == pytest.approx(3.0) and "perf only" in done["sweep_overhead"]["metric"]
    assert done["sweep_overhead"]["ratio_windows"]["median"] == pytest.approx(1.5)


def test_throughput_ratios_under_foreign_load_are_inconclusive():
    rows = _rows({"hand": [10.0, 10.0], "harness": [9.9, 10.0]})
    for r in rows:
        r["contaminated"] = r["variant"] == "harness"
    assert live.fidelity(rows)["verdict"].startswith("inconclusive: 2 of 2 runs under foreign load (met")
    rows[-1]["contaminated"] = False
    assert live.fidelity(rows)["verdict"] == "met"  # one of two flagged: not most


def test_analysis_speed_is_judged_against_perf_script_and_the_users_pipeline_at_every_size():
    from bench import analysis_speed

    def rows(size, ours, script, pipe, report=0.1):
        out = []
        for rep in range(2):
            out += [{"size": size, "repetition": rep, "mode": "ours", "wall_s": ours, "samples": size,
                     "maxrss_python_mb": 80.0, "maxrss_children_mb": 30.0, "stages": {"classify_s": 0.01}},
                    {"size": size, "repetition": rep, "mode": "perf-script", "wall_s": script,
                     "maxrss_python_mb": 20.0, "maxrss_children_mb": 30.0},
                    {"size": size, "repetition": rep, "mode": "perf-report", "wall_s": report,
                     "maxrss_python_mb": 20.0, "maxrss_children_mb": 30.0},
                    {"size": size, "repetition": rep, "mode": "script-collapse",
                     **({"wall_s": pipe, "collapser": "inferno-collapse-perf"} if pipe else
                        {"unsupported": "neither is installed"}), "maxrss_python_mb": 20.0,
                     "maxrss_children_mb": 9.0}]
        return out
    res = analysis_speed.result(rows(10**4, 0.105, 0.1, 0.6) + rows(10**5, 1.0, 1.0, 6.0))
    assert res["value"] == pytest.approx(1.05) and res["verdict"] == "met"  # worst size 1.05 <= 1.1, 6x >= 5x
    assert res["pipeline_speedup_min"] == pytest.approx(5.71, abs=0.01)
    assert "perf script | inferno-collapse-perf 0.60 s = 5.7x slower than ours" in res["figure"]
    slow = analysis_speed.result(rows(10**4, 0.1, 0.1, 0.3))  # ours only 3x faster than the pipeline
    assert slow["verdict"] == "below target"
    missing = analysis_speed.result(rows(10**4, 0.1, 0.1, None))  # no collapser installed: said, not invented
    assert missing["verdict"] == "met; pipeline not measured" and "pipeline unsupported (neither" in missing["figure"]


def test_flow_start_is_judged_at_24_flows_and_fails_on_an_uncovered_window():
    from bench import flow_start
    rows = [{"repetition": 0, "n": n, "method": m, "spread_s": s}
            for n, m, s in ((2, "one-by-one", 0.06), (24, "one-by-one", 0.72), (2, "start_many", 0.001),
                            (24, "start_many", 0.004), (2, "run_point", 0.002), (24, "run_point", 0.006))]
    res = flow_start.result(rows)
    assert res["value"] == pytest.approx(0.006) and res["verdict"] == "met"
    assert "n=24: one-by-one 720.0 ms, start_many 4.0 ms, run_point 6.0 ms" in res["figure"]
    rows.append({"repetition": 1, "n": 24, "method": "run_point", "spread_s": float("nan"), "failed": True,
                 "covered": False, "error": "flow 3 started up to 0.2 s after ... not covered by every flow"})
    assert flow_start.result(rows)["verdict"] == "below target"


def test_each_part_of_the_profiling_is_a_variant_of_its_own():
    from hostnet.probes.perf import PerfOptions
    assert live.variant_kwargs("perf-nostat") == {"perf_freq_hz": DEFAULT_FREQ_HZ, "cache_counters": False}
    assert live.variant_kwargs("perf-m2048")["perf_options"] == PerfOptions(mmap_pages=2048)
    assert live.variant_kwargs("latency") == {"perf_freq_hz": DEFAULT_FREQ_HZ, "profile": False,
                                              "latency_sample_every": 1}
    assert set(live.COST_PARTS) <= set(live.variants_for(["profiler_cost"], ["harness", *live.COST_PARTS]))


def test_replay_is_judged_on_warm_cache_runs_and_reports_the_cold_one():
    from bench import replay_speed
    rows = [{"repetition": -1, "wall_s": 68.0, "figures": 89, "cache": "cold"},
            {"repetition": 0, "wall_s": 50.0, "figures": 89, "cache": "warm"},
            {"repetition": 1, "wall_s": 54.0, "figures": 89, "cache": "warm"}]
    res = replay_speed.result(rows)
    assert res["value"] == pytest.approx(52.0) and res["verdict"] == "below target"  # 52 s > 20 s
    assert "68.0 s with an empty one" in res["figure"] and res["summary"]["n"] == 2
    old = replay_speed.result([{"repetition": 0, "wall_s": 59.0, "figures": 74}])  # stored before the cache
    assert old["value"] == pytest.approx(59.0)


def test_a_replay_whose_figures_are_not_the_committed_ones_bytes_fails_the_replay_benchmark(tmp_path):
    from bench import replay_speed
    made, committed = tmp_path / "made", tmp_path / "committed"
    for d in (made, committed):
        (d / "sub").mkdir(parents=True)
        (d / "a.svg").write_bytes(b"<svg/>")
        (d / "meta.json").write_text("{}")  # not a figure file: not compared
    (made / "sub" / "b.png").write_bytes(b"\x89PNG one")
    (committed / "sub" / "b.png").write_bytes(b"\x89PNG two")
    (committed / "c.svg").write_bytes(b"<svg/>")
    (made / "meta.json").write_text('{"other": 1}')
    assert replay_speed.differing(made, committed) == ["c.svg", "sub/b.png"]
    (made / "sub" / "b.png").write_bytes(b"\x89PNG two")
    (made / "c.svg").write_bytes(b"<svg/>")
    assert replay_speed.differing(made, committed) == []
    rows = [{"repetition": 0, "wall_s": 12.0, "figures": 89, "differing": 0, "cache": "warm"},
            {"repetition": 1, "wall_s": 12.5, "figures": 89, "differing": 2, "cache": "warm"}]
    res = replay_speed.result(rows)
    assert res["verdict"] == "below target" and "2 not byte-identical to figures/" in res["figure"]
    rows[1]["differing"] = 0
    assert replay_speed.result(rows)["verdict"] == "met"


def test_cli_start_is_judged_on_the_slowest_commands_median_and_a_traceback_fails_it():
    from bench import cli_start
    argvs = cli_start.commands()
    assert ("--help",) in argvs and ("sweep", "no-such-experiment") in argvs and len(argvs) == 20

    def rows(slow: float, said: str = "hostnet: no such file", rc: int = 2):
        return [{"command": c, "repetition": r, "wall_s": slow if c == "compare --help" else 0.2,
                 "rc": rc if c.startswith("breakdown /") else 0, "said": said if c.startswith("breakdown /") else ""}
                for c in (" ".join(a) for a in argvs) for r in range(3)]
    ok = cli_start.result(rows(0.3))
    assert ok["verdict"] == "met" and ok["value"] == pytest.approx(0.3) and "(compare --help)" in ok["figure"]
    assert cli_start.result(rows(0.9))["verdict"] == "below target"
    crashed = cli_start.result(rows(0.3, said="KeyError: '99-x' is not a registered notebook", rc=1))
    assert crashed["verdict"] == "below target" and crashed["tracebacks"] == ["breakdown /nonexistent/perf.data"]
    traced = cli_start.result([{**r, "traceback": r["command"] == "--help"} for r in rows(0.3)])
    assert traced["tracebacks"] == ["--help"]  # a traceback is a failure though the process exited 0


def test_text_speed_is_judged_on_the_slowest_size_and_the_peak_memory():
    from bench import text_speed
    rows = [{"size": s, "repetition": 0, "mode": m, "text_mb": mb, "wall_s": w, "maxrss_python_mb": rss,
             "maxrss_children_mb": crss, "samples": s, **({"collapser": "inferno-collapse-perf"} if m != "text-ours"
                                                         else {})}
            for s, mb, m, w, rss, crss in ((10**4, 9.0, "text-ours", 0.3, 80, 0),
                                            (10**4, 9.0, "text-collapse", 0.2, 30, 9),
                                            (10**5, 90.0, "text-ours", 4.5, 90, 0),
                                            (10**5, 90.0, "text-collapse", 2.0, 30, 9))]
    res = text_speed.result(rows)
    assert res["value"] == 20.0 and res["verdict"] == "met"  # 90 MB in 4.5 s: the slower size
    assert ("1e+05 samples, 90 MB: ours 4.50 s (20.0 MB/s, peak RSS 90 MB), inferno-collapse-perf 2.00 s"
            in res["figure"])
    heavy = [{**r, "maxrss_python_mb": 150} if r["mode"] == "text-ours" else r for r in rows]
    assert text_speed.result(heavy)["verdict"] == "below target"  # fast, but over 100 MB
    slow = [{**r, "wall_s": 9.0} if r["mode"] == "text-ours" else r for r in rows]
    assert text_speed.result(slow)["verdict"] == "below target"  # 90 MB in 9 s: 10 MB/s
