"""A profile brought from elsewhere, in every `perf script` layout perf prints, read as the
collapsers read it (issue 46). tests/fixtures/perf-layouts/ holds one recording printed seven ways
(tests/fixtures/README.md gives each command; vmlinux and empty_sym are rewritten from the default
print the way older perf prints them, and say so)."""
import gzip
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from hostnet import cli
from hostnet.analysis import profile_files, profiles
from hostnet.parsers import ParseError
from hostnet.parsers.perf_default import NO_CPU, kernel_dso, parse_script_default
from hostnet.parsers.perf_script import USER, Sample

LAYOUTS = FIXTURES / "perf-layouts"


def everything(path, **kw) -> dict:
    """The breakdown of every CPU together: the last set of the default (each CPU, then all), or the
    one pseudo-CPU of a text without CPUs."""
    _, results, _, _ = profiles.analyse(path, series="linux-6", **kw)
    return results[-1]


DEFAULT = everything(LAYOUTS / "default.txt.gz")


def stacks(layout: str, cpu: bool = True) -> Counter:
    """The layout's samples per stack (each sample once, whatever its period)."""
    text = gzip.decompress((LAYOUTS / f"{layout}.txt.gz").read_bytes()).decode()
    out: Counter = Counter()
    for sample, n in parse_script_default(text.splitlines(), layout).samples.items():
        out[sample if cpu else Sample(NO_CPU, sample.comm, sample.frames)] += n
    return out


@pytest.mark.parametrize("layout", ["notime_tid", "notime_pidtid_cpu", "notime_tid_cpu", "ns_period", "vmlinux",
                                    "empty_sym"])
def test_every_layout_of_one_recording_reads_as_its_default_print(layout):
    """notime_*: `comm tid event:`, `comm pid/tid [cpu] event:` (perf 3.x, record -p) and -F
    comm,tid,cpu,event,ip,sym,dso were refused for their missing time; empty_sym: a frame without a
    symbol was refused as one "without its (dso)"; vmlinux: kernel frames at small addresses in a
    vmlinux file were all user space, a network profile with no kernel layer at all."""
    has_cpu = layout != "notime_tid"
    assert stacks(layout, has_cpu) == stacks("default", has_cpu)
    assert sum(stacks("default").values()) == 758
    got = everything(LAYOUTS / f"{layout}.txt.gz")  # and so its breakdown (each sample counted once)
    assert DEFAULT["leaf_pct"]["data_copy"] > 30
    for key in ("busy_samples", "idle_samples", "foreign_samples", "leaf_pct", "attributed_pct"):
        assert got[key] == DEFAULT[key], key


def test_the_breakdown_says_how_it_told_kernel_from_user():
    profile = profile_files.read_profile(LAYOUTS / "default.txt.gz")
    # 665 frames say [unknown], 14 of them with a DSO (a memfd): 651 are placed by their address
    assert profile.notes == ["kernel or user by each frame's DSO ([kernel.kallsyms], a vmlinux or a module is the "
                             "kernel); 651 frames without one ([unknown]) by their address"]


@pytest.mark.parametrize("dso, kernel", [
    ("[kernel.kallsyms]", True), ("[kernel.vmlinux]", True), ("[guest.kernel.kallsyms]", True), ("[bpf_prog]", True),
    ("[nf_conntrack]", True), ("/lib/modules/4.3.0-rc1-virtual/build/vmlinux", True), ("/boot/vmlinux-6.1.0", True),
    ("/lib/modules/6.1.0/kernel/net/netfilter/nf_tables.ko", True), ("/lib/modules/6.1/x/mlx5_core.ko.xz", True),
    ("/usr/lib/x86_64-linux-gnu/libc.so.6", False), ("[vdso]", False), ("[vsyscall]", False), ("[heap]", False),
    ("[anon:v8]", False), ("/tmp/perf-1234.map", False), ("//anon", False), ("/memfd:sealed-1 (deleted)", False),
    ("[unknown]", None)])
def test_kernel_frames_are_known_by_their_dso(dso, kernel):
    assert kernel_dso(dso) is kernel


def test_a_byte_that_is_not_utf8_is_refused_naming_the_file_and_line(tmp_path):
    """One invalid byte inside handle_softirqs gave rc 0 and moved 29 points from etc to
    unclassified, a replacement character the only trace."""
    text = gzip.decompress((LAYOUTS / "default.txt.gz").read_bytes())
    at = text.index(b"handle_softirqs")
    damaged = tmp_path / "damaged.txt"
    damaged.write_bytes(text[:at + 7] + b"\xff" + text[at + 8:])
    line = text.count(b"\n", 0, at) + 1
    with pytest.raises(ParseError, match=rf"damaged.txt:{line}: not UTF-8 text: byte 0xff cannot be read"):
        profile_files.read_profile(damaged)


@pytest.mark.parametrize("damage, said", [("cut", "the gzip file is cut short"),
                                          ("corrupt", "the gzip file is corrupt")])
def test_a_truncated_or_corrupt_gzip_is_one_line_naming_the_file(tmp_path, damage, said):
    """A truncated .gz gave a 25-line traceback (EOFError), a corrupt one a line without the file."""
    data = (LAYOUTS / "default.txt.gz").read_bytes()
    path = tmp_path / f"{damage}.txt.gz"
    if damage == "cut":
        path.write_bytes(data[:len(data) // 2])
    else:
        path.write_bytes(data[:200] + bytes(b ^ 0xA5 for b in data[200:400]) + data[400:])
    with pytest.raises(ParseError, match=rf"{damage}.txt.gz: {said}"):
        profile_files.read_profile(path)


def test_cpus_and_comm_take_one_value_each_and_never_the_file(capsys):
    """`--cpus 0-3 FILE` and `--comm iperf3 FILE` swallowed the file name (nargs='+')."""
    import json
    path = str(LAYOUTS / "default.txt.gz")
    assert cli.main(["breakdown", "--cpus", "0-1", path, "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "cpus,category,leaf_pct,attributed_pct" and {r.split(",")[0] for r in rows[1:]} == {'"0'}
    assert cli.main(["breakdown", "--comm", "iperf3", "--cpus", "0", "--cpus", "1", path, "--json"]) == 0
    sets = json.loads(capsys.readouterr().out)["breakdowns"]
    assert [s["cpus"] for s in sets] == ["0", "1"]
    assert sum(s["foreign_samples"] for s in sets) > 0  # --comm took effect: other commands are foreign


def test_a_kernel_series_hostnet_has_no_table_for_names_the_file_and_the_way_out():
    path = LAYOUTS / "default.txt.gz"
    with pytest.raises(ParseError, match=r"default.txt.gz: no taxonomy for kernel series 'linux-3'.*as asked.*"
                                         r"--series linux-5 or --series linux-6"):
        profiles.analyse(path, series="linux-3")


def test_a_text_of_two_events_names_them_and_breaks_down_the_one_asked(capsys):
    """`perf record -e cpu-clock -e page-faults`: refused with advice (perf script --event) that needs
    the perf.data, which a person holding only the text does not have."""
    path = LAYOUTS / "two_events.txt.gz"
    with pytest.raises(ParseError, match=r"samples of 2 events, cpu-clock \(482 samples\), page-faults \(9 samples\)"
                                         r": their counts do not add up; break down one with --event NAME"):
        profile_files.read_profile(path)
    clock = profile_files.read_profile(path, event="cpu-clock")
    faults = profile_files.read_profile(path, event="page-faults")
    assert (clock.event, clock.unit, sum(clock.stacks.values())) == ("cpu-clock", "samples", 482)  # one period
    # page-faults' periods vary (1 x 6, 36, 3442, 20): weighted by period, their sum
    assert (faults.event, faults.unit, sum(faults.stacks.values())) == ("page-faults", "period", 3504)
    assert faults.weight.startswith("by period: 9 samples whose periods add up to 3,504")
    with pytest.raises(ParseError, match=r"no samples of event 'cycles'; the text has cpu-clock \(482 samples\)"):
        profile_files.read_profile(path, event="cycles")
    assert cli.main(["breakdown", str(path), "--event", "page-faults", "--cpus", "0-1", "--csv"]) == 0
    assert capsys.readouterr().out.startswith("cpus,category,leaf_pct,attributed_pct")
    with pytest.raises(ParseError, match="--event picks one event of a perf script text or perf report; this is "):
        profile_files.read_profile(FIXTURES / "perf-layouts" / "inferno" / "default.folded.gz", event="cpu-clock")


def test_a_report_of_two_events_names_them_and_breaks_down_the_one_asked():
    """`perf report` of `perf record -e cpu-clock -e page-faults` prints a section per event; read
    whole, their shares would add up to 200 %."""
    path = LAYOUTS / "two_events_report.txt.gz"
    with pytest.raises(ParseError, match=r"two_events_report.txt.gz:137: a report of 2 events, cpu-clock "
                                         r"\(598 samples\), page-faults \(10 samples\): their shares do not add up"):
        profile_files.read_profile(path)
    clock = profile_files.read_profile(path, event="cpu-clock")
    faults = profile_files.read_profile(path, event="page-faults")
    assert (clock.event, clock.unit, sum(r.samples for r in clock.rows)) == ("cpu-clock", "samples", 598)
    assert faults.event == "page-faults" and faults.unit == "% of samples"  # by period: the Overhead column
    assert sum(r.samples for r in faults.rows) == pytest.approx(100.0, abs=0.05)
    assert {r.symbol for r in faults.rows} >= {"strcmp", "_copy_to_iter"} and "tcp_sendmsg" not in {
        r.symbol for r in faults.rows}
    with pytest.raises(ParseError, match=r"no samples of event 'cycles'; the report has cpu-clock \(598 samples\)"):
        profile_files.read_profile(path, event="cycles")
    one = FIXTURES / "perf-report-variants" / "flat_cpu_sym_ipc.txt.gz"  # a report of one event, asked by name
    assert profile_files.read_profile(one, event="cpu-clock").rows == profile_files.read_profile(one).rows


def test_a_leaf_only_report_says_how_much_landed_where_interrupts_come_back_on():
    """Someone with only `perf report` saw etc at ~40 % and nothing said call chains would move it."""
    notes = profile_files.read_profile(FIXTURES / "perf-report-variants" / "flat_cpu_sym_ipc.txt.gz").notes
    assert ("30.6 % of the samples landed where interrupts come back on (leaves such as handle_softirqs and "
            "_raw_spin_unlock_irqrestore): a leaf breakdown counts them there; perf script text with call chains "
            "(or the perf.data) gives them to the layer that ran") in notes


def test_long_cpu_set_labels_never_run_together():
    """`CPU 3 chainCPU 0,1,2,3 leaf`: the columns were 13 wide whatever their label."""
    profile, results, series, series_from = profiles.analyse(LAYOUTS / "default.txt.gz", cpus=[[0], [0, 1]])
    results[1] = {**results[1], "cpus": [0, 1, 2, 3]}  # a label as long as a 4-CPU set's (this recording has 2)
    text = profiles.format_table(profile, results, series, series_from)
    header = next(line for line in text.splitlines() if line.startswith("category"))
    assert [part.strip() for part in header.split("  ") if part.strip()] == [
        "category", "CPU 0 leaf", "CPU 0 chain", "CPU 0,1,2,3 leaf", "CPU 0,1,2,3 chain"]


TEXT = gzip.decompress((LAYOUTS / "default.txt.gz").read_bytes())


def numbers(profile) -> tuple:
    return sorted(profile.stacks.items(), key=repr), profile.notes


UNDAMAGED = numbers(profile_files.read_profile(LAYOUTS / "default.txt.gz"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.sampled_from(["crlf", "bad byte", "gz cut", "gz flipped", "cut", "interleaved"]),
       at=st.floats(0.01, 0.99), byte=st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x80"]))
@example(damage="cut", at=0.12755190134840919, byte=b"\xff")  # inside a frame line's indent: blanks alone
@example(damage="cut", at=0.0221, byte=b"\xff")  # the same in a sample's first frame line: not a frameless sample
def test_damage_gives_the_undamaged_numbers_or_one_line_naming_the_file(tmp_path, damage, at, byte):
    """CRLF line ends read as LF; a byte that is not UTF-8 anywhere, a cut or a flipped block in the
    .gz, a plain text cut anywhere but between two samples, and one sample's lines put inside
    another's call chain are a ParseError naming the file, never other numbers. (A plain text cut
    between two samples cannot be told from a shorter recording: perf script prints no trailer.)"""
    path = tmp_path / ("p.txt.gz" if damage.startswith("gz") else "p.txt")
    i = int(len(TEXT) * at)
    blocks = TEXT.split(b"\n\n")
    if damage == "crlf":
        path.write_bytes(TEXT.replace(b"\n", b"\r\n"))
    elif damage == "cut":
        if TEXT[:i].endswith(b"\n\n"):
            i -= 1  # between two samples: a shorter recording, not damage anyone could see
        path.write_bytes(TEXT[:i])
    elif damage == "interleaved":
        k = int((len(blocks) - 2) * at)
        host, guest = blocks[k].split(b"\n"), blocks[k + 1]
        cut = max(2, len(host) // 2)  # after the header and at least one frame
        blocks[k:k + 2] = [b"\n".join(host[:cut]) + b"\n" + guest + b"\n" + b"\n".join(host[cut:])]
        path.write_bytes(b"\n\n".join(blocks))
    elif damage == "bad byte":
        path.write_bytes(TEXT[:i] + byte + TEXT[i:])
    else:
        packed = gzip.compress(TEXT)
        j = max(20, int(len(packed) * at))
        path.write_bytes(packed[:j] if damage == "gz cut" else
                         packed[:j] + bytes(b ^ 0x5A for b in packed[j:j + 64]) + packed[j + 64:])
    try:
        got = profile_files.read_profile(path)
    except ParseError as exc:
        assert damage != "crlf" and str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    assert damage == "crlf" and (numbers(got)[0], got.notes) == UNDAMAGED


def inferno(layout: str) -> Counter:
    """inferno-collapse-perf's folded stacks of the layout: (comm, ((frame, kernel), ...) root first) -> count."""
    out: Counter = Counter()
    for line in gzip.decompress((LAYOUTS / "inferno" / f"{layout}.folded.gz").read_bytes()).decode().splitlines():
        stack, n = line.rsplit(" ", 1)
        comm, *frames = stack.split(";")
        out[comm, tuple((f.removesuffix("_[k]"), f.endswith("_[k]")) for f in frames)] += int(n)
    return out


def as_collapsed(layout: str) -> Counter:
    """Ours, folded the same way (period sums, as the collapser counts; 1 a sample without a period),
    with the collapser's three known departures applied: it marks [vdso] frames _[k] (vDSO code runs
    in user mode: its time is user CPU, so ours stays user); it names a frame of a DSO holding
    parentheses "[unknown] " (`(/memfd:sealed-9117… (deleted))`: ours takes the balanced group); and
    it drops a frame printed without a symbol (empty_sym), where ours names it after its DSO, as
    it does an [unknown] symbol (dropped, its caller would pass for the leaf)."""
    text = gzip.decompress((LAYOUTS / f"{layout}.txt.gz").read_bytes()).decode()
    out: Counter = Counter()
    for sample, period in parse_script_default(text.splitlines(), layout).periods.items():
        frames = []
        for f in reversed(sample.frames):
            name, kernel = f.removesuffix(USER), not f.endswith(USER)
            if layout == "empty_sym" and name.endswith(" (deleted)]"):
                continue
            frames.append(("[unknown] ", kernel) if name.endswith(" (deleted)]") else
                          (name, True) if name.startswith("__vdso_") else (name, kernel))
        out[sample.comm, tuple(frames)] += period
    return out


@pytest.mark.parametrize("layout", ["default", "notime_tid", "notime_pidtid_cpu", "notime_tid_cpu", "ns_period",
                                    "vmlinux", "empty_sym"])
def test_each_layout_folds_as_inferno_collapse_perf_folds_it(layout):
    """Every stack, its frames' names, kernel or user, and its count equal the collapser's
    (tests/fixtures/README.md: `inferno-collapse-perf --kernel`, inferno 0.12.8), but for the three
    departures as_collapsed names."""
    ours, theirs = as_collapsed(layout), inferno(layout)
    assert len(theirs) == 223 and ours == theirs


def test_a_record_p_capture_and_its_symoff_srcline_print_read_alike_and_fold_as_inferno_folds_them():
    """`perf record -p PID` keeps no CPU (its header is `comm pid time: period event:`); `-F
    ...,symoff,srcline` prints each frame's `+0x..` and a srcline line under it ("  read.c:26",
    "  [kernel.kallsyms][ffffffff81d33df7]"), which was refused as "not a stack frame" and which
    the collapsers skip."""
    plain, srcline = stacks("record_p", False), stacks("record_p_symoff_srcline", False)
    assert plain == srcline and sum(plain.values()) == 500
    assert {s.cpu for s in plain} == {NO_CPU}
    for layout in ("record_p", "record_p_symoff_srcline"):
        assert as_collapsed(layout) == inferno(layout)
    assert len(inferno("record_p")) == 16


def test_an_inlined_frame_is_kernel_or_user_as_the_frame_it_was_inlined_into():
    """perf --inline prints an inlined function as a frame of its own, at its container's address,
    with " (inlined)" where the DSO would be (and, with srcline, after the srcline line). The
    fixtures are record_p rewritten (tests/fixtures/README.md): clear_user, __always_inline in the
    kernel, inside read_zero. Kernel, as read_zero is; the collapsers take "inlined" for a DSO and
    mark the frame user, the one departure here."""
    plain = stacks("record_p", False)
    for layout in ("record_p_inlined", "record_p_symoff_srcline_inlined"):
        got = stacks(layout, False)
        assert sum(got.values()) == 500
        want: Counter = Counter()
        for s, n in plain.items():
            frames = tuple(g for f in s.frames for g in (("clear_user", f) if f == "read_zero" else (f,)))
            want[Sample(s.cpu, s.comm, frames)] += n
        assert got == want and sum(n for s, n in got.items() if "clear_user" in s.frames) == 384
    theirs = {(comm, tuple((name, name != "clear_user" and kernel) for name, kernel in frames)): n
              for (comm, frames), n in as_collapsed("record_p_inlined").items()}
    assert Counter(theirs) == inferno("record_p_inlined")
    # with srcline the collapser drops the DSO-less frame instead (it reads no " (inlined)" there)
    dropped = {(comm, tuple(f for f in frames if f[0] != "clear_user")): n
               for (comm, frames), n in as_collapsed("record_p_symoff_srcline_inlined").items()}
    assert Counter(dropped) == inferno("record_p_symoff_srcline_inlined")


def test_a_frame_without_a_dso_that_no_inlined_mark_follows_is_still_refused_naming_its_line():
    text = ("dd  9093 73285.967031:    2004008 cpu-clock: \n"
            "\tffffffff81d33df7 clear_user\n"
            "  [kernel.kallsyms][ffffffff81d33df7]\n"
            "\tffffffff81d33df7 read_zero+0x77 ([kernel.kallsyms])\n\n")
    with pytest.raises(ParseError, match=r"^t:2: a frame without its '\(dso\)'.*clear_user"):
        parse_script_default(text.splitlines(), "t")
    with pytest.raises(ParseError, match=r"^t:2: a frame without its '\(dso\)'"):
        parse_script_default(text.replace("  [kernel.kallsyms][ffffffff81d33df7]\n", "").splitlines(), "t")


def test_jit_frames_named_through_a_perf_pid_map_are_user_space_and_one_stack_keeps_its_sample_count():
    """A JIT names its code for perf in /tmp/perf-PID.map: perf script prints `jit_spin+0x21
    (/tmp/perf-9698.map)`. User space (the DSO is no kernel's); the whole profile is one stack,
    whose 115 samples stay 115 (a common factor taken over the stacks' sums would make it 1)."""
    got = stacks("jit_map", False)
    assert got == Counter({Sample(NO_CPU, "jit", ("jit_spin" + USER, "main" + USER,
                                                   "__libc_start_call_main" + USER)): 115})
    assert as_collapsed("jit_map") == inferno("jit_map")
    p = profile_files.read_profile(LAYOUTS / "jit_map.txt.gz")
    assert p.unit == "samples" and sum(p.stacks.values()) == 115
