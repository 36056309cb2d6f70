"""kernel_patch/: the rx_prof text format, the boot-test console checks, the choice between the
patched kernel's histograms and bpftrace, and (as root) check.sh itself."""
import importlib.util
import os
import subprocess

import pytest

from conftest import REPO, FakeHost, fixture_text
from hostnet import kernel_source
from hostnet.hosts import LocalHost
from hostnet.knobs import Journal
from hostnet.knobs.journal import read_entries
from hostnet.parsers import ParseError
from hostnet.parsers.bpftrace import subtract_maps
from hostnet.parsers.rx_prof import parse_console, parse_rx_prof
from hostnet.probes.latency import LatencyProbe
from hostnet.probes.rx_prof import RxProfProbe, latency_probe_for, rows

CONSOLE = "rx_prof_console.txt"  # serial console of kernel_patch/boot-test.sh (see fixtures/README.md)


def _check_console():
    spec = importlib.util.spec_from_file_location("check_console", REPO / "kernel_patch" / "check_console.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _phase_text(name):
    """One phase's /proc/net/rx_prof text as the guest printed it."""
    lines = fixture_text(CONSOLE).replace("\r", "").splitlines()
    start = lines.index(f"=== RXPROF phase {name}")
    end = lines.index("=== RXPROF end", start)
    return "\n".join(lines[start + 1:end]) + "\n"


def test_rx_prof_file_parses_into_counters_and_log2_histograms():
    maps = parse_rx_prof(_phase_text("hist"))
    assert maps["rx_prof"] == 1 and maps["packet_loss_gen_ppm"] == 0
    lat = maps["rx_copy_latency_ns"]
    assert lat.total > 0 and all(hi == 2 * lo for lo, hi, _ in lat.buckets if lo)
    assert maps["post_gro_skb_len"].total > 0


def test_rx_prof_parser_rejects_other_text():
    with pytest.raises(ParseError, match="rx_prof format 1"):
        parse_rx_prof("packet_loss_gen_seen 3\n")
    with pytest.raises(ParseError, match="unrecognised line"):
        parse_rx_prof("rx_prof 1\nrx_copy_latency_ns 1024\n")


def test_console_phases_and_loads():
    con = parse_console(fixture_text(CONSOLE))
    assert con["done"] and not con["patch_absent"]
    assert set(con["defaults"]) == set(kernel_source.RX_PROF_SYSCTLS)
    assert [x["port"] for x in con["loads"] if x["proto"] == "tcp"] == ["5000", "5001", "5002", "5005", "5006", "5004",
                                                                       "5008"]
    assert [x["port"] for x in con["loads"] if x["proto"] == "udp"] == ["5003", "5007"]


def test_boot_console_checks_pass_on_the_captured_console():
    checks, notes = _check_console().evaluate(fixture_text(CONSOLE))
    assert all(ok for ok, _ in checks), [what for ok, what in checks if not ok]
    assert any(n.startswith("udp:") for n in notes)


def test_boot_console_checks_fail_without_the_patch_or_with_wrong_loss():
    mod = _check_console()
    checks, _ = mod.evaluate("=== RXPROF kernel 6.12.117\n=== RXPROF PATCH-ABSENT\n")
    assert not all(ok for ok, _ in checks)
    text = fixture_text(CONSOLE)
    udp = parse_rx_prof(_phase_text("loss-udp"))
    tripled = text.replace(f"packet_loss_gen_drops {udp['packet_loss_gen_drops']}",
                           f"packet_loss_gen_drops {3 * udp['packet_loss_gen_drops']}")
    checks, _ = mod.evaluate(tripled)
    assert [what for ok, what in checks if not ok][0].startswith("UDP drop rate")


def test_boot_console_checks_fail_on_a_short_flow_an_unselected_loss_or_forced_gso():
    mod, text = _check_console(), fixture_text(CONSOLE)

    def failed(t):
        return [what for ok, what in mod.evaluate(t)[0] if not ok]
    short = text.replace("rxload tcp port=5005 bytes=8388608", "rxload tcp port=5005 bytes=8388000")
    assert [w.split(" (")[0] for w in failed(short)] == ["every TCP flow moved the bytes boot/init asked for"]
    nosel = parse_rx_prof(_phase_text("loss-noselector"))
    start = text.index("=== RXPROF phase loss-noselector")
    dropping = text[:start] + text[start:].replace(
        f"packet_loss_gen_drops {nosel['packet_loss_gen_drops']}",
        f"packet_loss_gen_drops {nosel['packet_loss_gen_drops'] + 200}", 1)
    assert any(w.startswith("packet_loss_gen=20000 with neither") for w in failed(dropping))
    # gso1 as if TCP had still built GSO skbs: as few IP skbs as in the forced window
    snmp = mod.parse_snmp_blocks(text)
    assert set(snmp) == {"gso-start", "gso0", "gso1"}
    segs, extra = mod.extra_segments(snmp, "gso0", "gso1")
    assert extra == 0 and segs > 8 * 2**20 // 1448
    forced_segs, forced_extra = mod.extra_segments(snmp, "gso-start", "gso0")
    assert forced_extra > forced_segs // 2
    out_req = snmp["gso1"]["Ip"]["OutRequests"]
    start = text.index("=== RXPROF snmp gso1")
    gso = text[:start] + text[start:].replace(f" {out_req} ", f" {out_req - forced_extra} ", 1)
    assert [w.split(" (")[0] for w in failed(gso)] == ["gso_honour_off=1: one segment per skb"]


def test_window_rows_from_two_readings():
    window = subtract_maps(parse_rx_prof(_phase_text("hist")), parse_rx_prof(_phase_text("off")))
    out = {(m, c): v for m, v, c in rows(window)}
    assert out[("rx_to_copy_samples_count", "")] == window["rx_copy_latency_ns"].total
    assert 0 < out[("rx_to_copy_latency_p50_usec", "")] <= out[("rx_to_copy_latency_p99_usec", "")]
    sizes = sum(v for (m, _), v in out.items() if m == "post_gro_skb_bytes_hist_count")
    assert sizes == window["post_gro_skb_len"].total


def _patched_host():
    files = {kernel_source.RX_PROF_FILE: _phase_text("start")}
    files.update({f"/proc/sys/net/core/{n}": "0\n" for n in kernel_source.RX_PROF_SYSCTLS})
    return FakeHost("patched", files=files, handlers={"bpftrace": lambda a, h: (0, "", "")})


def test_source_is_the_kernel_when_the_series_is_present():
    assert kernel_source.latency_source(_patched_host())[0] == kernel_source.KERNEL


def test_source_falls_back_to_ebpf_on_a_stock_or_partial_kernel():
    stock = FakeHost("stock", handlers={"bpftrace": lambda a, h: (0, "", "")})
    source, why = kernel_source.latency_source(stock)
    assert source == kernel_source.EBPF and "stock kernel" in why
    partial = _patched_host()
    del partial.files["/proc/sys/net/core/gso_honour_off"]
    source, why = kernel_source.latency_source(partial)
    assert source == kernel_source.EBPF and "net.core.gso_honour_off" in why
    assert kernel_source.latency_source(FakeHost("bare"))[0] == "none"


def test_this_machines_stock_kernel_reports_the_ebpf_source():
    if os.path.exists(kernel_source.RX_PROF_FILE):
        pytest.skip("this kernel has the rx_prof series")
    source, why = kernel_source.latency_source(LocalHost())
    assert source in (kernel_source.EBPF, "none") and "stock kernel" in why


def test_probe_choice_and_its_journaled_sysctls(tmp_path):
    host, journal = _patched_host(), Journal(tmp_path / "j")
    probe, source, _ = latency_probe_for(host, [5201], ["veth1"], "iperf3", journal, 4)
    assert isinstance(probe, RxProfProbe) and source == kernel_source.KERNEL
    probe.prepare(host)
    assert host.files["/proc/sys/net/core/rx_prof_port"] == "5201\n"
    assert host.files["/proc/sys/net/core/rx_prof_lat_sample"] == "4\n"
    probe.start(host)
    assert set(probe.stop(host)) == {"rx_prof_open.txt", "rx_prof.txt"}
    prior = {e["key"]: e["prior"] for e in read_entries(journal.path)}  # what a restore writes back
    assert prior == {"net.core.rx_prof_port": "0", "net.core.rx_prof_skb_len": "0", "net.core.rx_prof_lat_sample": "0"}
    probe, source, why = latency_probe_for(host, [5201, 5202], ["veth1"], "iperf3", journal, 4)
    assert isinstance(probe, LatencyProbe) and source == kernel_source.EBPF and "2 flows" in why


@pytest.mark.live
def test_series_applies_and_builds_with_werror():
    """kernel_patch/check.sh: checkpatch, apply to the pinned source, compile net/core/ + the tcp objects.

    Live: as root it installs linux-source-6.12 and compiles. With HOSTNET_KERNEL_REQUIRED=1 (CI) a
    skip is a failure: the script exits 1 instead of 77, and so does this test."""
    required = os.environ.get("HOSTNET_KERNEL_REQUIRED") == "1"
    if os.geteuid() != 0 and not required:
        pytest.skip("check.sh installs linux-source-6.12 and needs root")
    res = subprocess.run(["bash", str(REPO / "kernel_patch" / "check.sh")], capture_output=True, text=True,
                         timeout=1800)
    if res.returncode == 77 and not required:
        pytest.skip(res.stdout.strip().splitlines()[-1])
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "CHECK PASS" in res.stdout


@pytest.mark.live
def test_stock_kernel_point_records_the_ebpf_latency_source(state_dir, tmp_path):
    """On this stock kernel a point with the latency probe says bpftrace measured it, and why."""
    from conftest import live_ready
    from hostnet import config as sc, runner, store, testbed
    from hostnet.workloads import LongFlow
    if live_ready() or os.path.exists(kernel_source.RX_PROF_FILE):
        pytest.skip(live_ready() or "this kernel has the rx_prof series")
    with testbed.embedded(f"kp{os.getpid() % 10000}") as tb:
        path = runner.run_point(tb, sc.get_config("all-opts"), LongFlow(2, 1), runs_dir=tmp_path,
                                campaign="live", latency_sample_every=4)
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    assert m["probes"]["latency"]["local"]["source"] == kernel_source.EBPF
    assert "stock kernel" in m["probes"]["latency"]["local"]["why"]
    t = store.read_tidy(path)
    assert (t.metric == "rx_to_copy_samples_count").any()
