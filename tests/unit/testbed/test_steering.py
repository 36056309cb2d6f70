"""Receive steering as a testbed property (hostnet.testbed.steering): the default, the
environment override a campaign uses, refusal of unknown modes, and where it is recorded."""
import pytest

from hostnet.testbed import EmbeddedLayout, TestbedError, from_layout, steering


def test_default_is_napi_thread_and_the_environment_chooses_another(monkeypatch):
    monkeypatch.delenv(steering.ENV, raising=False)
    assert steering.default() == steering.DEFAULT == "napi-thread"
    monkeypatch.setenv(steering.ENV, "rps")
    assert steering.default() == "rps" and EmbeddedLayout("x").steering == "rps"
    monkeypatch.setenv(steering.ENV, "irq")
    with pytest.raises(steering.SteeringError, match="one of napi-thread, rps, none"):
        steering.default()


def test_unknown_mode_refused_when_the_layout_is_made():
    with pytest.raises(TestbedError, match="receive steering 'dpdk'"):
        EmbeddedLayout("x", steering="dpdk")


def test_the_mode_is_in_the_testbed_description_and_notes(state_dir):
    tb = from_layout(EmbeddedLayout("unit", steering="none"))
    assert tb.describe()["rx_steering"] == "none"
    assert "receive path: kernel default" in tb.notes[0]
    assert all(steering.describe(m) for m in steering.EMBEDDED_MODES + (steering.NIC,))
