"""perf's default output formats (hostnet.parsers.perf_default, perf_report_stdio, stackcollapse), checked
against the standard tool: tests/fixtures/perf-default/ holds one profile as perf's default `perf
script` and `perf report --stdio` text, with the folded stacks Brendan Gregg's stackcollapse-perf.pl
makes from it (its README gives every command). hostnet's reading gives the same stacks with the same counts;
where the two name a frame differently, the difference is mapped here, rule by rule."""
import gzip
import re
from collections import Counter

import pytest

from conftest import FIXTURES, fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.perf_default import NO_CPU, parse_script_default, script_samples, split_dso
from hostnet.parsers.perf_report_stdio import parse_report_stdio
from hostnet.parsers.stackcollapse import parse_stackcollapse
from hostnet.parsers.perf_script import USER, Sample

REF = FIXTURES / "perf-default"
PERIOD = 1001001  # cpu-clock at -F 999: every sample's period in this capture


def ref_text(name: str) -> str:
    path = REF / name
    return gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else path.read_text()


@pytest.fixture(scope="module")
def script():
    return parse_script_default(ref_text("perf_script_default.txt.gz").splitlines(), "perf_script_default.txt")


def stackcollapse_frame(frame: str, kernel_suffix: bool) -> str:
    """hostnet's name of a frame -> stackcollapse-perf.pl's, by its rules:
    - user-space frames carry hostnet's "_[u]"; stackcollapse marks none;
    - with --kernel it appends "_[k]" to frames whose DSO is in brackets ([kernel.kallsyms], and
      also [vdso], whose frames are user space: hostnet keeps them user, by address);
    - a frame perf could not name is "[<dso basename>]" in both, except that stackcollapse's
      greedy frame regex takes a DSO that itself holds " (" (a deleted memfd) as part of the
      symbol and then cuts at the first "(": "[unknown] ";
    - its generic tidying: ";" -> ":", everything from the first "(" dropped, quotes dropped."""
    user = frame.endswith(USER)
    name = frame.removesuffix(USER)
    vdso = name.startswith("__vdso_") or name == "[vdso]"
    if name.startswith("[") and " (" in name:
        name = "[unknown] ("
    name = re.sub(r"\(.*", "", name.replace(";", ":")).replace('"', "").replace("'", "")
    if kernel_suffix and (not user or vdso) and name != "[unknown]":
        name += "_[k]"
    return name


def as_stackcollapse(periods: Counter, kernel_suffix: bool = False, pid: bool = False) -> Counter:
    """hostnet's samples (CPU, command, frames leaf first) -> stackcollapse's lines: no CPU, the
    command with spaces as "_" (and "-?" with --pid: default perf script prints no pid/tid pair),
    frames root first, counts summed over CPUs."""
    out: Counter = Counter()
    for s, period in periods.items():
        comm = s.comm.replace(" ", "_") + ("-?" if pid else "")
        out[";".join([comm, *(stackcollapse_frame(f, kernel_suffix) for f in reversed(s.frames))])] += period
    return out


def read_folded(name: str) -> Counter:
    out: Counter = Counter()
    for line in ref_text(name).splitlines():
        stack, _, count = line.rpartition(" ")
        out[stack] += int(count)
    return out


@pytest.mark.parametrize("name, kernel_suffix, pid", [("stackcollapse_reference.folded.gz", False, False),
                                                       ("stackcollapse_reference_kernel_pid.folded.gz", True, True)])
def test_default_perf_script_folds_to_stackcollapse_perf_pl_s_stacks_and_counts(script, name, kernel_suffix, pid):
    ours = as_stackcollapse(script.periods, kernel_suffix, pid)
    theirs = read_folded(name)
    assert set(ours) == set(theirs)
    assert ours == theirs
    assert sum(theirs.values()) == PERIOD * sum(script.samples.values()) == PERIOD * 11179


def test_default_perf_script_reads_cpus_commands_and_kernel_or_user_frames(script):
    assert script.event == "cpu-clock" and script.has_cpu and script.release is None
    assert sum(script.samples.values()) == 11179
    assert {s.cpu for s in script.samples} == {0, 1}
    assert {s.comm for s in script.samples} >= {"iperf3", "ksoftirqd/0", "swapper", "memfd:sealed-91"}
    first = next(iter(script_samples(ref_text("perf_script_default.txt.gz").splitlines())))
    sample, period = first
    assert period == PERIOD and (sample.cpu, sample.comm) == (0, "iperf3")
    assert sample.frames[:2] == ("_copy_from_iter", "tcp_sendmsg_locked")
    assert sample.frames[-2:] == ("__GI___libc_write" + USER, "[unknown]" + USER)


def test_stackcollapse_folded_reads_back_as_the_same_samples(script):
    """The reference folded with --kernel --pid, read by hostnet: the script's samples per
    (command, frames) with CPUs merged, since folded stacks keep none."""
    folded = parse_stackcollapse(ref_text("stackcollapse_reference_kernel_pid.folded.gz"))
    assert folded.divisor == PERIOD and folded.kernel_marked and folded.pid_suffix
    by_stack = Counter()
    for s, n in script.samples.items():
        by_stack[(s.comm, tuple(stackcollapse_frame(f, True).removesuffix("_[k]") for f in s.frames))] += n
    got = Counter({(s.comm, tuple(f.removesuffix(USER) for f in s.frames)): n for s, n in folded.samples.items()})
    assert got == by_stack and {s.cpu for s in folded.samples} == {NO_CPU}
    # kernel frames lose their "_[k]"; the others are user space
    leaves = {s.frames[0] for s in folded.samples if s.frames}
    assert "_copy_to_iter" in leaves and "Nread" + USER in leaves
    unmarked = parse_stackcollapse(ref_text("stackcollapse_reference.folded.gz"))
    assert not unmarked.kernel_marked and any("cannot be told apart" in n for n in unmarked.notes)


def test_default_report_without_children_matches_the_script_leaf_shares(script):
    """perf report --no-children --sort cpu,comm,sym: each row's overhead is its leaf samples'
    share of all samples, to the 0.01 % printed."""
    report = parse_report_stdio(ref_text("perf_report_stdio_nochildren_cpu_comm_sym.txt.gz"))
    assert report.columns == ["Overhead", "CPU", "Command", "Symbol"] and not report.children
    assert report.event == "cpu-clock" and report.event_count == PERIOD * 11179
    total = sum(script.samples.values())
    leaf = Counter()
    for s, n in script.samples.items():
        leaf[(s.cpu, s.comm, s.frames[0].removesuffix(USER) if s.frames else None)] += n
    named = [r for r in report.rows if not r.symbol.startswith("0x")]  # perf names an unresolved leaf by address
    assert len(named) > 400
    for r in named:
        assert r.self_pct == pytest.approx(100.0 * leaf[(r.cpu, r.comm, r.symbol)] / total, abs=0.0051), r


def test_default_report_with_children_and_call_graphs_gives_self_shares(script):
    report = parse_report_stdio(ref_text("perf_report_stdio_children_callgraph.txt.gz"))
    assert report.columns == ["Children", "Self", "Command", "Shared Object", "Symbol"]
    assert report.children and report.call_graph
    assert {r.cpu for r in report.rows} == {NO_CPU}
    top = max(report.rows, key=lambda r: r.self_pct)
    assert (top.comm, top.dso, top.symbol, top.kernel) == ("iperf3", "[kernel.kallsyms]", "_copy_to_iter", True)
    n = sum(c for s, c in script.samples.items() if s.frames and s.frames[0] == "_copy_to_iter" and s.comm == "iperf3")
    assert top.self_pct == pytest.approx(100.0 * n / 11179, abs=0.0051)
    user = [r for r in report.rows if not r.kernel]
    assert user and all(r.dso != "[kernel.kallsyms]" for r in user)


def test_split_dso_takes_the_balanced_group_at_the_end():
    assert split_dso("tcp_sendmsg+0x2b ([kernel.kallsyms])") == ("tcp_sendmsg+0x2b", "[kernel.kallsyms]")
    assert split_dso("[unknown] (/memfd:sealed-9117 (deleted))") == ("[unknown]", "/memfd:sealed-9117 (deleted)")
    assert split_dso("foo(int) (/usr/lib/libx.so)") == ("foo(int)", "/usr/lib/libx.so")
    assert split_dso("tcp_sendmsg") == ("tcp_sendmsg", None)
    assert split_dso("foo(int)") == ("foo(int)", None)


HEAD = "iperf3 21809 [000]  1107.249358:    1001001 cpu-clock: \n"
FRAME = "\tffffffff81baefe0 _copy_from_iter+0x80 ([kernel.kallsyms])\n"


@pytest.mark.parametrize("text, why", [
    ("", "no samples"),
    (FRAME, r":1: stack line outside a sample"),
    ("garbage here\n", r":1: not a perf script sample header"),
    (HEAD + "\tffffffff81baefe0 _copy_from_iter+0x80\n", r":2: a frame without its '\(dso\)'"),
    (HEAD + "\tnot-an-address\n", r":2: not a stack frame"),
    (HEAD + FRAME + "\n" + HEAD.replace("cpu-clock", "cycles") + FRAME + "\n",  # the whole text read to name every
     r": samples of 2 events, cpu-clock \(1 samples\), cycles \(1 samples\): .* with --event NAME"),  # event
    (HEAD + FRAME + "\n" + HEAD.replace("[000] ", "") + FRAME, r":4: some samples have a CPU field"),
    # two samples' lines interleaved: a header right under a frame (perf ends each call chain with a blank line)
    (HEAD + FRAME + HEAD + FRAME + "\n", r":3: a sample header right under a call chain, with no blank line"),
    (HEAD + FRAME + "\n" + HEAD + FRAME, r":5: the text ends inside a call chain .* cut short\?"),
])
def test_damaged_default_perf_script_raises_naming_the_line(text, why):
    with pytest.raises(ParseError, match=why):
        parse_script_default(text.splitlines(), "s")


def test_perf_script_header_gives_the_recorded_kernel():
    text = "# ========\n# os release : 6.1.0-27-amd64\n# ========\n#\n" + HEAD + FRAME + "\n"
    assert parse_script_default(text.splitlines()).release == "6.1.0-27-amd64"


def _report_lines() -> list[str]:
    return ref_text("perf_report_stdio_nochildren_cpu_comm_sym.txt.gz").splitlines(keepends=True)


def test_damaged_default_perf_report_raises():
    lines = _report_lines()
    text = "".join(lines)
    head = [i for i, ln in enumerate(lines) if ln.startswith("# ....")][0]
    cases = {
        "": "no column header",
        "".join(lines[:head + 2]): "no sample rows",
        "".join(lines[:head + 100]): "no closing",  # cut: the rows left add up to less than 100 % too
        text.replace("[k] _copy_to_iter", "    _copy_to_iter", 1): "lacks a \\[k\\]/\\[.\\] marker",
        text.replace("15.06%", "15.O6%", 1): ":12: neither a row nor a call-graph line",
        text.replace("    15.06%  001", "    25.06%  001", 1): "add up to 110.0[0-9] %, not 100 %",
        text.replace("# Overhead  CPU", "# Overhead  Foo", 1): r"columns \['Foo'\] are not read",
        "Error:\nThe perf.data data has no samples!\n": "perf report: Error",
    }
    for damaged, why in cases.items():
        with pytest.raises(ParseError, match=why):
            parse_report_stdio(damaged, "r")
    drop = next(i for i, ln in enumerate(lines) if "0.01%" in ln)
    cut_row = "".join(lines[:drop] + lines[drop + 1:])
    assert len(parse_report_stdio(cut_row).rows) == len(parse_report_stdio(text).rows) - 1  # within rounding


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("iperf3;tcp_sendmsg 10", "the last line has no newline"),
    ("iperf3;tcp_sendmsg\n", "not a folded stack line"),
    ("iperf3;tcp_sendmsg 0\n", "not a folded stack line"),
    ("iperf3;tcp_sendmsg x2\n", "not a folded stack line"),
])
def test_damaged_folded_stacks_raise(text, why):
    with pytest.raises(ParseError, match=why):
        parse_stackcollapse(text, "f")


def test_a_text_without_call_chains_reads_each_header_lines_address_as_its_only_frame():
    """`perf record` without -g: perf script prints one line per sample, the command right-aligned
    (leading spaces) and the sampled address, symbol and DSO after the event; it was refused as a
    "stack line outside a sample". Captured: `perf record -a -e cpu-clock -F 99 -- sleep 0.3`."""
    text = fixture_text("perf_script_no_callchain.txt")
    sp = parse_script_default(text.splitlines(), "t")
    assert sum(sp.samples.values()) == 29 and sp.has_cpu
    assert all(len(s.frames) == 1 for s in sp.samples)
    assert {s.comm for s in sp.samples} == {"swapper"} and {s.frames[0] for s in sp.samples} >= {"pv_native_safe_halt"}


def test_a_sample_perf_printed_with_an_empty_call_chain_is_a_frameless_sample():
    """System-wide under load, perf script printed a python sample's header and then the blank line
    that ends a call chain, nothing between (captured: tests/fixtures/perf-default/README.md). It is
    a sample with no frames, as hostnet's own perf script reading keeps one; a header the next
    header or the text's end follows is still refused (below)."""
    text = (FIXTURES / "perf-default" / "perf_script_default_empty_chain.txt").read_text()
    sp = parse_script_default(text.splitlines(), "s")
    assert sp.samples[Sample(0, "python", ())] == 1
    assert sum(sp.samples.values()) == 5 and sp.chains


def test_what_follows_the_event_on_a_header_is_a_frame_only_in_a_text_without_call_chains():
    """perf script prints more after the event than the sampled address: a data address with
    `record -d`, a tracepoint's fields. With a call chain below, none of it is a frame; without one,
    only an address with its (dso) is; a sample with neither is refused (cut, or -F without ip)."""
    data = HEAD.rstrip("\n") + "  ffff888100000000 [unknown] ([unknown])\n"
    sp = parse_script_default((data + FRAME + "\n").splitlines(), "s")
    assert [s.frames for s in sp.samples] == [("_copy_from_iter",)]
    bare = ("         swapper     0 [000]  1107.249358:    1001001 cpu-clock:  ffffffff821f2c2b "
            "pv_native_safe_halt+0xb ([kernel.kallsyms])\n  process.c:752\n")
    sp = parse_script_default((bare + bare).splitlines(), "s")  # a srcline under each: no call chain
    assert sp.samples == Counter({Sample(0, "swapper", ("pv_native_safe_halt",)): 2}) and not sp.chains
    headers_only = "         swapper     0 [000]  1107.249358: cpu-clock: \n" * 2  # -F comm,tid,cpu,time,event
    with pytest.raises(ParseError, match=r"s:1: a sample with neither a call chain nor an address"):
        parse_script_default(headers_only.splitlines(), "s")
    tracepoint = "insmod  1234 [000]  1107.249358: module:module_get: e1000e call_site=ffffffffa0 refcnt=2\n"
    with pytest.raises(ParseError, match=r"s:1: a sample with neither a call chain nor an address"):
        parse_script_default(tracepoint.splitlines(), "s")
    with pytest.raises(ParseError, match=r"s:4: a sample with neither a call chain nor an address"):
        parse_script_default((HEAD + FRAME + "\n" + HEAD).splitlines(), "s")  # cut after a header
