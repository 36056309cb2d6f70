"""The patched kernel's latency probe (hostnet.probes.rx_prof): window rows from two readings,
and the choice between it and bpftrace, with the sysctls it journals."""
from conftest import patched_kernel_host, rx_prof_phase
from hostnet.probes import kernel_source
from hostnet.knobs import Journal
from hostnet.knobs.journal import read_entries
from hostnet.parsers.bpftrace import subtract_maps
from hostnet.parsers.rx_prof import parse_rx_prof
from hostnet.probes.latency import LatencyProbe
from hostnet.derive.counters import rx_prof_rows as rows
from hostnet.probes.rx_prof import RxProfProbe, latency_probe_for


def test_window_rows_from_two_readings():
    window = subtract_maps(parse_rx_prof(rx_prof_phase("hist")), parse_rx_prof(rx_prof_phase("off")))
    out = {(m, c): v for m, v, c in rows(window)}
    assert out[("rx_to_copy_samples_count", "")] == window["rx_copy_latency_ns"].total
    assert 0 < out[("rx_to_copy_latency_p50_usec", "")] <= out[("rx_to_copy_latency_p99_usec", "")]
    sizes = sum(v for (m, _), v in out.items() if m == "post_gro_skb_bytes_hist_count")
    assert sizes == window["post_gro_skb_len"].total


def test_probe_choice_and_its_journaled_sysctls(tmp_path):
    host, journal = patched_kernel_host(), Journal(tmp_path / "j")
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
