"""Capability records (hostnet.testbed.record): CPU lists, and the recorded checks of the NUMA and
DCA/IOMMU campaigns are JSON with the reasons."""
import json

from conftest import REPO
from hostnet.testbed import record as capability_record

RUNS = REPO / "data" / "runs"


def test_parse_cpulist():
    assert capability_record.parse_cpulist("0-2,8,10-11\n") == [0, 1, 2, 8, 10, 11]
    assert capability_record.parse_cpulist("") == []


def test_recorded_checks_are_json_with_the_reasons():
    for campaign in ("20261123-numa-embedded", "20261123-dca-iommu-embedded"):
        rec = json.loads((RUNS / campaign / "capabilities.json").read_text())
        caps = rec["capabilities"]["embedded machine"]
        assert caps["numa_nodes"]["value"] == "1" and caps["ddio"]["ok"] is False
