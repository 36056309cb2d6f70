"""The receive-path comparison (hostnet.sections.receive_path): structural figures per run and the table,
on synthetic tidy data where the answer is known."""
import pandas as pd
import pytest

from hostnet.sections import receive_path


def _tidy():
    rows = []

    def add(run, side, metric, value, category=None, cfg="no-opts"):
        rows.append({"run_id": run, "campaign": "c", "experiment": "single-flow", "config": cfg, "repetition": 0,
                     "side": side, "metric": metric, "category": category, "flow": None, "value": value})
    for run, gbps in (("a", 8.0), ("b", 10.0)):
        add(run, "both", "throughput_gbps", gbps)
        add(run, "sender", "perf_receive_path_samples_count", 10)
        add(run, "receiver", "perf_receive_path_samples_count", 90)
        add(run, "sender", "perf_busy_samples_count", 900)
        add(run, "receiver", "perf_busy_samples_count", 100)
        add(run, "sender", "perf_vm_exit_samples_count", 50)
        add(run, "receiver", "perf_vm_exit_samples_count", 0)
        for side, res, cal in (("sender", 100, 300), ("receiver", 500, 100)):
            add(run, side, "interrupts_delta_count", res, "RES")
            add(run, side, "interrupts_delta_count", cal, "CAL")
            add(run, side, "interrupts_delta_count", 999, "LOC")  # the timer is not an IPI
            add(run, side, "cpu_util_pct", 90.0)
            add(run, side, "perf_sampling_coverage_ratio", 0.9)
    return pd.DataFrame(rows)


def test_structure_per_run():
    s = receive_path.structure(_tidy(), receive_path.windows([{"run_id": r, "window": {"seconds": 4.0}}
                                                              for r in ("a", "b")]))
    assert list(s.receive_path_on_receiver_pct) == [90.0, 90.0]
    assert list(s.vm_exit_pct) == [5.0, 5.0]
    # 1000 IPIs while moving 8 Gbit/s x 4 s = 4 GB
    assert s.loc["a", "ipis_per_gb"] == pytest.approx(1000 / 4.0)
    assert s.loc["b", "ipis_per_gb"] == pytest.approx(1000 / 5.0)


def test_markdown_table_has_every_column():
    t = pd.DataFrame([{"mode": "napi-thread", "step": "no-opts", "runs": 2, "throughput_gbps": 9.0,
                       "throughput_range": "8.0–10.0", "receive_path_on_receiver_pct": 90.0, "ipis_per_gb": 225.0,
                       "vm_exit_pct": 5.0, "sender_cpu_pct": 90.0, "receiver_cpu_pct": 90.0,
                       "sender_coverage": 0.9, "receiver_coverage": float("nan")}])
    md = receive_path.markdown(t).splitlines()
    assert md[0].startswith("| receive path | step") and md[2].count("|") == md[0].count("|")
    assert "| 225 |" in md[2] and md[2].endswith("| – |")
