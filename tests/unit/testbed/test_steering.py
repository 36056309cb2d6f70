"""Receive steering as a testbed property (hostnet.testbed.steering): the default, the
environment override a command or a kernel reads at its start (measure/options.py), refusal of
unknown modes, and where it is recorded."""
import pytest

from hostnet.testbed import EmbeddedLayout, TestbedError, from_layout, steering


def test_default_is_napi_thread_and_the_environment_chooses_another_at_the_edge_only(monkeypatch):
    from hostnet.measure.options import ENV, LiveOptions
    monkeypatch.setenv(ENV["steering"], "rps")
    # nothing below the edge reads the environment: a layout made without a steering has the default
    assert EmbeddedLayout("x").steering == steering.DEFAULT == "napi-thread"
    assert LiveOptions.from_environment({}).steering == ""  # the testbed's default, steering.DEFAULT
    assert LiveOptions.from_environment({ENV["steering"]: "rps"}).steering == "rps"
    assert LiveOptions.from_environment({ENV["steering"]: "rps"}, steering="none").steering == "none"  # an option
    with pytest.raises(steering.SteeringError, match="one of napi-thread, rps, none"):
        LiveOptions.from_environment({ENV["steering"]: "irq"})


def test_top_up_budget_from_the_environment_else_the_defaults_and_handed_back_to_kernels():
    from hostnet.measure.options import ENV, LiveOptions
    from hostnet.measure.options import BUDGET_MINUTES, BUDGET_RUNS
    live = LiveOptions.from_environment({})
    assert (live.top_up_runs, live.top_up_minutes, live.testbed) == (BUDGET_RUNS, BUDGET_MINUTES, "embedded")
    live = LiveOptions.from_environment({ENV["top_up_runs"]: "0", ENV["top_up_minutes"]: "2.5"}, testbed="lab")
    assert (live.top_up_runs, live.top_up_minutes, live.testbed) == (0, 2.5, "lab")
    assert LiveOptions.from_environment(live.environment()) == LiveOptions(top_up_runs=0, top_up_minutes=2.5)
    assert ENV["steering"] not in live.environment()  # no choice made: none handed on
    with pytest.raises(ValueError, match="HOSTNET_TOP_UP_RUNS"):
        LiveOptions.from_environment({ENV["top_up_runs"]: "many"})
    with pytest.raises(ValueError, match="not negative"):
        LiveOptions(top_up_runs=-1)


def test_unknown_mode_refused_when_the_layout_is_made():
    with pytest.raises(TestbedError, match="receive steering 'dpdk'"):
        EmbeddedLayout("x", steering="dpdk")


def test_the_mode_is_in_the_testbed_description_and_notes(state_dir):
    tb = from_layout(EmbeddedLayout("unit", steering="none"))
    assert tb.describe()["rx_steering"] == "none"
    assert "receive path: kernel default" in tb.notes[0]
    assert all(steering.describe(m) for m in steering.EMBEDDED_MODES + (steering.NIC,))
