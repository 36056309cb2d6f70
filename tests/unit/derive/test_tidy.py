"""hostnet.derive.tidy: tidy rows from parsed tool output."""
import json

import pandas as pd
import pytest

from conftest import fixture_text
from hostnet.parsers.bpftrace import parse_bpftrace_maps
from hostnet.derive.counters import latency_rows


def test_latency_rows():
    rows = []
    latency_rows(lambda side, metric, value, category="": rows.append((side, metric, category, value)),
                  parse_bpftrace_maps(fixture_text("bpftrace_latency.txt")))
    got = {m: v for _, m, c, v in rows if not c}
    assert got["rx_to_copy_latency_avg_usec"] > 0
    assert got["rx_to_copy_latency_p50_usec"] <= got["rx_to_copy_latency_p99_usec"]
    assert 100 < got["post_gro_skb_bytes_mean"] < 65536
    assert any(m == "rx_to_copy_latency_hist_count" for _, m, _, _ in rows)


def _rows(**extra):
    from hostnet.store import Rows
    m = {"run_id": "r", "campaign": "c", "experiment": "single-flow", "config": {"name": "x"}, "repetition": 0,
         "probes": {"perf": {"freq_hz": 99}}, **extra}
    return Rows(m), m


def test_sampling_coverage_is_samples_per_busy_second_at_perf_rate():
    from hostnet.derive.cpu import coverage_rows
    out, m = _rows()
    out.add("receiver", "cpu_util_pct", 50.0)  # half a core over perf's 1.000145 s span at 99 Hz
    raw = {"local": {"perf_header.txt": fixture_text("perf_header_1s.txt")}}
    coverage_rows(out, m, "receiver", {"local": {1}}, raw, samples=45)
    [row] = [r for r in out.rows if r["metric"] == "perf_sampling_coverage_ratio"]
    assert row["value"] == pytest.approx(45 / (0.5 * 1.000145 * 99))
    assert "undersampled" not in out.notes
    before = json.dumps(m, sort_keys=True)
    coverage_rows(out, m, "receiver", {"local": {1}}, raw, samples=30)  # 0.61: too few
    assert out.notes["undersampled"] == {"receiver": 0.606}
    assert json.dumps(m, sort_keys=True) == before  # noted for the caller to record, the manifest only read


def test_no_coverage_without_perf_header_never_a_made_up_number():
    from hostnet.derive.cpu import coverage_rows
    out, m = _rows()
    out.add("sender", "cpu_util_pct", 90.0)
    coverage_rows(out, m, "sender", {"local": {0}}, {"local": {}}, samples=100)
    assert not [r for r in out.rows if r["metric"] == "perf_sampling_coverage_ratio"]


def test_interrupt_rows_count_each_side_s_cpus():
    from hostnet.parsers.counters import parse_interrupts
    from hostnet.derive.counters import interrupt_rows
    out, _ = _rows()
    raw = {"local": {"interrupts_before.txt": fixture_text("proc_interrupts_before.txt"),
                     "interrupts_after.txt": fixture_text("proc_interrupts_after.txt")}}
    interrupt_rows(out, "receiver", {"local": {1}}, raw)
    got = {r["category"]: r["value"] for r in out.rows}
    b, a = (parse_interrupts(fixture_text(f"proc_interrupts_{w}.txt")) for w in ("before", "after"))
    assert got == {n: a[n][1] - b[n][1] for n in ("RES", "CAL", "TLB", "LOC")}
    out2, _ = _rows()
    interrupt_rows(out2, "receiver", {"local": {1}}, {"local": {}})  # recorded before the probe
    assert out2.rows == []


def test_interrupt_and_softnet_rows_refuse_swapped_snapshots():
    """Deltas computed here, not in a parser, refuse counters that went down like the parsers' do."""
    from hostnet.parsers import ParseError
    from hostnet.derive.counters import counter_rows, interrupt_rows
    out, m = _rows()
    raw = {"local": {"interrupts_before.txt": fixture_text("proc_interrupts_after.txt"),
                     "interrupts_after.txt": fixture_text("proc_interrupts_before.txt")}}
    with pytest.raises(ParseError, match=r"local.interrupts: .*went down between the snapshots"):
        interrupt_rows(out, "receiver", {"local": {1}}, raw)
    softnet = {"softnet_before.txt": "00000010 00000000 00000003\n00000001 00000000 00000000\n",
               "softnet_after.txt": "00000008 00000000 00000003\n00000002 00000000 00000000\n"}
    with pytest.raises(ParseError, match=r"local.softnet_stat: cpu0.processed went down"):
        counter_rows(out, m, {"receiver": {"local": {1}}}, {"local": softnet}, {})


def test_rederive_rebuilds_only_the_breakdown_of_a_stored_run(tmp_path):
    """A committed RPS run, marked as recorded under an older rule and taxonomy, re-derived: its
    breakdown rows are rebuilt (the RPS IPI time lands in testbed), every other row stays, and
    the manifest says what it was."""
    import json
    import shutil

    from conftest import REPO
    from hostnet import store
    from hostnet.analysis.attribution import ATTRIBUTION_RULE
    from hostnet.derive.tidy import BREAKDOWN_METRICS, rederive
    src = sorted((REPO / "data/runs/20261123-single-flow-embedded").glob("*-r0"))[0]
    run = tmp_path / src.name
    shutil.copytree(src, run)
    m = json.loads((run / "manifest.json").read_text())
    m.update(attribution_rule="irqs-off-callchain/2", taxonomy="linux-6/3")
    (run / "manifest.json").write_text(json.dumps(m))
    before_t, before_m = store.read_tidy(run), store.load_manifest(run)
    assert rederive(run)
    after_t, after_m = store.read_tidy(run), store.load_manifest(run)
    assert after_m["attribution_rule"] == ATTRIBUTION_RULE
    assert after_m["rederived"][-1]["attribution_rule"] == before_m["attribution_rule"]
    keep = ~before_t.metric.isin(BREAKDOWN_METRICS)
    assert before_t[keep].reset_index(drop=True).equals(
        after_t[~after_t.metric.isin(BREAKDOWN_METRICS)].reset_index(drop=True))
    att = after_t[(after_t.metric == "breakdown_attributed_pct") & (after_t.side == "receiver")]
    assert att.set_index("category").value["testbed"] > 0 and att.value.sum() == pytest.approx(100.0)
    assert not rederive(run)  # already current: nothing to do


@pytest.mark.parametrize("killed_at", [1, 2, 3])
def test_a_rederive_killed_between_its_writes_leaves_a_run_that_reads_and_the_next_rederive_finishes(
        tmp_path, monkeypatch, killed_at):
    """#45: killed between writing tidy.csv and manifest.json, a re-derived run held a new table
    beside the old manifest's digest: DAMAGED, and every later rederive stopped on it. Now each of
    the three writes may be the last (the kill injected at the 1st, 2nd or 3rd rename)."""
    import json
    import shutil

    from conftest import REPO
    from hostnet import store
    from hostnet.derive.tidy import rederive
    src = REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    m = json.loads((run / "manifest.json").read_text())
    m.update(attribution_rule="irqs-off-callchain/2")  # recorded under an older rule: to re-derive
    (run / "manifest.json").write_text(json.dumps(m))
    real, calls = store.write_atomic, []

    def write_atomic(path, text):
        calls.append(path.name)
        if len(calls) == killed_at:
            raise KeyboardInterrupt  # kill -9 before this rename: the earlier ones are on disk
        real(path, text)
    monkeypatch.setattr(store.rundir, "write_atomic", write_atomic)
    with pytest.raises(KeyboardInterrupt):
        rederive(run)
    monkeypatch.undo()
    assert calls[:killed_at] == ["manifest.json", "tidy.csv", "manifest.json"][:killed_at]
    assert store.damage(run, store.load_manifest(run)) == ""  # it reads: not DAMAGED
    store.read_tidy(run)
    assert rederive(run)  # still recorded under the older rule: the next rederive finishes it
    done = store.load_manifest(run)
    assert "pending" not in done["checks"]["tidy.csv"] and store.damage(run, done) == ""
    assert not rederive(run)


def test_rederiving_a_packed_run_reads_its_archive_and_gives_what_the_unpacked_run_gives(tmp_path):
    """Re-derivation reads raw files through the store: a run whose raw/ is packed gives the same
    tidy.csv and manifest, byte for byte, as the same run unpacked; forced under the current rules
    it gives back exactly what is stored."""
    import shutil

    from conftest import REPO
    from hostnet import store
    from hostnet.derive.tidy import BREAKDOWN_METRICS, rederive
    src = REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0"
    runs = {}
    for form in ("unpacked", "packed"):
        run = runs[form] = tmp_path / form / src.name
        shutil.copytree(src, run)
        store.unpack_raw(run)
        (run / store.RAW_ARCHIVE).unlink(missing_ok=True)
        m = store.load_manifest(run)
        m["attribution_rule"] = "irqs-off-callchain/7"  # recorded under an older rule, without its breakdowns
        t = store.read_tidy(run)
        store.rewrite_run(run, m, t[~t.metric.isin(BREAKDOWN_METRICS)])
    assert store.pack_raw(runs["packed"]) and not (runs["packed"] / "raw").exists()
    stripped = {f: (runs["packed"] / f).read_bytes() for f in ("tidy.csv", "manifest.json")}
    assert rederive(runs["unpacked"]) and rederive(runs["packed"])
    assert (runs["packed"] / "tidy.csv").read_bytes() == (runs["unpacked"] / "tidy.csv").read_bytes() \
        != stripped["tidy.csv"]
    packed_m, unpacked_m = (json.loads((runs[f] / "manifest.json").read_text()) for f in ("packed", "unpacked"))
    assert packed_m["checks"].pop("raw.tar.xz") == store.checks_of(runs["packed"])["raw.tar.xz"]  # its archive's too
    assert packed_m == unpacked_m and (runs["packed"] / "manifest.json").read_bytes() != stripped["manifest.json"]
    # every row back: the stored table's values (its bytes are what the pandas/numpy that wrote it print;
    # the dependency floors print a last digit of some floats otherwise)
    pd.testing.assert_frame_equal(store.read_tidy(runs["packed"]), store.read_tidy(src), check_exact=False, rtol=1e-12)
    # forced under the rules it now has: every breakdown row rebuilt from the archive, the same bytes
    now = {f: (runs["packed"] / f).read_bytes() for f in ("tidy.csv", "manifest.json")}
    assert not rederive(runs["packed"]) and rederive(runs["packed"], force=True)
    assert {f: (runs["packed"] / f).read_bytes() for f in now} == now  # no `rederived` entry: no rule changed


def test_perf_span_is_how_long_perf_sampled_from_its_enabled_time_else_its_header():
    from conftest import FIXTURES
    from hostnet.derive.cpu import perf_span_s
    header = (FIXTURES / "perf_header_1s.txt").read_text()
    # perf -B writes no sample times: the enable-to-disable time the probe measured is the span
    assert perf_span_s({"perf_enabled_s.txt": "8.912000\n", "perf_header.txt": header}, "m") == 8.912
    assert perf_span_s({"perf_header.txt": header}, "m") == pytest.approx(1.000145)  # runs recorded before it
    assert perf_span_s({}, "m") is None


def test_rederiving_a_napi_thread_run_adds_the_ledger_and_the_nic_equivalent_accounting(tmp_path):
    """A committed no-opts run whose GRO-off step used XDP: re-derived, it keeps every raw row and
    gains each side's ledger (the XDP copy and the sender's transmit on the receiver's CPU) and the
    NIC-equivalent CPU, breakdown and bottleneck beside the raw ones."""
    import shutil

    from conftest import REPO
    from hostnet.analysis import ledger
    from hostnet import store
    from hostnet.derive.tidy import rederive
    run = tmp_path / "039e829122eb-r0"
    shutil.copytree(REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0", run)
    m = store.load_manifest(run)
    m["attribution_rule"] = "irqs-off-callchain/7"
    store.rewrite_run(run, m, store.read_tidy(run))
    raw_before = store.read_tidy(run).query("metric == 'cpu_util_pct'").set_index("side").value
    assert rederive(run)
    t, m = store.read_tidy(run), store.load_manifest(run)
    assert m["ledger_rule"] == ledger.LEDGER_RULE and m["bottleneck_nic"] in ("sender", "receiver")
    led = t[t.metric == "ledger_pct"].set_index(["side", "category"]).value
    assert led[("receiver", "xdp_copy")] == pytest.approx(21.5, abs=0.1)  # the issue's measurement
    assert led[("receiver", "peer_transmit")] == pytest.approx(13.6, abs=0.1)
    assert led[("sender", "xdp_copy")] == 0
    cpu = t[t.metric == "cpu_util_nic_pct"].set_index("side").value
    raw = t[t.metric == "cpu_util_pct"].set_index("side").value
    assert raw.equals(raw_before)  # nothing raw is replaced
    assert cpu["receiver"] < raw["receiver"] and cpu["sender"] > raw["sender"] * 0.9
    for side in ("sender", "receiver"):
        nic = t[(t.metric == "breakdown_nic_pct") & (t.side == side)]
        assert nic.value.sum() == pytest.approx(100.0)
    assert not rederive(run)


def test_a_rehearsals_run_gets_its_own_ledger_and_a_servers_run_none(tmp_path, monkeypatch):
    """A run whose testbed is a rehearsal (emulated NICs) is booked under its own ledger, the emulation
    traps (tests/unit/analysis/test_ledger.py has them on a guest's captured stacks), never the
    embedded testbed's items; servers that are no rehearsal keep no ledger at all. A rehearsal's run
    recorded before it had a ledger is out of date (rederive redoes it)."""
    import shutil

    from conftest import REPO
    from hostnet.analysis import ledger
    from hostnet import store
    from hostnet.derive.tidy import rederive
    for rehearsal in ("emulated NIC under TCG", ""):
        run = tmp_path / rehearsal[:8] / "039e829122eb-r0"
        shutil.copytree(REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0", run)
        m = store.load_manifest(run)
        m["testbed"] = {**m["testbed"], "kind": "servers"}
        m.pop("ledger_rule", None)
        if rehearsal:
            m["rehearsal"] = rehearsal
        store.rewrite_run(run, m, store.read_tidy(run))
        rederive(run, force=True)  # whatever rules it was recorded under: derived now
        t, m = store.read_tidy(run), store.load_manifest(run)
        led = t[t.metric == "ledger_pct"]
        if rehearsal:
            assert m["ledger_rule"] == ledger.LEDGER_RULE
            assert set(led.category) == {ledger.EMULATION_TRAP} and (led.value == 0).all()  # veth rings no doorbell
            # the derivation hands the rehearsal to the attribution: with the receiver's top leaf taken
            # for a trap, its line holds that leaf's samples (real guest stacks: tests/unit/analysis/test_ledger.py)
            top = m["top_symbols"]["receiver"][0][0]
            monkeypatch.setattr(ledger, "_TRAP_LEAVES", frozenset({top}))
            rederive(run, force=True)
            trap = store.read_tidy(run).query("metric == 'ledger_pct'").set_index("side").value
            assert trap["receiver"] > 0
            monkeypatch.undo()
            rederive(run, force=True)
            assert set(t[t.metric == "cpu_util_nic_pct"].side) == {"sender", "receiver"}
            assert not rederive(run)
            del m["ledger_rule"]
            store.rewrite_run(run, m, t)
            assert rederive(run)  # recorded before a rehearsal's ledger: out of date
        else:
            assert led.empty and "ledger_rule" not in m and not (t.metric == "cpu_util_nic_pct").any()
            assert not rederive(run)  # no ledger to be out of date with


def test_a_zero_copy_flow_adds_both_ends_reports_each_sum_on_its_side():
    """zcflow's server reports the receiver's side (tidy.flow_rows reads it through the workload's
    parse_server); its counts sum over flows onto the side they were counted on."""
    from hostnet.store import Rows
    from hostnet.derive.tidy import FlowOutput, flow_rows
    from hostnet.derive.workloads import ZeroCopyFlows
    w = ZeroCopyFlows(5, 2, pattern="one-to-one", n=2, send_mode="zerocopy", recv_mode="mmap",
                      binaries=(("sender", "/b/z"), ("receiver", "/b/z")))
    flows = w.flows([("sender", [0])], [("receiver", [1])])
    out = Rows({"run_id": "r", "campaign": "c", "experiment": "single-flow", "config": {"name": "all-opts"},
                "repetition": 0})
    each = FlowOutput(fixture_text("zcflow_sender_zerocopy.txt"), fixture_text("zcflow_receiver_mmap.txt"))
    total = flow_rows(out, w, flows, {0: each, 1: each})
    rows = {(r["side"], r["metric"]): r["value"] for r in out.rows if r["side"] != "flow"}
    assert total == pytest.approx(2 * 1680867328 * 8 / 1000188694)
    assert rows[("sender", "zerocopy_copied_count")] == 2 * 11629
    assert rows[("receiver", "receiver_mapped_bytes_count")] == 2 * 1572495360
    assert rows[("sender", "sender_app_cpu_s")] == pytest.approx(2 * 0.83774)
    assert sum(1 for r in out.rows if r["metric"] == "flow_receiver_app_bytes_count") == 2
