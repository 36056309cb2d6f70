"""What `hostnet run` prints of each run (analysis.run_summary): read from the run directory."""
from conftest import REPO
from hostnet import store
from hostnet.analysis import run_summary
from hostnet.analysis.run_summary import cpu_accounting_note

RUNS = REPO / "data" / "runs"


def test_run_summary_cautions_about_partly_loaded_cpus_under_tick_accounting():
    tick = {"versions": {"local": {"kernel": "6.18", "cpu_accounting": "tick (HZ=250)"}}}
    note = cpu_accounting_note(tick, {"sender": 99.0, "receiver": 2.3})
    assert note.startswith("receiver CPU below 90 % with tick (HZ=250) CPU accounting")
    assert cpu_accounting_note(tick, {"sender": 99.0, "receiver": 95.0}) == ""
    precise = {"versions": {"local": {"kernel": "6.18", "cpu_accounting": "precise"}}}
    assert cpu_accounting_note(precise, {"sender": 10.0, "receiver": 2.3}) == ""
    assert cpu_accounting_note({"versions": {"local": {"kernel": "6.18"}}}, {"sender": 1.0}) == ""  # older runs
    # runs that kept their snapshot times measure busy as wall minus idle: no tick bias to warn of
    assert cpu_accounting_note({**tick, "cpu_util_method": {"local": "wall-minus-idle"}}, {"receiver": 2.3}) == ""


def test_the_summary_of_stored_runs_says_what_each_measured_or_why_it_failed(tmp_path):
    runs = [r for r in store.list_runs(RUNS, "20261127-232153-single-flow-embedded")][:2]
    text = run_summary.text(runs)
    for run in runs:
        m = store.load_manifest(run)
        assert f"{m['config_label']} (repetition {m['repetition']}): status {m['status']}" in text
        assert f"run directory: {run}" in text
    assert "throughput/core" in text and "top receiver" in text and "foreign load" in text
    assert text.endswith("(docs/measurement.md).")
    failed = store.Campaign(tmp_path, "c").new_run("p-r0")
    failed.manifest.update(experiment="single-flow", config={"name": "tsogro"}, config_label="tsogro", repetition=0)
    run = failed.finish("failed", error="iperf3 exited 1")
    assert "  error: iperf3 exited 1" in run_summary.text([run]) and run_summary.text([]) == "no run succeeded"
