"""Notebook 15 (beyond the paper): per-run derivations, the tables, F29–F32's logic on synthetic
runs (the default grids are sweeps/zero-copy.yaml and big-tcp.yaml: test_declarations.py)."""
import pandas as pd
import pytest

from conftest import REPO
from hostnet.charts import beyond as figures
from hostnet.sections import beyond
from hostnet.analysis.verdicts import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

REF = REPO / "data" / "reference"
JITTER = (0.0, 0.3, -0.3, 0.6, -0.6)


def zc_tidy(points: dict, reps: int = 5) -> pd.DataFrame:
    """points: {(send_mode, recv_mode): dict(gbps, sender_pct, receiver_pct, copy_share, mapped, copied)}."""
    rows = []
    for (s, r), p in points.items():
        for k in range(reps):
            run, j = f"{s}-{r}-{k}", JITTER[k]
            got = 1e9
            for side, metric, cat, v in (
                    ("both", "throughput_gbps", "", p["gbps"] + j / 10), ("both", "tpc_gbps", "", p["gbps"]),
                    ("sender", "cpu_util_pct", "", p["sender_pct"] + j),
                    ("receiver", "cpu_util_pct", "", p["receiver_pct"] + j),
                    ("sender", "breakdown_attributed_pct", "data_copy", p["copy_share"] + j),
                    ("receiver", "breakdown_attributed_pct", "data_copy", 70 + j),
                    ("sender", "sender_app_bytes_count", "", got), ("sender", "sender_app_cpu_s", "", 0.5),
                    ("receiver", "receiver_app_bytes_count", "", got), ("receiver", "receiver_app_cpu_s", "", 0.4)):
                rows.append({"run_id": run, "side": side, "metric": metric, "category": cat, "value": v})
            if r == "mmap":
                rows.append({"run_id": run, "side": "receiver", "metric": "receiver_mapped_bytes_count",
                             "category": "", "value": got * p.get("mapped", 0) / 100})
            if s == "zerocopy":
                for metric, v in (("zerocopy_completed_count", 1000),
                                  ("zerocopy_copied_count", 10 * p.get("copied", 0))):
                    rows.append({"run_id": run, "side": "sender", "metric": metric, "category": "", "value": v})
    t = pd.DataFrame(rows)
    t["send_mode"] = t.run_id.str.split("-").str[0]
    t["recv_mode"] = t.run_id.str.split("-").str[1]
    return t


BASE = {"gbps": 10.0, "sender_pct": 90.0, "receiver_pct": 95.0, "copy_share": 37.0}


def test_per_run_cpu_per_mb_and_the_shares_mapped_and_copied():
    t = zc_tidy({("copy", "copy"): BASE, ("zerocopy", "mmap"): {**BASE, "copy_share": 0.3, "mapped": 99.0,
                                                               "copied": 100.0}}, reps=1)
    runs = beyond.per_run(t).set_index(["send_mode", "recv_mode"])
    base = runs.loc[("copy", "copy")]
    mb_per_s = 10.0 * 1e9 / 8 / 2 ** 20
    assert base.sender_us_per_mb == pytest.approx(0.90 * 1e6 / mb_per_s)
    assert base.receiver_app_us_per_mb == pytest.approx(0.4 * 1e6 / (1e9 / 2 ** 20))
    assert base.mapped_pct != base.mapped_pct and base.copied_pct != base.copied_pct  # not measured: NaN
    zc = runs.loc[("zerocopy", "mmap")]
    assert zc.mapped_pct == pytest.approx(99.0) and zc.copied_pct == pytest.approx(100.0)


def test_table_orders_mechanisms_and_compares_with_the_copy_baseline():
    t = zc_tidy({("zerocopy", "copy"): {**BASE, "sender_pct": 99.0}, ("copy", "copy"): BASE,
                 ("sendfile", "copy"): {**BASE, "sender_pct": 81.0}})
    s = beyond.table(t)
    assert list(s.mechanism) == ["send() → recv()", "sendfile() → recv()", "MSG_ZEROCOPY → recv()"]
    assert s.sender_us_per_mb_vs_copy_pct.round(0).tolist() == [0.0, -10.0, 10.0]
    assert (s.repetitions == 5).all() and s.throughput_gbps_ci95.gt(0).all()


def test_per_run_reads_each_run_the_same_whatever_the_rows_order_or_the_frame_carries():
    """per_run reads runs from whole columns (_by_run), not from frames sliced per run."""
    t = zc_tidy({("copy", "copy"): BASE, ("sendfile", "copy"): {**BASE, "sender_pct": 81.0}}, reps=2)
    shuffled = t.sample(frac=1.0, random_state=1)
    shuffled.attrs = {"bottleneck": {"a": "receiver"}}  # what common.load's rows carry
    pd.testing.assert_frame_equal(beyond.per_run(shuffled), beyond.per_run(t))
    assert beyond.per_run(t).run_id.tolist() == sorted(t.run_id.unique())


def test_the_figures_draw_ci_bars_and_every_category_in_its_colour():
    t = zc_tidy({("copy", "copy"): BASE, ("sendfile", "copy"): {**BASE, "sender_pct": 81.0}})
    charts = beyond.charts(beyond.table(t), beyond.breakdown(t), "embedded")
    assert list(charts) == ["beyond-cpu-per-mb", "beyond-breakdown"]
    bars = charts["beyond-cpu-per-mb"].to_dict()["layer"][1]
    assert bars["mark"]["type"] == "errorbar" and (bars["encoding"]["y"]["field"], bars["encoding"]["y2"]["field"]) \
        == ("lo", "hi")
    color = charts["beyond-breakdown"].to_dict()["encoding"]["color"]["scale"]
    assert dict(zip(color["domain"], color["range"], strict=True)) == figures.CATEGORY_COLORS


def test_zero_copy_verdicts_follow_the_data_and_name_the_copied_sends():
    t = zc_tidy({("copy", "copy"): BASE, ("sendfile", "copy"): {**BASE, "copy_share": 0.4},
                 ("zerocopy", "copy"): {**BASE, "sender_pct": 110.0, "copy_share": 0.3, "copied": 100.0},
                 ("zerocopy", "mmap"): {**BASE, "receiver_pct": 70.0, "mapped": 100.0, "copied": 100.0}})
    v = beyond.verdict_table(t, REF).set_index("id")
    assert v.loc["F29", "verdict"] == REPRODUCED
    assert v.loc["F30", "verdict"] == NOT_REPRODUCED and "completed 100 % of the sends as copied" in v.loc[
        "F30", "this run shows"]
    assert v.loc["F31", "verdict"] == REPRODUCED and "100.0 % of the bytes mapped" in v.loc["F31", "this run shows"]


def test_receive_zero_copy_that_maps_nothing_is_not_testable():
    t = zc_tidy({("zerocopy", "copy"): BASE, ("zerocopy", "mmap"): {**BASE, "receiver_pct": 70.0, "mapped": 0.0}})
    f31 = beyond.verdict_table(t, REF).set_index("id").loc["F31"]
    assert f31.verdict == NOT_TESTABLE and "mapped 0.0 % of the bytes" in f31["this run shows"]


def bt_tidy(sizes: dict, reps: int = 5, receiver_pct: dict | None = None) -> pd.DataFrame:
    """sizes: {limit: (post-GRO mean bytes, receiver per-skb share %)}; receiver_pct: its CPU per limit."""
    rows = []
    for size, (mean, share) in sizes.items():
        busy = (receiver_pct or {}).get(size, 85)
        for k in range(reps):
            run, j = f"{size}-{k}", JITTER[k]
            for side, metric, cat, v in (
                    ("both", "throughput_gbps", "", 15 + j), ("both", "tpc_gbps", "", 15),
                    ("sender", "cpu_util_pct", "", 95), ("receiver", "cpu_util_pct", "", busy + j),
                    ("receiver", "post_gro_skb_bytes_mean", "", mean * (1 + j / 100)),
                    ("receiver", "post_gro_skb_bytes_hist_count", "32768-65536", 100),
                    ("receiver", "breakdown_attributed_pct", "tcp/ip", share / 2 + j),
                    ("receiver", "breakdown_attributed_pct", "netdev", share / 2),
                    ("sender", "breakdown_attributed_pct", "tcp/ip", 30)):
                rows.append({"run_id": run, "side": side, "metric": metric, "category": cat, "value": v,
                             "big_tcp_bytes": size})
    return pd.DataFrame(rows)


def test_big_tcp_judges_the_per_packet_layers_once_the_packets_grew():
    v = beyond.big_tcp_verdict_table(bt_tidy({65536: (43000, 28.0), 185000: (118000, 24.0)}), REF)
    f32 = v.set_index("id").loc["F32"]
    assert f32.verdict == REPRODUCED and "mean packet after GRO 42 → 115 KiB" in f32["this run shows"]
    flat = beyond.big_tcp_verdict_table(bt_tidy({65536: (43000, 28.0), 185000: (43000, 24.0)}), REF)
    assert flat.set_index("id").loc["F32", "verdict"] == NOT_TESTABLE
    # a smaller share of a busier receiver is no saving: judged on what the layers cost per MB
    busier = bt_tidy({65536: (43000, 28.0), 185000: (118000, 24.0)}, receiver_pct={65536: 85, 185000: 110})
    f32 = beyond.big_tcp_verdict_table(busier, REF).set_index("id").loc["F32"]
    assert f32.verdict == NOT_REPRODUCED and "their share 28.0 → 24.0 %" in f32["this run shows"]
    s = beyond.big_tcp_table(bt_tidy({65536: (43000, 28.0), 185000: (118000, 24.0)}))
    assert s.receiver_per_skb_pct.round(0).tolist() == [28.0, 24.0] and s.sender_per_skb_pct.tolist() == [30.0, 30.0]
    sizes = beyond.skb_sizes(bt_tidy({65536: (43000, 28.0)}, reps=2))
    assert sizes.packets.tolist() == [200] and sizes.share.tolist() == [1.0]
    assert figures.limit_name(65536) == "64 KiB" and figures.limit_name(185000) == "185 KB"


def test_histogram_buckets_read_as_sizes():
    assert [figures.bucket_name(c) for c in ("32768-65536", "512-1024", "131072-262144", "262144-")] == [
        "32–64 KiB", "512–1024 B", "128–256 KiB", "≥ 256 KiB"]


def test_each_ip_version_is_judged_under_its_own_finding_with_points_a_top_up_can_match():
    """F32 on the IPv4 runs, F33 on the IPv6 ones, of one campaign; a campaign whose points named no
    ip_version (recorded before IPv6) is IPv4, and its top-up points do not name one either."""
    v4 = bt_tidy({65536: (43000, 28.0), 185000: (118000, 24.0)}).assign(ip_version=4)
    v6 = bt_tidy({65536: (43000, 28.0), 185000: (43000, 24.0)})
    v6 = v6.assign(ip_version=6, run_id="v6-" + v6.run_id)
    v = beyond.big_tcp_verdict_table(pd.concat([v4, v6], ignore_index=True), REF).set_index("id")
    assert v.loc["F32", "verdict"] == REPRODUCED
    assert v.loc["F33", "verdict"] == NOT_TESTABLE
    assert "GRO did not deliver larger packets" in v.loc["F33", "this run shows"]
    runs = beyond.big_tcp_runs(pd.concat([v4, v6], ignore_index=True))
    assert sorted(runs.ip_version.unique()) == [4, 6]
    s = beyond.big_tcp_table(pd.concat([v4, v6], ignore_index=True))
    assert s[["ip_version", "big_tcp_bytes"]].values.tolist() == [[4, 65536], [4, 185000], [6, 65536], [6, 185000]]
    assert figures.point_names(s).tolist() == ["IPv4 64 KiB", "IPv4 185 KB", "IPv6 64 KiB", "IPv6 185 KB"]
    assert figures.point_names(s[s.ip_version == 4]).tolist() == ["64 KiB", "185 KB"]  # one family: as before
    sizes = beyond.skb_sizes(pd.concat([v4, v6], ignore_index=True))
    assert sizes.groupby("ip_version").share.sum().tolist() == [2.0, 2.0]  # each limit's shares sum to 1
    tight = bt_tidy({65536: (43000, 28.0), 185000: (118000, 27.9)}, reps=3).assign(ip_version=6)
    f33 = beyond.big_tcp_verdict_table.verdicts(tight, REF)  # a 0.1-point change over 3 runs: undecided
    old = bt_tidy({65536: (43000, 28.0), 185000: (118000, 27.9)}, reps=3).assign(ip_version=0)
    f32 = beyond.big_tcp_verdict_table.verdicts(old, REF)
    assert f33.wanted == {"F33": [{"big_tcp_bytes": 65536, "ip_version": 6},
                                           {"big_tcp_bytes": 185000, "ip_version": 6}]}
    assert f32.wanted == {"F32": [{"big_tcp_bytes": 65536}, {"big_tcp_bytes": 185000}]}


def test_the_size_histograms_rate_is_the_one_the_runs_recorded():
    recorded = [{"probes": {"latency": {"local": {"source": "bpftrace", "sample_every": 4}}}}]
    assert beyond.sampled_every(recorded) == 4
    assert beyond.sampled_every([{"probes": {"latency": {"local": {"source": "bpftrace"}}}}]) == 8  # big-tcp.yaml's


def test_a_zero_copy_campaign_mixing_ip_versions_is_refused(monkeypatch):
    """Its table and verdicts group by mechanism only: IPv4 and IPv6 runs would be pooled."""
    manifests = [{"run_id": "a", "point": {"recv_mode": "mmap", "ip_version": 4}},
                 {"run_id": "b", "point": {"recv_mode": "mmap", "ip_version": 6}}]
    monkeypatch.setattr(beyond.common, "load", lambda *a: (pd.DataFrame({"run_id": []}), manifests))
    with pytest.raises(ValueError, match=r"campaign c mixes IP versions \(4, 6\)"):
        beyond.load("runs", "c")
