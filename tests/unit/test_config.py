"""hostnet.config: the ladder of stack configs, their validation and labels, and the settings a
point applies (every knob, every point)."""
import pytest

from hostnet import config as sc
from hostnet.testbed import EmbeddedLayout, from_layout


def test_ladder_configs():
    assert list(sc.LADDER) == ["no-opts", "tsogro", "jumbo", "tsogro+jumbo", "all-opts"]
    allopts = sc.get_config("all-opts")
    assert (allopts.tso, allopts.gro, allopts.mtu, allopts.arfs) == (True, True, 9000, True)
    assert sc.get_config("no-opts").congestion_control == "cubic"


def test_bad_configs_rejected():
    with pytest.raises(sc.ConfigError, match="unknown config"):
        sc.get_config("turbo")
    with pytest.raises(sc.ConfigError, match="tcp_rmem"):
        sc.get_config("tsogro", tcp_rmem="4096 1 2")
    with pytest.raises(sc.ConfigError, match="congestion"):
        sc.get_config("tsogro", congestion_control="vegas")


def test_labels_say_rfs_stands_in_for_arfs():
    assert "RFS" in sc.get_config("all-opts").label("embedded")
    assert sc.get_config("all-opts").label("servers") == "all-opts"
    assert sc.get_config("tsogro+arfs").label("embedded") == "tsogro+rfs"


def test_settings_apply_every_knob_for_every_point(state_dir):
    tb = from_layout(EmbeddedLayout("unit"))
    a = {(w, k.name, key): v for w, k, key, v in sc.settings(tb, sc.get_config("all-opts"))}
    n = {(w, k.name, key): v for w, k, key, v in sc.settings(tb, sc.get_config("no-opts"))}
    assert set(a) == set(n)  # applied whole: the same knobs, different values
    assert a[("sender", "offload.tso", "hnunits")] == "on" and n[("sender", "offload.tso", "hnunits")] == "off"
    assert a[("receiver", "mtu", "hnunitr")] == "9000"
    assert a[("receiver", "rps_cpus", "hnunitr/rx-0")] == "2" and a[("sender", "rps_cpus", "hnunits/rx-0")] == "1"
    assert a[("machine:local", "sysctl", "net.core.rps_sock_flow_entries")] == "32768"
    assert n[("machine:local", "sysctl", "net.core.rps_sock_flow_entries")] is None  # back to prior
