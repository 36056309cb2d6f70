"""The parsers' contract (hostnet.parsers): on damaged copies of the real captures in tests/fixtures/
(fixtures/README.md says how each was captured) every parser gives a correct result or ParseError.

Damage: the capture cut at every line and at any byte, random byte flips, before/after snapshots
swapped. "Correct" for a cut copy: what it still holds agrees with the whole capture's result (a
subset of its counters, a prefix of its samples), never a different number. Another exception
(AttributeError, ValueError, KeyError, TypeError) fails the test. On every result, damaged input
or not, the cross-field invariants hold: lost <= total, busy <= elapsed, deltas >= 0, rates and
durations positive.
"""
from __future__ import annotations

import gzip
import math
from dataclasses import fields
from functools import cache
from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from conftest import FIXTURES, RX_PROF_CONSOLE, fixture_text, rx_prof_phase
from hostnet.parsers import ParseError, bpftrace, counters, iperf2, iperf3, native, perf_report, perf_script
from hostnet.parsers import perf_default, perf_report_stdio, perfbench, procpids, procstat, rpc, rx_prof
from hostnet.parsers.stackcollapse import parse_stackcollapse

REFUSED = "refused"  # what a parser's ParseError becomes here


class Case:
    """A capture and its parser; agrees(result of a cut copy, result of the whole capture) says
    whether the cut copy's result is what the capture says; invariants(result) asserts what
    holds on any result. (A plain class: hypothesis and pytest show it by name, not its text.)"""

    def __init__(self, name: str, text: str, parse: Callable[[str], Any], agrees: Callable[[Any, Any], bool],
                 invariants: Callable[[Any], None]):
        self.name, self.text, self.parse, self.agrees, self.invariants = name, text, parse, agrees, invariants

    def __repr__(self):
        return self.name


def outcome(case: Case, text: str):
    try:
        return case.parse(text)
    except ParseError:
        return REFUSED


@cache
def whole(case: Case):
    return outcome(case, case.text)


# --- what a cut copy may return: what the whole capture says, or less of it --------------------

def equal(part, full) -> bool:
    return part == full


def never(part, full) -> bool:
    return False  # a refused capture stays refused, however it is cut


def sub_dict(part: dict, full: dict) -> bool:
    return all(k in full and full[k] == v for k, v in part.items())


def nested_sub_dict(part: dict, full: dict) -> bool:
    return all(k in full and sub_dict(v, full[k]) for k, v in part.items())


def list_prefix(part: list, full: list) -> bool:
    return part == full[:len(part)]


def iperf2_fields(part, full) -> bool:
    """Each part of the result is the whole capture's, or missing (the server report did not come)."""
    return all(getattr(part, f.name) in (None, getattr(full, f.name)) for f in fields(part))


def rx_prof_prefix(part: dict, full: dict) -> bool:
    """Counters as in the whole file; each histogram's buckets a prefix of the whole's (the file
    has no end marker or totals: a cut between bucket lines is not detectable)."""
    return all(k in full and (list_prefix(list(v.buckets), list(full[k].buckets)) if isinstance(v, bpftrace.Histogram)
                              else v == full[k]) for k, v in part.items())


def console_prefix(part: dict, full: dict) -> bool:
    """Phases are whole (each has an end marker); the last rxload line may be cut inside a value."""
    loads, full_loads = part["loads"], full["loads"]
    loads_ok = not loads or (len(loads) <= len(full_loads) and loads[:-1] == full_loads[:len(loads) - 1]
                             and all(full_loads[len(loads) - 1].get(k, "").startswith(v) for k, v in loads[-1].items()))
    return (part["kernel"] in (None, full["kernel"]) and sub_dict(part["defaults"], full["defaults"])
            and sub_dict(part["phases"], full["phases"]) and loads_ok and part["done"] <= full["done"])


def script_prefix(part: list, full: list) -> bool:
    """Whole samples as in the capture; the last one's call chain cut, down to a prefix of its
    last symbol (perf script's output has no end marker)."""
    if not part:
        return True
    if len(part) > len(full) or part[:-1] != full[:len(part) - 1]:
        return False
    p, w = part[-1], full[len(part) - 1]
    if (p.cpu, p.comm) != (w.cpu, w.comm) or len(p.frames) > len(w.frames):
        return False
    if not p.frames:  # cut right after the sample's header
        return True
    if p.frames[:-1] != w.frames[:len(p.frames) - 1]:
        return False
    cut, frame = p.frames[-1].removesuffix(perf_script.USER), w.frames[len(p.frames) - 1].removesuffix(perf_script.USER)
    return frame.startswith(cut)


# --- what holds on every result --------------------------------------------------------------

def positive(*values) -> None:
    for v in values:
        assert 0 < v < math.inf, values


def iperf3_invariants(r) -> None:
    positive(r.sent_bps, r.received_bps, r.seconds, r.start_epoch)
    assert r.retransmits is None or (isinstance(r.retransmits, int) and r.retransmits >= 0)
    assert all(0 <= b < math.inf for b in r.interval_bps)
    assert all(math.isnan(p) or p >= 0 for p in (r.sender_cpu_pct, r.receiver_cpu_pct))


def iperf2_invariants(r) -> None:
    for rep in (r.local, r.server):
        if rep is not None:
            positive(rep.seconds, rep.bytes, rep.bps)
            if rep.total is not None:
                assert 0 <= rep.lost <= rep.total and 0 <= rep.loss_pct <= 100
    assert r.buffer_bytes is None or r.buffer_bytes > 0
    assert r.datagrams_sent is None or r.datagrams_sent >= 0


def rpc_invariants(r) -> None:
    positive(r.transactions_per_s, r.mean_usec, r.request_bytes, r.response_bytes)
    pcts = [p for p in (r.p50_usec, r.p90_usec, r.p99_usec) if p is not None]
    assert pcts == sorted(pcts) and all(p >= 0 for p in pcts)


def perf_report_invariants(rows) -> None:
    assert rows and all(r.samples > 0 and r.cpu >= 0 and r.symbol and isinstance(r.kernel, bool) for r in rows)


def perf_header_invariants(h) -> None:
    assert 0 <= h["first_sample_s"] <= h["last_sample_s"]
    assert h["duration_s"] == h["last_sample_s"] - h["first_sample_s"]


def samples_invariants(samples) -> None:
    assert all(s.cpu >= 0 and all(f and "\n" not in f for f in s.frames) for s in samples)


def folded_invariants(stacks) -> None:
    assert stacks and all(n > 0 and s.cpu >= 0 for s, n in stacks)


def memcpy_invariants(results) -> None:
    assert results and all(r.bytes_per_s > 0 for r in results)


def proc_stat_invariants(cpus) -> None:
    assert cpus and len({len(v) for v in cpus.values()}) == 1  # one field count per snapshot
    assert all(isinstance(t, int) and t >= 0 for v in cpus.values() for t in v.values())


def pids_invariants(pids) -> None:
    assert all(pid > 0 and ppid >= 0 and ticks >= 0 for pid, (_, ppid, ticks) in pids.items())


def ints(d) -> None:
    assert all(isinstance(v, int) for v in d.values())


def softnet_invariants(s) -> None:
    assert s and all(set(v) <= set(counters.SOFTNET_COLUMNS) and min(v.values()) >= 0 for v in s.values())


def interrupts_invariants(rows) -> None:
    assert "LOC" in rows and len({frozenset(v) for v in rows.values()}) == 1
    assert all(n >= 0 for v in rows.values() for n in v.values())


def link_invariants(stats) -> None:
    assert stats and all(isinstance(v, int) and v >= 0 for v in stats.values())


def perf_stat_invariants(events) -> None:
    assert events and len({frozenset(v) for v in events.values()}) == 1
    assert all(v is None or v >= 0 for per_cpu in events.values() for v in per_cpu.values())


def maps_invariants(maps) -> None:
    assert maps
    for value in maps.values():
        if isinstance(value, bpftrace.Histogram):
            los = [lo for lo, _, _ in value.buckets]
            assert los == sorted(los) and all(n >= 0 and (hi is None or hi > lo) for lo, hi, n in value.buckets)
        elif isinstance(value, dict):
            assert value["count"] >= 0 and value["average"] == (bpftrace._c_div(value["total"], value["count"])
                                                                if value["count"] else 0)


def rx_prof_invariants(maps) -> None:
    maps_invariants(maps)
    assert maps["rx_prof"] == 1
    assert all(lo & (lo - 1) == 0 for h in rx_prof.HISTOGRAMS for lo, _, _ in maps[h].buckets)


def console_invariants(con) -> None:
    for maps in con["phases"].values():
        rx_prof_invariants(maps)


def udpbatch_invariants(r) -> None:
    assert r.window_ns > 0 and r.batch >= 1 and r.packets <= r.calls * r.batch and r.cpu_ns >= 0


def microbench_invariants(r) -> None:
    assert r.iterations > 0 and 0 < r.ns_per_op < math.inf


def none(_) -> None:
    raise AssertionError("a refused capture parsed")


def script_excerpt(samples: int = 30) -> str:
    """The first samples of the captured perf script (cut at every line: the whole would take minutes)."""
    return "\n\n".join(fixture_text("perf_script_all-opts.txt").split("\n\n")[:samples]) + "\n\n"


def folded_text() -> str:
    return perf_script.write_folded(perf_script.fold(perf_script.parse_perf_script(script_excerpt().splitlines())))


def default_script_excerpt(samples: int = 30) -> str:
    """The first samples of a default-format perf script capture (fixtures/README.md)."""
    text = gzip.decompress((FIXTURES / "perf_script_default_loopback.txt.gz").read_bytes()).decode()
    return "\n\n".join(text.split("\n\n")[:samples]) + "\n\n"


def default_script(text: str) -> list:
    return [s for s, _ in perf_default.script_samples(text.splitlines())]


def default_report_text() -> str:
    path = FIXTURES / "perf-default" / "perf_report_stdio_nochildren_cpu_comm_sym.txt.gz"
    return gzip.decompress(path.read_bytes()).decode()


def default_report_invariants(report) -> None:
    assert report.rows and all(0 <= r.self_pct <= 100 and r.symbol and isinstance(r.kernel, bool)
                               for r in report.rows)
    assert abs(sum(r.self_pct for r in report.rows) - 100) <= 0.005 * len(report.rows) + 0.01


def stackcollapse_excerpt(lines: int = 30) -> str:
    text = gzip.decompress((FIXTURES / "perf-default" / "stackcollapse_reference_kernel_pid.folded.gz").read_bytes())
    return "".join(text.decode().splitlines(keepends=True)[:lines])


def stackcollapse(text: str) -> dict:
    """Counts as stackcollapse printed them (a part of the file may have another common factor);
    whether frames are marked is the file's (--kernel), not read from a part of it."""
    folded = parse_stackcollapse(text, kernel_marked=True, pid_suffix=True)
    return {s: n * folded.divisor for s, n in folded.samples.items()}


def _case(name, fixture_or_text, parse, agrees, invariants) -> Case:
    text = fixture_text(fixture_or_text) if "\n" not in fixture_or_text else fixture_or_text
    return Case(name, text, parse, agrees, invariants)


CASES = [
    *(_case(f, f, iperf3.parse_iperf3, equal, iperf3_invariants)
      for f in ("iperf3_all-opts.json", "iperf3_no-opts.json")),
    _case("iperf3_refused.json", "iperf3_refused.json", iperf3.parse_iperf3, never, none),
    *(_case(f, f, iperf2.parse_iperf2_udp, iperf2_fields, iperf2_invariants) for f in (
        "iperf2_udp_client_2g.txt", "iperf2_udp_client_8g.txt", "iperf2_udp_client_noserver.txt",
        "iperf2_udp_server_1M.txt", "iperf2_udp_server_4M.txt")),
    _case("netperf_tcp_rr_4k.txt", "netperf_tcp_rr_4k.txt", rpc.parse_netperf, equal, rpc_invariants),
    _case("netperf_refused.txt", "netperf_refused.txt", rpc.parse_netperf, never, none),
    _case("sockperf_pp_4k.txt", "sockperf_pp_4k.txt", lambda t: rpc.parse_sockperf(t, 4096), equal, rpc_invariants),
    _case("sockperf_refused.txt", "sockperf_refused.txt", lambda t: rpc.parse_sockperf(t, 4096), never, none),
    *(_case(f, f, perf_report.parse_perf_report, equal, perf_report_invariants)
      for f in ("perf_report_all-opts.txt", "perf_report_no-opts.txt")),
    _case("perf_report_empty.txt", "perf_report_empty.txt", perf_report.parse_perf_report, never, none),
    _case("perf_header_1s.txt", "perf_header_1s.txt", perf_report.parse_perf_header, equal, perf_header_invariants),
    _case("perf script (30 samples)", script_excerpt(), lambda t: list(perf_script.parse_perf_script(t.splitlines())),
          script_prefix, samples_invariants),
    _case("folded stacks (30 samples)", folded_text(), lambda t: list(perf_script.parse_folded(t)),
          lambda p, f: set(p) <= set(f), folded_invariants),
    _case("default perf script (30 samples)", default_script_excerpt(), default_script, script_prefix,
          samples_invariants),
    _case("default perf report", default_report_text(), perf_report_stdio.parse_report_stdio, equal,
          default_report_invariants),
    _case("stackcollapse folded (30 lines)", stackcollapse_excerpt(), stackcollapse, sub_dict,
          lambda d: (d and all(n > 0 for n in d.values())) or pytest.fail("an empty or non-positive count")),
    _case("perf_bench_syscall_basic.txt", "perf_bench_syscall_basic.txt", perfbench.parse_syscall_basic, equal,
          lambda r: positive(r.calls, r.usec_per_op, r.ops_per_s)),
    *(_case(f, f, perfbench.parse_memcpy, list_prefix, memcpy_invariants)
      for f in ("perf_bench_memcpy_all.txt", "perf_bench_memcpy_64KB.txt")),
    _case("perf_bench_unknown.txt", "perf_bench_unknown.txt", perfbench.parse_syscall_basic, never, none),
    *(_case(f, f, procstat.parse_proc_stat, sub_dict, proc_stat_invariants) for f in (
        "proc_stat_before.txt", "proc_stat_after.txt", "proc_stat_paced5g_before.txt", "proc_stat_paced5g_after.txt")),
    _case("proc_stat_paced5g_monotonic_s.txt", "proc_stat_paced5g_monotonic_s.txt", procstat.parse_snapshot_times,
          equal, positive),
    *(_case(f, f, procpids.parse_snapshot, sub_dict, pids_invariants) for f in ("pids_before.txt", "pids_after.txt")),
    *(_case(f, f, counters.parse_snmp, sub_dict, ints) for f in ("proc_net_snmp.txt", "proc_net_netstat.txt")),
    _case("softnet_stat.txt", "softnet_stat.txt", counters.parse_softnet_stat, sub_dict, softnet_invariants),
    *(_case(f, f, counters.parse_interrupts, sub_dict, interrupts_invariants)
      for f in ("proc_interrupts_before.txt", "proc_interrupts_after.txt")),
    _case("ip_s_j_link_veth.json", "ip_s_j_link_veth.json", counters.parse_ip_link_stats, equal, link_invariants),
    _case("ethtool_S_veth.txt", "ethtool_S_veth.txt", counters.parse_ethtool_stats, sub_dict, ints),
    *(_case(f, f, counters.parse_perf_stat, nested_sub_dict, perf_stat_invariants)
      for f in ("perf_stat_software.txt", "perf_stat_cache_unsupported.txt")),
    _case("bpftrace_latency.txt", "bpftrace_latency.txt", bpftrace.parse_bpftrace_maps, sub_dict, maps_invariants),
    _case("rx_prof (phase hist)", rx_prof_phase("hist"), rx_prof.parse_rx_prof, rx_prof_prefix, rx_prof_invariants),
    _case(RX_PROF_CONSOLE, RX_PROF_CONSOLE, rx_prof.parse_console, console_prefix, console_invariants),
    *(_case(f, f, native.parse_udpbatch, equal, udpbatch_invariants)
      for f in ("udpbatch_send_b32.txt", "udpbatch_recv_b1.txt")),
    _case("udpbatch_bad_batch.txt", "udpbatch_bad_batch.txt", native.parse_udpbatch, never, none),
    _case("microbench_skballoc.txt", "microbench_skballoc.txt", native.parse_microbench, equal, microbench_invariants),
]


def check_cut(case: Case, text: str) -> None:
    got = outcome(case, text)
    if got is REFUSED:
        return
    full = whole(case)
    assert full is not REFUSED, f"{case.name}: a cut copy of a refused capture parsed"
    case.invariants(got)
    assert case.agrees(got, full), f"{case.name}: a cut copy ({len(text)} of {len(case.text)} chars) gave {got!r:.300}"


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_the_whole_capture_gives_a_result_that_holds_together(case):
    full = whole(case)
    if case.agrees is never:
        assert full is REFUSED
    else:
        assert full is not REFUSED
        case.invariants(full)


def line_cuts(n_lines: int, ends: int = 150, between: int = 150) -> list[int]:
    """Where the every-line test cuts a capture of n_lines: every line of its first and last `ends`
    (headers, first records, the end), and `between` lines spread evenly over the middle, where a
    long capture repeats one record's shape (bpftrace's 1,311 lines took 9 s cut at every line)."""
    if n_lines <= 2 * ends + between:
        return list(range(n_lines))
    middle = range(ends, n_lines - ends)
    step = len(middle) / between
    return [*range(ends), *(middle[int(i * step)] for i in range(between)), *range(n_lines - ends, n_lines)]


def test_line_cuts_are_every_line_of_a_short_capture_and_both_ends_of_a_long_one():
    assert line_cuts(400) == list(range(400))
    cuts = line_cuts(1311)
    assert len(cuts) == len(set(cuts)) == 450 and cuts == sorted(cuts)
    assert cuts[:150] == list(range(150)) and cuts[-150:] == list(range(1161, 1311))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_cut_at_every_line_gives_what_the_capture_says_or_parse_error(case):
    lines = case.text.splitlines(keepends=True)
    for n in line_cuts(len(lines)):
        check_cut(case, "".join(lines[:n]))


@settings(max_examples=400, deadline=None)
@given(case=st.sampled_from(CASES), where=st.floats(0, 1, exclude_max=True))
def test_cut_at_any_byte_gives_what_the_capture_says_or_parse_error(case, where):
    check_cut(case, case.text[:int(where * len(case.text))])


# replacement bytes: mostly the ones these formats are made of, so numbers and separators change
BYTES = st.one_of(st.sampled_from(list(b"0123456789.-+e \n\t:,;/%()[]@|#=")), st.integers(0, 255))
FLIPS = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), BYTES), min_size=1, max_size=4)


def flipped(text: str, flips) -> str:
    data = bytearray(text.encode())
    for where, byte in flips:
        data[int(where * len(data))] = byte
    return data.decode(errors="replace")


@settings(max_examples=500, deadline=None)
@given(case=st.sampled_from(CASES), flips=FLIPS)
def test_byte_flips_give_a_result_that_holds_together_or_parse_error(case, flips):
    got = outcome(case, flipped(case.text, flips))
    if got is not REFUSED:
        case.invariants(got)


# --- before/after snapshots: the right order gives deltas that hold together, swapped raises --

def utilization(before: str, after: str, interval: str | None = None):
    b, a = procstat.parse_proc_stat(before), procstat.parse_proc_stat(after)
    seconds = procstat.parse_snapshot_times(interval) if interval else None
    return len(b), procstat.cpu_utilization(b, a, sorted(b), seconds, 100 if interval else None)


def utilization_invariants(result) -> None:
    n, u = result
    assert 0 <= u["busy_pct"] <= 100 * n + 1e-9  # busy <= elapsed, per CPU
    assert all(v >= 0 for v in u.values())
    assert u["busy_pct"] == pytest.approx(sum(u[f"{f}_pct"] for f in procstat.BUSY_FIELDS))


def interrupt_deltas(before: str, after: str) -> dict:
    rows = ("LOC", "RES", "CAL", "TLB")  # what derive.counters.interrupt_rows takes
    deltas = counters.interrupt_deltas(counters.parse_interrupts(before), counters.parse_interrupts(after), rows)
    return {f"{name}.{cpu}": n for name, per_cpu in deltas.items() for cpu, n in per_cpu.items()}


def pid_ticks(before: str, after: str) -> dict:
    return procpids.cpu_ticks_used(procpids.parse_snapshot(before), procpids.parse_snapshot(after))


def rx_prof_window(before: str, after: str) -> dict:
    return bpftrace.subtract_maps(rx_prof.parse_rx_prof(after), rx_prof.parse_rx_prof(before))


def window_invariants(maps) -> None:
    for v in maps.values():
        if isinstance(v, bpftrace.Histogram):
            assert all(n >= 0 for _, _, n in v.buckets)


def snmp_deltas(before: str, after: str, kind: str = "/proc/net/snmp") -> dict:
    return counters.deltas(counters.parse_snmp(before, kind), counters.parse_snmp(after, kind), kind)


def counters_went_up(d: dict) -> None:
    """Every counter is >= 0 over the window; a gauge (Tcp.CurrEstab, ...) may go either way."""
    assert all(v >= 0 for k, v in d.items() if k not in counters.GAUGES), "a counter went down"


def softnet_window(before: str, after: str) -> dict:
    return counters.softnet_deltas(counters.parse_softnet_stat(before), counters.parse_softnet_stat(after))


class Pair:
    """Two snapshots of a machine and what takes the window between them."""

    def __init__(self, name: str, before: str, after: str, window: Callable[[str, str], Any],
                 invariants: Callable[[Any], None]):
        self.name, self.before, self.after, self.window, self.invariants = name, before, after, window, invariants

    def __repr__(self):
        return self.name


PAIRS = [
    Pair("proc_stat", fixture_text("proc_stat_before.txt"), fixture_text("proc_stat_after.txt"), utilization,
         utilization_invariants),
    Pair("proc_stat wall-minus-idle", fixture_text("proc_stat_paced5g_before.txt"),
         fixture_text("proc_stat_paced5g_after.txt"),
         lambda b, a: utilization(b, a, fixture_text("proc_stat_paced5g_monotonic_s.txt")), utilization_invariants),
    Pair("interrupts", fixture_text("proc_interrupts_before.txt"), fixture_text("proc_interrupts_after.txt"),
         interrupt_deltas, lambda d: (not d or min(d.values()) >= 0) or pytest.fail("a delta below 0")),
    Pair("pids", fixture_text("pids_before.txt"), fixture_text("pids_after.txt"), pid_ticks,
         lambda d: all(used >= 0 for _, used in d.values()) or pytest.fail("CPU time below 0")),
    Pair("rx_prof", rx_prof_phase("start"), rx_prof_phase("hist"), rx_prof_window, window_invariants),
    Pair("snmp", fixture_text("proc_net_snmp_before.txt"), fixture_text("proc_net_snmp_after.txt"), snmp_deltas,
         counters_went_up),
    Pair("netstat", fixture_text("proc_net_netstat_before.txt"), fixture_text("proc_net_netstat_after.txt"),
         lambda b, a: snmp_deltas(b, a, "/proc/net/netstat"), counters_went_up),
    Pair("softnet", fixture_text("softnet_stat_before.txt"), fixture_text("softnet_stat_after.txt"), softnet_window,
         lambda d: all(n >= 0 for row in d.values() for n in row.values()) or pytest.fail("a delta below 0")),
]


@pytest.mark.parametrize("pair", PAIRS, ids=repr)
def test_snapshots_in_order_hold_together_and_swapped_raise(pair):
    pair.invariants(pair.window(pair.before, pair.after))
    with pytest.raises(ParseError):
        pair.window(pair.after, pair.before)


@settings(max_examples=200, deadline=None)
@given(pair=st.sampled_from(PAIRS), side=st.sampled_from(["before", "after"]), flips=FLIPS)
def test_a_damaged_snapshot_gives_deltas_that_hold_together_or_parse_error(pair, side, flips):
    texts = {"before": pair.before, "after": pair.after}
    texts[side] = flipped(texts[side], flips)
    try:
        result = pair.window(texts["before"], texts["after"])
    except ParseError:
        return
    pair.invariants(result)
