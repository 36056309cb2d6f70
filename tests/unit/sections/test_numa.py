"""Notebook 09 (NUMA, F13): refused where the hardware is missing, the placement plan built where it
exists (fake hosts), the live path's sweeps on a capable fake server, and verdicts from the recorded
check and measured tables."""
import pandas as pd
import pytest

from conftest import REPO, FakeHost, capture_sweeps, servers_testbed
from hostnet.sections import numa
from hostnet.testbed import record as capability_record
from hostnet.testbed.capabilities import MissingCapability

REF = REPO / "data" / "reference"
RUNS = REPO / "data" / "runs"


def _numa_host(nodes: dict[int, str], nic_node: str | None):
    files = {f"/sys/devices/system/node/node{n}/cpulist": f"{cpus}\n" for n, cpus in nodes.items()}
    if nic_node is not None:
        files["/sys/class/net/enp37s0f1/device/numa_node"] = nic_node + "\n"
    listing = "\n".join(f"/sys/devices/system/node/node{n}" for n in nodes) + "\n"
    return FakeHost(files=files, handlers={"sh": lambda a, h: (0, listing, "")})


def test_numa_plan_on_a_four_socket_host():
    host = _numa_host({0: "0-5", 1: "6-11", 2: "12-17", 3: "18-23"}, "2")
    layout = capability_record.numa_layout(host, "enp37s0f1")
    assert layout["nic_node"] == 2 and layout["nodes"]["3"] == [18, 19, 20, 21, 22, 23]
    assert numa.placement_plan(layout) == {"nic-local": [12], "nic-remote": [0]}


def test_numa_refuses_one_node_and_a_nic_without_a_node():
    one = capability_record.numa_layout(_numa_host({0: "0-1"}, None), None)
    with pytest.raises(MissingCapability, match="one NUMA node.*veth has no NIC"):
        numa.placement_plan(one)
    unknown = capability_record.numa_layout(_numa_host({0: "0-5", 1: "6-11"}, "-1"), "enp37s0f1")
    assert unknown["nic_node"] is None
    with pytest.raises(MissingCapability, match="enp37s0f1 has no NIC reporting a NUMA node"):
        numa.placement_plan(unknown)


def test_numa_run_on_the_embedded_testbed_refuses_before_touching_anything(tmp_path):
    record = capability_record.make_record("embedded", {"embedded machine": {}},
                                           {"embedded machine": {"nodes": {"0": [0, 1]}, "nic_node": None,
                                                                 "iface": None}})
    with pytest.raises(MissingCapability, match="one NUMA node"):
        numa.run_live("", record, runs_dir=tmp_path, campaign="c", duration=1, warmup=0, repetitions=1,
                      rpc_size=4096)
    assert not any(tmp_path.iterdir())


def test_numa_replay_of_the_recorded_embedded_check():
    campaign, refusal = numa.collect("replay", runs_dir=RUNS, campaign="20261123-numa-embedded")
    tidy, manifests, record = numa.load(RUNS, campaign)
    assert tidy.empty and manifests == [] and refusal == ""
    v = numa.verdict_table(record, tidy, REF).iloc[0]
    assert v["id"] == "F13" and v["verdict"] == "not testable here"
    assert "one NUMA node" in v["this run shows"] and "no NIC" in v["this run shows"]
    nodes = numa.nodes_table(record, REF)
    assert nodes.numa_nodes.tolist() == [4, 1]


@pytest.mark.parametrize("remote, verdict", [((9.7, 9.8, 9.6), "reproduced"), ((7.0, 7.2, 6.8), "not reproduced"),
                                             ((9.0, 11.0, 10.0), "inconclusive")])
def test_numa_verdict_from_measured_placements(remote, verdict):
    """Marginal: the whole CI of the relative difference within ±10 %; wholly outside: not reproduced."""
    rows = [{"run_id": f"{p}{i}", "placement": p, "metric": "tpc_gbps", "side": "both", "category": "", "value": v}
            for p, vals in (("nic-local", (10.0, 10.2, 9.8)), ("nic-remote", remote)) for i, v in enumerate(vals)]
    v = numa.verdict_table({"numa": {}}, pd.DataFrame(rows), REF).iloc[0]
    assert v["verdict"] == verdict and "10.00 →" in v["this run shows"]


def test_numa_live_runs_the_declared_sweep_whose_placement_points_move_the_receiver(tmp_path, monkeypatch):
    """The live path on a capable (fake) server: sweeps/numa.yaml as declared, stored as numa, one
    point per placement (the sweep moves the receiver per point: test_sweep), journal restored."""
    tb = servers_testbed(FakeHost("rx"))
    specs = capture_sweeps(monkeypatch, tmp_path, tb)
    record = {"numa": {"rx": {"nodes": {"0": [0, 1], "1": [12, 13]}, "nic_node": 1, "iface": "enp37s0f1"}}}
    plan = numa.run_live("testbed.yaml", record, runs_dir=tmp_path, campaign="c", duration=5, warmup=2,
                         repetitions=3, rpc_size=4096)
    assert plan == {"nic-local": [12], "nic-remote": [0]}
    (t, spec), = specs
    assert t is tb and spec == numa.spec() and spec.stored_as == "numa" and spec.workload == "incast"
    assert [p["placement"] for p in spec.points()] == ["nic-local", "nic-remote"]
    assert tb.journal.restored == 1


def test_numa_loads_each_runs_placement_from_its_point(tmp_path):
    from hostnet import store
    runs = tmp_path / "runs"
    for i, placement in enumerate(("nic-local", "nic-remote")):
        rd = store.Campaign(runs, "c").new_run(f"p{i}-r0")
        rd.manifest.update(experiment="numa", point={"config": "all-opts", "placement": placement},
                           config={"name": "all-opts"}, repetition=0)
        rd.finish("ok", pd.DataFrame([{"run_id": f"p{i}-r0", "campaign": "c", "experiment": "numa",
                                       "config": "all-opts", "repetition": 0, "side": "both", "metric": "tpc_gbps",
                                       "category": "", "flow": "", "value": 10.0 - i}]))
    store.Campaign(runs, "c").write_capabilities({"numa": {}, "testbed": "t", "capabilities": {}})
    tidy, manifests, _ = numa.load(runs, "c")
    assert dict(zip(tidy.placement, tidy.value, strict=True)) == {"nic-local": 10.0, "nic-remote": 9.0}
    assert numa.measured_table(tidy).set_index("placement").tpc_gbps.to_dict() == {"nic-local": 10.0,
                                                                                  "nic-remote": 9.0}
