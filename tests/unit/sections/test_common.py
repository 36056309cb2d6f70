"""hostnet.sections.common: the testbed label names the attribution rule and taxonomy the
breakdowns were derived under, so no figure mixes versions silently."""
from hostnet.analysis.attribution import ATTRIBUTION_RULE
from hostnet.sections import common
from hostnet.taxonomy import load

CURRENT = load("linux-6").version


def manifest(rule=ATTRIBUTION_RULE, taxonomy=CURRENT, status="ok", steering="napi-thread"):
    m = {"status": status, "versions": {"local": {"kernel": "6.18.44-fc"}},
         "testbed": {"kind": "embedded", "rx_steering": steering,
                     "endpoints": {"sender": {"cpus": [0]}, "receiver": {"cpus": [1]}}}}
    if rule:
        m.update(attribution_rule=rule, taxonomy=taxonomy)
    return m


def test_current_versions_are_named_in_the_label():
    label = common.testbed_label([manifest(), manifest()])
    assert label.endswith(f"receive path napi-thread; breakdowns {ATTRIBUTION_RULE}, taxonomy {CURRENT})")


def test_mixed_or_stale_versions_say_so():
    mixed = common.breakdown_versions([manifest(), manifest(rule="irqs-off-callchain/2", taxonomy="linux-6/1")])
    assert mixed.startswith("mixed: ") and "irqs-off-callchain/2, taxonomy linux-6/1" in mixed
    assert mixed.endswith("(not the current rule or taxonomy: hostnet rederive)")
    assert "not the current" in common.breakdown_versions([manifest(taxonomy="linux-6/1")])


def test_runs_without_stacks_or_failed_add_nothing():
    assert common.breakdown_versions([manifest(rule=None), manifest(rule="x/1", status="failed")]) == ""
    assert "breakdowns" not in common.testbed_label([manifest(rule=None)])


def test_a_received_manifests_long_or_odd_strings_reach_a_label_cut_and_on_one_line():
    """#45: a 5,000-character manifest string in a chart's subtitle made a notebook fail after ~1 GB."""
    label = common.testbed_label([manifest(steering="x" * 5000 + "\n\x1b[31m")])
    assert "x" * 199 + "…" in label and "x" * 200 not in label
    assert label.isprintable()
    assert common.shown("rps") == "rps" and common.shown("a\tb\x00c") == "a b c" and common.shown([0, 1]) == "[0, 1]"


# --- a rehearsal's campaign (the NIC rehearsal's guests): shown whole and labelled, judged nowhere ---
import json  # noqa: E402
import shutil  # noqa: E402

import pandas as pd  # noqa: E402

import pytest  # noqa: E402

from conftest import REPO  # noqa: E402
from hostnet.analysis import verdicts  # noqa: E402
from hostnet.sections import single_flow  # noqa: E402

LADDER_CAMPAIGN = "20261128-023507-single-flow-embedded"  # notebook 01's recorded campaign
WHY = "emulated NIC under TCG: functional rehearsal, not a measurement"


def _rehearsal(tmp_path, marked=lambda m: True) -> tuple:
    """The recorded ladder campaign copied, with the runs `marked` picks recorded as a rehearsal's."""
    src, dst = REPO / "data" / "runs" / LADDER_CAMPAIGN, tmp_path / "runs" / LADDER_CAMPAIGN
    shutil.copytree(src, dst)
    for run in dst.iterdir():
        if (run / "manifest.json").exists():
            m = json.loads((run / "manifest.json").read_text())
            if marked(m):
                m["rehearsal"] = WHY
            (run / "manifest.json").write_text(json.dumps(m))
    return tmp_path / "runs", LADDER_CAMPAIGN


def test_a_rehearsal_campaign_is_shown_whole_labelled_and_every_verdict_reads_rehearsal(tmp_path):
    runs, campaign = _rehearsal(tmp_path)
    tidy, manifests = single_flow.load(runs, campaign)  # no NoCleanRun: it has nothing else to show
    every, _ = single_flow.load(runs, campaign, include_contaminated=True)
    assert set(tidy.run_id) == set(every.run_id) and tidy.run_id.nunique() >= 30
    assert common.rehearsal_of(manifests) == WHY
    assert common.testbed_label(manifests).endswith(f"[REHEARSAL: {WHY}]")
    judged = single_flow.verdict_table(tidy, REPO / "data" / "reference", manifests)
    assert set(judged.verdict) != {verdicts.REHEARSAL}  # the section's rules ran on the code path's output
    shown = common.judged(judged, tidy, manifests)
    assert list(shown.id) == list(judged.id) and (shown.verdict == verdicts.REHEARSAL).all()
    assert (shown.raw == verdicts.REHEARSAL).all() and (shown["NIC-equivalent"] == verdicts.REHEARSAL).all()
    assert shown["this run shows"].str.startswith(f"{WHY}; what the code path computed (not evidence): ").all()
    assert (shown["steady runs only"] == "").all()


@pytest.fixture(scope="module")
def first_repetition_rehearsed(tmp_path_factory):
    """The ladder campaign with its first repetition a rehearsal's, loaded and judged: (runs,
    campaign, tidy, manifests, verdict table), read by two tests (judging it takes a second)."""
    runs, campaign = _rehearsal(tmp_path_factory.mktemp("rehearsal"), lambda m: m.get("repetition") == 0)
    tidy, manifests = single_flow.load(runs, campaign)  # the rehearsal runs left out
    return runs, campaign, tidy, manifests, single_flow.verdict_table(tidy, REPO / "data" / "reference", manifests)


def test_rehearsal_runs_beside_measured_ones_are_left_out_like_any_flagged_run(first_repetition_rehearsed):
    runs, campaign, tidy, manifests, verdict = first_repetition_rehearsed
    rehearsed = {m["run_id"] for m in manifests if m.get("rehearsal")}
    assert rehearsed and not set(tidy.run_id) & rehearsed
    assert common.rehearsal_of(manifests) == "" and "REHEARSAL" not in common.testbed_label(manifests)
    assert common.judged(verdict, tidy, manifests) is verdict
    # kept on request (include_contaminated), they make every verdict a rehearsal's
    every, manifests = single_flow.load(runs, campaign, include_contaminated=True)
    assert (common.judged(verdict, every, manifests).verdict == verdicts.REHEARSAL).all()


def test_a_rehearsal_verdict_asks_for_no_runs_and_is_a_verdict():
    """An undecided finding asks a top-up for points; shown as a rehearsal's it asks for none."""
    findings = verdicts.load_findings(REPO / "data" / "reference")
    open_ = verdicts.Judgement(verdicts.INCONCLUSIVE, "x", "more runs", ({"config": "tsogro"},))
    decided = verdicts.collect(findings, {"F03": open_})
    assert decided.wanted == {"F03": [{"config": "tsogro"}]}
    shown = verdicts.as_rehearsal(decided.table, WHY)  # a table: what a notebook shows asks for nothing
    assert isinstance(shown, pd.DataFrame) and list(shown.verdict) == [verdicts.REHEARSAL]
    assert verdicts.Judgement(verdicts.REHEARSAL, "x").verdict in verdicts.VOCABULARY
    with pytest.raises(ValueError, match="is not a verdict"):
        verdicts.Judgement("rehearsed", "x")


def test_a_second_campaigns_rehearsal_runs_make_the_verdicts_a_rehearsals(first_repetition_rehearsed):
    """Notebooks 14 and 15 judge two campaigns in one table (also=); notebook 13 passes no tidy."""
    runs, campaign, tidy, manifests, verdict = first_repetition_rehearsed  # the rehearsal runs left out
    every, all_manifests = single_flow.load(runs, campaign, include_contaminated=True)
    assert (common.judged(verdict, tidy, manifests, also=[(every, all_manifests)]).verdict
            == verdicts.REHEARSAL).all()
    assert (common.judged(verdict, None, all_manifests).verdict == verdicts.REHEARSAL).all()
