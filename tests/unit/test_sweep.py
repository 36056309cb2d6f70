"""hostnet.sweep: specs, their points and validation, point configs (Rx buffer, loss rate), point
ids, the workloads points build, labels, and the sweep files of the notebook sections."""
import pytest

from hostnet import config as sc
from hostnet import sweep
from hostnet.knobs import KnobError
from hostnet.sweep import SweepSpec, point_workload
from hostnet.testbed import EmbeddedLayout, from_layout
from hostnet.workloads import MixedFlows, UdpRate


def test_spec_points_and_validation(tmp_path):
    spec = sweep.SweepSpec(configs=["tsogro", "all-opts"], grid={"rx_buffer_kb": [100, 200, 400]}, repetitions=2)
    assert len(spec.points()) == 6 and spec.points()[0] == {"config": "tsogro", "rx_buffer_kb": 100}
    for bad, msg in (({"grid": {"rx_buf": [1]}}, "unknown grid parameter"), ({"experiment": "warp"}, "experiment"),
                     ({"configs": ["turbo"]}, "unknown config"), ({"repetitions": 0}, "repetitions"),
                     ({"grid": {"flows": [2]}}, "single pattern"), ({"colour": 1}, "unknown sweep key")):
        with pytest.raises(ValueError, match=msg):
            sweep.SweepSpec.from_dict(bad)
    path = tmp_path / "s.yaml"
    path.write_text("experiment: incast\nconfigs: [tsogro]\ngrid: {flows: [1, 2], rpc_size: [4096]}\nrepetitions: 1\n")
    spec = sweep.SweepSpec.from_yaml(path)
    assert [p["flows"] for p in spec.points()] == [1, 2]


def test_rx_buffer_point_sets_tcp_rmem_whole():
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 100}).tcp_rmem == "4096 102400 102400"
    assert sweep.point_config({"config": "tsogro", "rx_buffer_kb": 12800}).tcp_rmem == "4096 131072 13107200"


def test_point_ids_are_stable_and_depend_on_the_testbed():
    fp = {"kind": "embedded", "kernels": ["6.18"]}
    a = sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, fp, "single-flow")
    assert a == sweep.point_id({"rx_buffer_kb": 100, "config": "tsogro"}, fp, "single-flow")
    assert a != sweep.point_id({"config": "tsogro", "rx_buffer_kb": 100}, {**fp, "kernels": ["6.1"]}, "single-flow")


def test_mixed_sweep_points_and_workloads():
    spec = sweep.SweepSpec(experiment="mixed", configs=["tsogro"],
                           grid={"short_flows": [0, 1, 16], "long_flow": [1, 0], "rpc_size": [4096]})
    pts = spec.points()
    # long_flow x short_flows without the empty point
    assert len(pts) == 5 and {"config": "tsogro", "short_flows": 0, "long_flow": 0, "rpc_size": 4096} not in pts
    w = sweep.point_workload(spec, {"config": "tsogro", "short_flows": 16, "long_flow": 0, "rpc_size": 4096},
                             "netperf")
    assert isinstance(w, MixedFlows) and w.n == 16 and not w.long_flow
    with pytest.raises(sweep.SweepError, match="belong to experiment mixed"):
        sweep.SweepSpec(experiment="single-flow", grid={"short_flows": [1]})


def test_loss_rate_grid_key_sets_the_loss_knob_on_every_receiver(state_dir):
    spec = sweep.SweepSpec(configs=["tsogro"], grid={"loss_rate": [0, 0.001, 0.01]})
    cfgs = [sweep.point_config(p) for p in spec.points()]
    assert [c.loss_rate for c in cfgs] == [0.0, 0.001, 0.01]
    tb = from_layout(EmbeddedLayout("unit"))
    loss = {v for w, k, key, v in sc.settings(tb, cfgs[2]) if k.name == "loss" and w == "receiver"}
    zero = [(w, key, v) for w, k, key, v in sc.settings(tb, cfgs[0]) if k.name == "loss"]
    assert loss == {"0.01"} and zero == [("receiver", "hnunitr", "0")]  # 0 is written too: the table removed
    # points without a loss rate leave the knob alone (hosts without nft run everything else)
    assert not [k for _, k, _, _ in sc.settings(tb, sc.get_config("tsogro")) if k.name == "loss"]
    with pytest.raises(sc.ConfigError, match="outside"):
        sweep.point_config({"config": "tsogro", "loss_rate": 1.5})
    with pytest.raises(KnobError):
        sc.KNOBS["loss"].validate("hnunitr", "-0.1")


def test_sweep_files_are_the_notebook_sections_specs():
    from conftest import REPO
    from hostnet.sections import mixed_flows, packet_loss, short_flows
    for name, section in (("packet-loss", packet_loss), ("short-flows", short_flows), ("mixed-flows", mixed_flows)):
        assert sweep.SweepSpec.from_yaml(REPO / "sweeps" / f"{name}.yaml") == section.spec(), name


def test_sweep_builds_udp_points():
    spec = SweepSpec(experiment="udp-loss", configs=["no-opts"],
                     grid={"udp_rate_gbps": [1, 8], "socket_buffer_kb": [1024], "app_cpu": ["same", "different"]},
                     repetitions=1, duration=2, warmup=1)
    works = [point_workload(spec, p, "iperf") for p in spec.points()]
    assert len(works) == 4 and all(isinstance(w, UdpRate) for w in works)
    assert {(w.rate_gbps, w.app_cpu) for w in works} == {(1.0, "same"), (1.0, "different"), (8.0, "same"),
                                                         (8.0, "different")}


def test_sweep_label_is_checked():
    from hostnet.sweep import SweepError, SweepSpec
    assert SweepSpec(experiment="incast", label="numa-nic-local").stored_as == "numa-nic-local"
    assert SweepSpec(experiment="incast").stored_as == "incast"
    with pytest.raises(SweepError, match="label 'NUMA local'"):
        SweepSpec(experiment="incast", label="NUMA local")


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("experiment: incast\nconfigs: [tsogro\n")
    with pytest.raises(sweep.SweepError, match=f'in "{path}", line 2'):
        sweep.SweepSpec.from_yaml(path)
