"""hostnet.load(): the recorded runs as one frame, with each point's parameters, units and each
run's quality as columns; and the data dictionary (hostnet.dictionary) that names every metric."""
import csv
import json
import shutil

import pandas as pd
import pytest

import hostnet
from conftest import REPO
from hostnet import dictionary, store

RUNS = REPO / "data" / "runs"
RX = "20261128-053016-rx-buffer-embedded"


def test_a_sections_campaign_with_its_swept_parameter_units_and_quality_as_columns():
    df = hostnet.load(section="02-rx-buffer")
    assert set(df.campaign) == {RX}
    assert len(df) == len(store.load_tidy(RUNS, RX))  # every row of every ok run, nothing else
    assert {"rx_buffer_kb", "point", "unit", "flagged", "usable", "unsteady", "profiled", "kernel"} <= set(df.columns)
    tpc = df[(df.metric == "tpc_gbps") & (df.side == "both")]
    assert set(tpc.unit) == {"Gbit/s"} and sorted(tpc.rx_buffer_kb.unique())[:2] == [100, 200]
    assert df.profiled.dtype == bool and (~df.profiled).any()  # the campaign's unprofiled runs, marked
    assert df.equals(hostnet.load(RX))  # by name, the same


def test_a_flagged_run_is_kept_and_marked_and_a_missing_campaign_is_said(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUNS / RX, runs / RX, ignore=shutil.ignore_patterns("raw*"))
    run = sorted(p for p in (runs / RX).iterdir() if (p / "manifest.json").exists())[0]
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["contaminated"] = True
    (run / "manifest.json").write_text(json.dumps(manifest))
    df = hostnet.load(RX, runs_dir=runs)
    flagged = df[df.run_id == run.name]
    assert len(flagged) and set(flagged.flagged) == {"foreign load"} and not flagged.usable.any()
    assert (df.usable == (df.flagged == "")).all() and df[df.run_id != run.name].usable.any()
    with pytest.raises(FileNotFoundError, match="no campaign"):
        hostnet.load("nope", runs_dir=runs)
    with pytest.raises(ValueError, match="not both"):
        hostnet.load(RX, section="02-rx-buffer")


def test_every_metric_of_the_committed_campaigns_is_in_the_data_dictionary_with_a_unit():
    metrics = set()
    for table in RUNS.glob("*/*/tidy.csv"):  # ~2,000 tables: the csv module reads them in a fifth of pandas' time
        with table.open(newline="") as fh:
            rows = csv.reader(fh)
            column = next(rows).index("metric")
            metrics |= {row[column] for row in rows}
    assert len(metrics) > 80
    assert sorted(m for m in metrics if dictionary.meaning(m) is None) == []
    assert sorted(m for m in metrics if not dictionary.unit(m)) == []


def test_units_come_from_the_name_and_docs_api_holds_the_generated_dictionary():
    assert [dictionary.unit(m) for m in ("tpc_gbps", "transactions_per_s", "sender_app_cpu_s",
                                         "post_gro_skb_bytes_mean", "post_gro_skb_bytes_hist_count",
                                         "udp_cpu_per_pkt_ns", "udp_pps")] == [
        "Gbit/s", "1/s", "s", "bytes", "count", "ns", "packets/s"]
    assert dictionary.meaning("flow_retransmits_count") == "per flow: " + dictionary.meaning("retransmits_count")
    assert dictionary.markdown() in (REPO / "docs" / "api.md").read_text()


def test_no_campaign_is_an_empty_frame_and_a_parameter_named_like_a_column_keeps_apart(tmp_path):
    assert hostnet.load([], runs_dir=RUNS).empty
    rd = store.Campaign(tmp_path, "c").new_run("p-r0")
    rd.manifest.update(experiment="single-flow", config={"name": "tsogro"},
                       point={"id": "p", "config": "tsogro", "unit": "x", "flow": 3})
    rd.finish("ok", pd.DataFrame([{"run_id": "p-r0", "campaign": "c", "experiment": "single-flow", "config": "tsogro",
                                   "repetition": 0, "side": "both", "metric": "tpc_gbps", "category": "",
                                   "flow": "", "value": 1.0}]))
    df = hostnet.load("c", runs_dir=tmp_path)
    assert df.iloc[0].unit == "Gbit/s" and df.iloc[0].point_unit == "x" and df.iloc[0].point_flow == 3
