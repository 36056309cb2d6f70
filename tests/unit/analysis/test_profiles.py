"""A profile a researcher brings (hostnet.analysis.profile_files, profiles): the same profile in every format perf
writes gives one breakdown (equal within the rounding of perf report's printed shares), and a
perf.data read through hostnet's own path (perf run with hostnet's fields) gives what perf's
default text output of the same file gives."""
import gzip
import platform
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES
from hostnet.analysis import profile_files, profiles
from hostnet.probes.perf import PerfOnHost
from hostnet.analysis.metrics import BREAKDOWN_ORDER
from hostnet.hosts import LocalHost
from hostnet.parsers import ParseError
from hostnet.parsers.perf_default import NO_CPU
from hostnet.parsers.perf_script import USER, Sample
from hostnet.taxonomy import load

PERF = PerfOnHost(LocalHost())  # perf run here on the perf.data files (analysis runs no command)

REF = FIXTURES / "perf-default"
TAX = load("linux-6")


def text(path) -> str:
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def profile(path):
    return profile_files.profile_from_text(text(path), path.name)


def shares(p, cpus, comms=None, embedded=True):
    return profiles.breakdown(p, cpus, TAX, profiles.workload_comms(p, comms, None), embedded=embedded)


def assert_within_rounding(report, exact, rows: int):
    """A report's shares come from overheads printed to 0.01 %: each row is off by at most
    0.005 % of all samples, so a category's share of the busy ones by at most rows x that."""
    busy_pct = report["busy_samples"]  # a report without -n counts in % of all samples
    tolerance = 100.0 * rows * 0.005 / busy_pct + 1e-9
    for cat in BREAKDOWN_ORDER:
        assert report["leaf_pct"][cat] == pytest.approx(exact["leaf_pct"][cat], abs=tolerance), cat


@pytest.fixture(scope="module")
def ref_script():
    return profile(REF / "perf_script_default.txt.gz")


def test_formats_are_told_apart_by_content():
    kinds = {name: profile_files.text_format(text(path), name) for name, path in {
        "script": REF / "perf_script_default.txt.gz", "report": REF / "perf_report_stdio_children_callgraph.txt.gz",
        "folded": REF / "stackcollapse_reference.folded.gz", "own report": FIXTURES / "perf_report_no-opts.txt",
        "own script": FIXTURES / "perf_script_all-opts.txt"}.items()}
    assert kinds == {"script": "perf script", "report": "perf report", "folded": "folded",
                     "own report": "hostnet perf report", "own script": "hostnet perf script"}
    with pytest.raises(ParseError, match="empty"):
        profile_files.text_format("\n", "x")


def test_the_reference_profile_in_every_format_gives_one_breakdown(ref_script):
    """Default perf script (exact counts), perf report with and without children (printed shares),
    stackcollapse's folded stacks (exact counts, CPUs merged)."""
    assert ref_script.has_cpu and ref_script.cpus() == [0, 1] and ref_script.stacks is not None
    exact = shares(ref_script, [0, 1])
    assert exact["busy_samples"] + exact["idle_samples"] + exact["foreign_samples"] == 11179
    children = profile(REF / "perf_report_stdio_children_callgraph.txt.gz")
    assert not children.has_cpu and children.stacks is None and children.unit == "% of samples"
    assert_within_rounding(shares(children, [NO_CPU]), exact, len(children.rows))
    by_cpu = profile(REF / "perf_report_stdio_nochildren_cpu_comm_sym.txt.gz")
    for cpus in ([0], [1], [0, 1]):
        assert_within_rounding(shares(by_cpu, cpus), shares(ref_script, cpus), len(by_cpu.rows))
    folded = shares(profile(REF / "stackcollapse_reference_kernel_pid.folded.gz"), [NO_CPU])
    # stackcollapse marks [vdso] frames as kernel ("_[k]"): __vdso_clock_gettime moves from user to
    # unclassified, and nothing else moves
    vdso = 100.0 * sum(n for s, n in ref_script.stacks.items() if s.frames and s.frames[0].startswith("__vdso_")) \
        / exact["busy_samples"]
    assert vdso > 0
    for cat in BREAKDOWN_ORDER:
        moved = {"user": -vdso, "unclassified": vdso}.get(cat, 0.0)
        assert folded["leaf_pct"][cat] == pytest.approx(exact["leaf_pct"][cat] + moved, abs=1e-9), cat
        assert folded["attributed_pct"][cat] == pytest.approx(exact["attributed_pct"][cat] + moved, abs=1e-9), cat


def test_commands_cpus_and_unclassified_symbols(ref_script):
    mine = shares(ref_script, [0, 1], comms=["iperf3"])
    # kernel threads that serve the application (ksoftirqd, swapper, kworker) stay; others are foreign
    foreign = sum(n for s, n in ref_script.stacks.items()
                  if s.comm in ("kdamond.0", "memfd:sealed-91", "sleep", "kcompactd0", "perf-exec"))
    assert mine["foreign_samples"] == foreign > 0
    everyone = shares(ref_script, [0, 1])
    assert everyone["foreign_samples"] == 0
    assert profiles.cpu_sets(ref_script, None) == [[0], [1], [0, 1]]
    with pytest.raises(ValueError, match="no samples on CPU 7"):
        profiles.cpu_sets(ref_script, [[7]])
    report = profile(REF / "perf_report_stdio_children_callgraph.txt.gz")
    with pytest.raises(ValueError, match="has no CPU field"):
        profiles.cpu_sets(report, [[0]])
    top = dict(everyone["unclassified_top"])
    assert top and sum(top.values()) <= everyone["leaf_pct"]["unclassified"] + 1e-9
    assert all(TAX.classify(sym) == "unclassified" for sym in top)


def test_kthreads_adds_kernel_threads_that_serve_the_application(ref_script):
    """--kthreads REGEX: kernel threads beyond hostnet's own pattern (here kdamond, the memory
    monitor) count as the workload's instead of foreign; without --comm every command is already."""
    plain = profiles.workload_comms(ref_script, ["iperf3"], None)
    more = profiles.workload_comms(ref_script, ["iperf3"], r"kdamond")
    assert "kdamond.0" not in plain and more == plain | {"kdamond.0"}
    kdamond = sum(n for s, n in ref_script.stacks.items() if s.comm == "kdamond.0")
    before = profiles.breakdown(ref_script, [0, 1], TAX, plain)["foreign_samples"]
    after = profiles.breakdown(ref_script, [0, 1], TAX, more)["foreign_samples"]
    assert kdamond > 0 and before - after == kdamond
    assert profiles.workload_comms(ref_script, None, r"kdamond") == ref_script.comms()


def test_kernel_series_from_the_file_else_the_running_kernel(monkeypatch):
    p = profile(FIXTURES / "perf_script_default_loopback.txt.gz")
    monkeypatch.setattr(profiles.platform, "release", lambda: "5.4.43")  # the machine reading it
    assert profiles.series_of(p, None) == ("linux-5", "from the running kernel (5.4.43): the file records no kernel")
    p.release = "6.18.44-fc"
    assert profiles.series_of(p, None) == ("linux-6", "from the file's header (kernel 6.18.44-fc)")
    assert profiles.series_of(p, "linux-5") == ("linux-5", "as asked")


def test_a_perf_data_without_a_perf_to_run_is_refused_naming_the_file():
    with pytest.raises(ParseError, match=r"loopback.*a perf.data file: reading it runs perf, and no perf was given"):
        profile_files.read_profile(LOOPBACK_DATA)


def test_next_to_the_paper_s_fig3(ref_script):
    results = [shares(ref_script, [1])]
    table = profiles.next_to_paper(results, "all-opts")
    assert list(table.columns) == ["category", "this profile, CPU 1 (chain) %", "paper all-opts sender %",
                                   "paper all-opts receiver %"]
    row = table.set_index("category").loc["data_copy"]
    assert row["paper all-opts receiver %"] == 54.33 and row["paper all-opts sender %"] == 47.95
    assert row["this profile, CPU 1 (chain) %"] == pytest.approx(results[0]["attributed_pct"]["data_copy"])


LOOPBACK_DATA = FIXTURES / "perf_record_loopback.data.gz"
LOOPBACK_SCRIPT = FIXTURES / "perf_script_default_loopback.txt.gz"
LOOPBACK_REPORT = FIXTURES / "perf_report_default_loopback.txt.gz"


def test_the_loopback_capture_s_default_texts_agree():
    script, report = profile(LOOPBACK_SCRIPT), profile(LOOPBACK_REPORT)
    assert sum(n for s, n in script.stacks.items()) == 1880
    assert_within_rounding(shares(report, [NO_CPU], embedded=False), shares(script, [0, 1], embedded=False),
                           len(report.rows))


needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed (Debian: linux-perf)")


def _perf_text(tmp_path, *args, data=None) -> str:
    if data is None:
        data = tmp_path / "perf.data"
        data.write_bytes(gzip.decompress(LOOPBACK_DATA.read_bytes()))
    return LocalHost().run(["perf", *args, "-i", str(data)], timeout=120).stdout


def _recorded_on_this_kernel(tmp_path) -> bool:
    recorded = _perf_text(tmp_path, "buildid-list")
    running = LocalHost().run(["perf", "buildid-list", "-k"]).stdout.strip()
    return [line.split()[0] for line in recorded.splitlines() if line.endswith("[kernel.kallsyms]")] == [running]


def _record(directory, *scope) -> Path:
    """A perf.data recorded now, on this kernel (cpu-clock with call graphs, as hostnet records):
    a process copying from /dev/zero to /dev/null spends its time in the kernel."""
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (Debian: linux-perf)")
    data = directory / "perf.data"
    res = LocalHost().run(["perf", "record", *scope, "-e", "cpu-clock", "-F", "999", "-g", "-o", str(data), "--",
                           "dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=200000"], check=False, timeout=120)
    if res.returncode != 0:
        pytest.skip(f"perf record {' '.join(scope)} is not allowed here: {res.stderr.strip()[-200:]}")
    return data


@pytest.fixture(scope="module")
def recorded_here(tmp_path_factory):
    """System-wide (-a), as hostnet and the paper's artifact record: every sample has its CPU."""
    return _record(tmp_path_factory.mktemp("perf"), "-a")


def test_a_perf_data_recorded_without_cpus_gives_one_breakdown_of_every_sample(tmp_path):
    """perf record -- CMD (no -a, no -C) keeps no CPU: perf report prints -001 and perf script
    refuses hostnet's -F cpu. The breakdown is then one CPU set, leaf and call chain, and says why."""
    data = _record(tmp_path)
    p = profile_files.read_profile(data, PERF)
    assert p.cpus() == [NO_CPU] and p.stacks and p.rows
    assert any("recorded without CPUs" in n for n in p.notes)
    own = shares(p, [NO_CPU], embedded=False)
    default = shares(profile_files.profile_from_text(_perf_text(tmp_path, "script", data=data), "perf script"),
                     [NO_CPU], embedded=False)
    assert own["attributed_pct"] == pytest.approx(default["attributed_pct"], abs=1e-9)
    assert own["busy_samples"] == default["busy_samples"] > 100


def test_perf_data_through_hostnet_s_own_path_equals_perf_s_default_text_of_it(tmp_path, recorded_here):
    """perf.data -> hostnet's own perf report/script fields; perf's default script and report text
    of the same file, made with the same symbols: the same breakdown (the report within rounding)."""
    data = profile_files.read_profile(recorded_here, PERF)
    assert data.format == "perf.data" and data.release == platform.release() and data.event == "cpu-clock"
    script = profile_files.profile_from_text(_perf_text(tmp_path, "script", data=recorded_here), "perf script")
    report = profile_files.profile_from_text(_perf_text(tmp_path, "report", "--stdio", data=recorded_here),
                                            "perf report")
    for p in (data, script, report):
        profile_files.check_symbolised(p)
    # The workload's samples (dd, and the kernel threads working for it), as hostnet reads a run:
    # on a loaded machine (CI) a foreign process can own most samples; a CI run once had 2 of its
    # 862 in perf script's default text and not in hostnet's perf report rows, which did not recur
    # in 60 loaded recordings. A failure names each CPU's counts and keeps the perf.data.
    dd = {"dd"}
    per_cpu = {c: (shares(data, [c], dd, False)["busy_samples"], shares(script, [c], dd, False)["busy_samples"])
               for c in sorted(set(data.cpus()) | set(script.cpus()))}
    why = f"the workload's busy samples per CPU (hostnet's path, perf's default text): {per_cpu}; {recorded_here}"
    busy = 0
    for cpus in [[c] for c in data.cpus()] + [data.cpus()]:
        own, default = shares(data, cpus, dd, False), shares(script, cpus, dd, False)
        assert own["leaf_pct"] == pytest.approx(default["leaf_pct"], abs=1e-9, nan_ok=True), why
        assert own["attributed_pct"] == pytest.approx(default["attributed_pct"], abs=1e-9, nan_ok=True), why
        assert own["busy_samples"] == default["busy_samples"], why
        busy = own["busy_samples"]
    # kernel leaves of any layer: on 6.18.44 dd's zeroing is rep_stos_alternative (clear_user), which
    # the taxonomy leaves unclassified (no network layer), so it is no layer's but still the kernel's
    kernel = sum(v for k, v in own["leaf_pct"].items() if k != "user")
    assert busy > 100 and kernel > 10, why  # a profile with kernel work in it, named
    assert_within_rounding(shares(report, [NO_CPU], embedded=False), shares(data, data.cpus(), embedded=False),
                           len(report.rows))


@needs_perf
def test_a_perf_data_from_a_kernel_whose_symbols_are_missing_is_refused(tmp_path):
    """The stored loopback perf.data was recorded on 6.18.44-fc-v595. Where that kernel is not the
    running one and its symbols are not here, perf prints bare addresses: refused, never guessed."""
    if _recorded_on_this_kernel(tmp_path):
        pytest.skip("the kernel that recorded the stored perf.data is the one running: its symbols are here")
    with pytest.raises(ParseError, match=r"kernel samples have no symbol.*kernel 6\.18\.44-fc-v595.*perf archive"):
        profile_files.read_profile(LOOPBACK_DATA, PERF)


def _rows(named: int, unnamed: int, symbol="0xffffffff8e2b1234"):
    from hostnet.parsers.perf_report import SymbolSamples
    return [SymbolSamples(0, "iperf3", "copy_user_generic", True, named),
            SymbolSamples(0, "iperf3", symbol, True, unnamed), SymbolSamples(0, "iperf3", "memcpy_u", False, 500)]


@pytest.mark.parametrize("symbol", ["0xffffffff8e2b1234", "ffffffff8e2b1234", "[unknown]", "[kernel.kallsyms]"])
def test_kernel_samples_without_a_symbol_refuse_the_profile_above_one_percent(symbol):
    p = profile_files.Profile("their.data", "perf.data", _rows(980, 20, symbol), None, release="6.1.0-18-amd64")
    with pytest.raises(ParseError, match=r"their.data: 2.0 % of the kernel samples have no symbol.*6.1.0-18-amd64"):
        profile_files.check_symbolised(p)
    few = profile_files.Profile("their.data", "perf.data", _rows(9990, 10, symbol), None)
    profile_files.check_symbolised(few)
    assert few.notes == ["0.10 % of the kernel samples have no symbol (counted as unclassified)"]
    named = profile_files.Profile("their.data", "perf.data", _rows(1000, 0, symbol), None)
    profile_files.check_symbolised(named)
    assert named.notes == []


@needs_perf
def test_perf_data_equals_the_stored_default_texts_where_this_kernel_recorded_it(tmp_path):
    """The stored texts were made on the kernel that recorded the file: on another kernel perf
    would resolve the kernel's addresses against that kernel's symbols, so this skips there."""
    if not _recorded_on_this_kernel(tmp_path):
        pytest.skip("recorded on another kernel (perf buildid-list): its symbols are not here")
    data = profile_files.read_profile(LOOPBACK_DATA, PERF)
    script = profile(LOOPBACK_SCRIPT)
    assert unnamed_as_unknown(data.stacks) == unnamed_as_unknown(script.stacks)  # same stacks, same counts


def unnamed_as_unknown(stacks):
    """hostnet's own fields (-F ...,ip,sym) print a frame perf could not name as "[unknown]"; the
    default output adds its DSO, which names it "[libc.so.6]" (as stackcollapse-perf.pl does)."""
    def name(frame):
        bare = frame.removesuffix(USER)
        return ("[unknown]" + frame[len(bare):]) if bare.startswith("[") and bare.endswith("]") else frame
    out = Counter()
    for s, n in stacks.items():
        out[Sample(s.cpu, s.comm, tuple(name(f) for f in s.frames))] += n
    return out


VARIANTS = FIXTURES / "perf-report-variants"


@pytest.mark.parametrize("name", sorted(p.name for p in VARIANTS.glob("*.txt.gz") if not p.name.startswith("script")))
def test_perf_s_flat_report_variants_give_the_breakdown_of_the_perf_data_they_came_from(name):
    """#31: `--sort symbol` (and cpu,symbol, ...) print `IPC [IPC Coverage]` columns, and hostnet
    refused every such capture. Each layout perf prints for one perf.data (sort keys, IPC, -F, -t
    SEP, children or not) gives the leaf breakdown its perf script text gives: exactly where the
    report has a Samples column, else within the rounding of its printed shares."""
    script = profile(VARIANTS / "script_default.txt.gz")
    report = profile(VARIANTS / name)
    assert report.format == "perf report" and report.event == "cpu-clock"
    cpus = report.cpus()
    exact = shares(script, script.cpus() if cpus == [NO_CPU] else cpus, embedded=False)
    got = shares(report, cpus, embedded=False)
    if report.unit == "samples":
        assert got["busy_samples"] == exact["busy_samples"] > 500
        assert got["leaf_pct"] == pytest.approx(exact["leaf_pct"], abs=1e-9)
    else:
        assert_within_rounding(got, exact, len(report.rows))


def test_a_field_separated_row_with_the_separator_inside_a_value_is_refused():
    text = gzip.decompress((VARIANTS / "flat_sym_ipc_comma.txt.gz").read_bytes()).decode()
    head, _, rest = text.partition("\n 2")  # the first row
    damaged = head + "\n 2" + rest.replace("[k] ", "[k] std::pair<int, int> ", 1)
    with pytest.raises(ParseError, match=r"fields where the header has 3: a value holds the separator ','"):
        profile_files.profile_from_text(damaged, "perf report -t ,")


def test_a_column_that_would_change_the_counts_is_still_refused():
    text = gzip.decompress((VARIANTS / "flat_sym_ipc.txt.gz").read_bytes()).decode()
    with pytest.raises(ParseError, match=r"columns \['Weight'\] are not read"):
        profile_files.profile_from_text(text.replace("IPC   [IPC Coverage]", "Weight              "), "perf report")


def test_breakdown_refuses_what_is_not_a_file_a_gzip_bomb_and_counts_no_recording_has(tmp_path, monkeypatch):
    """#45: `hostnet breakdown` hung for good on a FIFO, took unbounded memory on /dev/zero and on a
    gzip bomb, and accepted a count of 2**70 (the table garbled)."""
    import gzip
    import os
    import threading
    fifo = tmp_path / "profile.fifo"
    os.mkfifo(fifo)
    answer = []
    reader = threading.Thread(target=lambda: answer.append(_error_of(profile_files.read_profile, fifo)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # unblock it: the test's verdict is already that read_profile blocked
        with open(fifo, "wb"):
            pass
        pytest.fail("read_profile blocked on a FIFO")
    assert "not a regular file (a directory, FIFO or device)" in answer[0]
    assert "not a regular file" in _error_of(profile_files.read_profile, "/dev/zero")
    assert "not a regular file" in _error_of(profile_files.read_profile, tmp_path)
    monkeypatch.setattr(profile_files, "MAX_TEXT_BYTES", 1 << 20)
    bomb = tmp_path / "perf.script.gz"
    bomb.write_bytes(gzip.compress(b"swapper 0 [000] 1.0: 1 cpu-clock:  ffffffff81000000 x ([kernel.kallsyms])\n"
                                   * 40000))  # 2.9 MB of text, each line a sample without a call chain
    assert bomb.stat().st_size < 20_000
    assert "more than 1 MiB of text decompressed" in _error_of(profile_files.read_profile, bomb)
    huge = tmp_path / "huge.folded"
    huge.write_text(f"iperf3;tcp_sendmsg {2 ** 70}\niperf3;tcp_recvmsg 1\n")  # one line alone: its gcd is 1 sample
    assert ("a count of 1.18e+21 folded counts (or their total) is above 2**53"
            in _error_of(profile_files.read_profile, huge))
    many = tmp_path / "many.folded"
    many.write_text(f"iperf3;a {2 ** 52}\niperf3;b {2 ** 52}\niperf3;c 5\n")  # each fine, the total not
    assert "above 2**53" in _error_of(profile_files.read_profile, many)


def _error_of(call, *args) -> str:
    with pytest.raises(ParseError) as err:
        call(*args)
    return str(err.value)
