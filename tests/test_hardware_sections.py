"""Notebooks 09 (NUMA) and 10 (DCA, IOMMU): refusal where the hardware is missing, the plans built where
it exists (fake hosts), and verdicts from recorded checks and measured tables."""
import json

import pandas as pd
import pytest

from conftest import REPO, FakeHost
from hostnet import capability_record, dca_iommu, numa
from hostnet.capabilities import Capability, MissingCapability

REF = REPO / "data" / "reference"
RUNS = REPO / "data" / "runs"


def _numa_host(nodes: dict[int, str], nic_node: str | None):
    files = {f"/sys/devices/system/node/node{n}/cpulist": f"{cpus}\n" for n, cpus in nodes.items()}
    if nic_node is not None:
        files["/sys/class/net/enp37s0f1/device/numa_node"] = nic_node + "\n"
    listing = "\n".join(f"/sys/devices/system/node/node{n}" for n in nodes) + "\n"
    return FakeHost(files=files, handlers={"sh": lambda a, h: (0, listing, "")})


def test_parse_cpulist():
    assert capability_record.parse_cpulist("0-2,8,10-11\n") == [0, 1, 2, 8, 10, 11]
    assert capability_record.parse_cpulist("") == []


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
    v = numa.verdict_table(record, numa.measured_table(tidy), REF).iloc[0]
    assert v["id"] == "F13" and v["verdict"] == "not testable here"
    assert "one NUMA node" in v["this run shows"] and "no NIC" in v["this run shows"]
    nodes = numa.nodes_table(record, REF)
    assert nodes.numa_nodes.tolist() == [4, 1]


@pytest.mark.parametrize("remote, verdict", [(9.5, "reproduced"), (7.0, "not reproduced"), (11.5, "inconclusive")])
def test_numa_verdict_from_measured_placements(remote, verdict):
    measured = pd.DataFrame({"placement": ["nic-local", "nic-remote"], "tpc_gbps": [10.0, remote], "runs": [3, 3]})
    v = numa.verdict_table({"numa": {}}, measured, REF).iloc[0]
    assert v["verdict"] == verdict and "NIC-local 10.00" in v["this run shows"]


def _intel_metal(mask="600"):
    return FakeHost("rx", files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n"},
                    handlers={"rdmsr": lambda a, h: (0, f"{mask}\n", ""), "wrmsr": lambda a, h: (0, "", "")})


def test_ddio_plan_own_mask_vs_one_way():
    assert dca_iommu.ddio_plan(_intel_metal("600")) == {"ddio-on": "0x600", "ddio-minimal": "0x200"}
    with pytest.raises(MissingCapability, match="reads 0x0"):
        dca_iommu.ddio_plan(_intel_metal("0"))


def test_ddio_refused_on_amd_and_in_a_vm():
    amd = FakeHost("amd", files={"/proc/cpuinfo": "vendor_id\t: AuthenticAMD\nflags\t\t: fpu hypervisor\n"})
    with pytest.raises(MissingCapability, match="no DDIO.*AuthenticAMD"):
        dca_iommu.ddio_plan(amd)
    vm = FakeHost("vm", files={"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu hypervisor\n"})
    with pytest.raises(MissingCapability, match="virtual machine"):
        dca_iommu.ddio_plan(vm)
    assert not vm.commands  # refused without running anything


def _record(iommu: str, ddio_ok=False):
    caps = {"iommu": Capability(None, iommu), "ddio": Capability(ddio_ok, "yes" if ddio_ok else "no",
                                                               "" if ddio_ok else "rx: a virtual machine ...")}
    return capability_record.make_record("servers", {"rx": caps}, {})


def test_iommu_needs_campaigns_from_both_boots():
    with pytest.raises(MissingCapability, match="read-only.*one state only.*a: IOMMU off"):
        dca_iommu.iommu_pair({"a": _record("off"), "b": _record("off")})
    assert dca_iommu.iommu_pair({"a": _record("on"), "b": _record("off")}) == ("b", "a")


def test_dca_iommu_replay_of_the_recorded_embedded_check():
    tidy, manifests, records = dca_iommu.load(RUNS, ["20261123-dca-iommu-embedded"])
    assert tidy.empty and not manifests
    v = dca_iommu.verdict_table(records, dca_iommu.measured_table(tidy), REF).set_index("id")
    assert (v.verdict == "not testable here").all()
    assert "AuthenticAMD" in v.loc["F15", "this run shows"]
    assert "read-only" in v.loc["F16", "this run shows"] and "IOMMU off" in v.loc["F16", "this run shows"]


def test_dca_iommu_verdicts_from_measured_points():
    measured = pd.DataFrame({"ddio": ["ddio-on", "ddio-minimal", "ddio-on"], "iommu": ["off", "off", "on"],
                             "tpc_gbps": [40.0, 33.0, 30.0], "sender_mm_pct": [8.0, 8.0, 12.0],
                             "receiver_mm_pct": [10.0, 10.5, 19.0], "runs": [3, 3, 3]})
    v = dca_iommu.verdict_table({"a": _record("off", True), "b": _record("on", True)}, measured, REF).set_index("id")
    assert v.loc["F15", "verdict"] == "reproduced" and "40.00 vs one way 33.00" in v.loc["F15", "this run shows"]
    assert v.loc["F16", "verdict"] == "reproduced"
    flat = measured.assign(tpc_gbps=[40.0, 40.5, 45.0])
    v = dca_iommu.verdict_table({}, flat, REF).set_index("id")
    assert v.loc["F15", "verdict"] == "inconclusive" and v.loc["F16", "verdict"] == "not reproduced"
    # the paper: more memory management on both sides; the sender's unchanged is not a reproduction
    one_side = measured.assign(sender_mm_pct=[8.0, 8.0, 8.1])
    v = dca_iommu.verdict_table({}, one_side, REF).set_index("id")
    assert v.loc["F16", "verdict"] == "inconclusive" and "sender 8.0 vs 8.1 %" in v.loc["F16", "this run shows"]
    # a missing share is no evidence either way: inconclusive, never "not reproduced"
    missing = measured.assign(receiver_mm_pct=[float("nan"), 10.5, float("nan")])
    assert dca_iommu.verdict_table({}, missing, REF).set_index("id").loc["F16", "verdict"] == "inconclusive"


def test_experiment_names_round_trip():
    assert dca_iommu._point("dca-iommu-ddio-minimal-iommu-on") == ("ddio-minimal", "on")


def test_recorded_checks_are_json_with_the_reasons():
    for campaign in ("20261123-numa-embedded", "20261123-dca-iommu-embedded"):
        rec = json.loads((RUNS / campaign / "capabilities.json").read_text())
        caps = rec["capabilities"]["embedded machine"]
        assert caps["numa_nodes"]["value"] == "1" and caps["ddio"]["ok"] is False


class _Journal:
    restored = 0

    def restore(self):
        self.restored += 1
        return []

    def set(self, host, knob, key, value):
        self.last = (knob.name, key, value)


def _yaml_testbed(receiver_host):
    from hostnet.testbed import Endpoint, Testbed
    eps = {"sender": Endpoint("sender", FakeHost("tx"), "enp1", "198.18.0.1", [0, 1], "tx"),
           "receiver": Endpoint("receiver", receiver_host, "enp37s0f1", "198.18.0.2", [12, 13], "rx")}
    return Testbed("yaml", "servers", eps, {"tx": eps["sender"].host, "rx": receiver_host}, _Journal())


def _capture_sweeps(monkeypatch, tmp_path, tb):
    """The sweeps a section's run_live would start, built and validated but not run."""
    from hostnet import servers, sweep
    specs = []

    def run_sweep(t, spec, *, runs_dir, campaign, progress=True):
        specs.append((t, spec))
        return {"campaign_dir": str(tmp_path)}

    monkeypatch.setattr(servers, "from_yaml", lambda path: tb)
    monkeypatch.setattr(sweep, "run_sweep", run_sweep)
    return specs


def test_numa_live_builds_an_rpc_incast_per_placement(tmp_path, monkeypatch):
    """The live path on a capable (fake) server: a valid sweep per placement, receiver moved, journal restored."""
    tb = _yaml_testbed(FakeHost("rx"))
    specs = _capture_sweeps(monkeypatch, tmp_path, tb)
    record = {"numa": {"rx": {"nodes": {"0": [0, 1], "1": [12, 13]}, "nic_node": 1, "iface": "enp37s0f1"}}}
    plan = numa.run_live("testbed.yaml", record, runs_dir=tmp_path, campaign="c", duration=5, warmup=2,
                         repetitions=3, rpc_size=4096)
    assert plan == {"nic-local": [12], "nic-remote": [0]}
    assert [s.stored_as for _, s in specs] == ["numa-nic-local", "numa-nic-remote"]
    assert all(s.experiment == "incast" and s.grid == {"flows": [16], "rpc_size": [4096]} for _, s in specs)
    assert [t.endpoints["receiver"].cpus for t, _ in specs] == [[12], [0]]
    assert tb.journal.restored == 1


def test_dca_live_builds_a_single_flow_per_ddio_setting(tmp_path, monkeypatch):
    host = _intel_metal("600")
    host.files["/sys/class/iommu"] = ""
    tb = _yaml_testbed(host)
    specs = _capture_sweeps(monkeypatch, tmp_path, tb)
    monkeypatch.setattr(dca_iommu.Iommu, "read", lambda self, h: "off")
    plan = dca_iommu.run_live("testbed.yaml", runs_dir=tmp_path, campaign="c", duration=5, warmup=2, repetitions=3)
    assert plan == {"ddio-on": "0x600", "ddio-minimal": "0x200"}
    assert [s.stored_as for _, s in specs] == ["dca-iommu-ddio-on-iommu-off", "dca-iommu-ddio-minimal-iommu-off"]
    assert all(s.experiment == "single-flow" for _, s in specs)
    assert tb.journal.last == ("ddio_ways", "llc_ways", "0x200") and tb.journal.restored == 1


def test_sweep_label_is_checked():
    from hostnet.sweep import SweepError, SweepSpec
    assert SweepSpec(experiment="incast", label="numa-nic-local").stored_as == "numa-nic-local"
    assert SweepSpec(experiment="incast").stored_as == "incast"
    with pytest.raises(SweepError, match="label 'NUMA local'"):
        SweepSpec(experiment="incast", label="NUMA local")
