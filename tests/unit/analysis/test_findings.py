"""Each finding's rule as a function (analysis/findings): None where a campaign holds nothing to
judge it on, not testable with the reason where the testbed lacks the premise; the sections'
tests judge them on recorded and made-up campaigns through verdict_table."""
import pandas as pd

from hostnet.analysis import verdicts
from hostnet.analysis.findings import congestion, dca_iommu, end_host_loss, single_flow

EMPTY = pd.DataFrame(columns=["run_id", "config", "metric", "side", "category", "value"])


def test_a_campaign_without_the_configs_a_finding_needs_gives_nothing_to_judge():
    tpc = single_flow.tpc_by_config(EMPTY, ["no-opts", "tsogro"])
    assert tpc == {} and single_flow.f01(tpc) is None and single_flow.f02(tpc, "") is None
    assert single_flow.f03({"tsogro": [1.0, 2.0, 3.0]}) is None  # jumbo's step not measured
    assert single_flow.f04(EMPTY, ["no-opts"], embedded=False) is None
    assert single_flow.largest_share(EMPTY, "all-opts", "data_copy") is None


def test_a_receive_path_where_rfs_cannot_act_leaves_f25_not_testable_and_f02_without_the_arfs_step():
    j = single_flow.f25(EMPTY, "napi-thread")
    assert j.verdict == verdicts.NOT_TESTABLE and "threaded NAPI" in j.shows and j.decide == single_flow.ARFS_NEEDS
    tpc = {"no-opts": [10, 10.2, 9.9], "tsogro": [20, 20.1, 19.8], "tsogro+jumbo": [25, 25.2, 24.9],
           "all-opts": [1, 1.1, 0.9]}  # a fall at all-opts would fail the ladder: not judged here
    j = single_flow.f02(tpc, single_flow.arfs_premise("napi-thread"))
    assert j.verdict == verdicts.REPRODUCED and "the aRFS step (→ all-opts) is not judged" in j.shows


def test_a_host_without_ddio_or_a_second_iommu_boot_says_what_it_lacks():
    records = {"c": {"capabilities": {"lab": {"ddio": {"detail": "", "value": "unsupported (AMD)"},
                                              "iommu": {"value": "off"}}}}}
    why = dca_iommu.ddio_reasons(records)
    assert why == "lab: DDIO unsupported (AMD)"
    for f in (dca_iommu.f15, dca_iommu.f27):
        j = f(EMPTY.assign(ddio=[], iommu=[]), why)
        assert j.verdict == verdicts.NOT_TESTABLE and j.shows == f"DDIO not settable — {why}"
    j = dca_iommu.f16(EMPTY.assign(ddio=[], iommu=[]), ("ddio-on", "ddio-host"), "one boot only")
    assert (j.verdict, j.shows, j.decide) == (verdicts.NOT_TESTABLE, "one boot only", "hosts with the IOMMU on and off")


def test_one_algorithm_measured_or_no_lossy_point_decides_nothing():
    summary = pd.DataFrame({"congestion_control": ["cubic", "reno"], "status": ["measured", "refused"],
                            "flows": [1, 1]})
    j = congestion.f17(summary, EMPTY)
    assert j.verdict == verdicts.INCONCLUSIVE and j.shows == "fewer than two algorithms measured; reno: not " \
                                                             "available on this host"
    quiet = pd.DataFrame({"loss_pct": [0.1], "offered_gbps": [2.0]})
    j = end_host_loss.f21(quiet, ["sender", "rcvbuf"])
    assert j.verdict == verdicts.INCONCLUSIVE and "the receiver was never overloaded" in j.shows
