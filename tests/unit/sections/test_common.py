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
