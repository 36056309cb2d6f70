"""One weighting rule for every format (issue 46): a sample counts by its period where the input
carries periods (perf script's default header, a report's Overhead or Period column, the counts
stackcollapse-perf.pl and inferno sum), by one where it carries none. One page-faults profile
(tests/fixtures/perf-weighting/, whose periods vary from 1 to 493 faults) read from four prints
of it gives one breakdown; read by samples it would give another."""
import gzip
import shutil

import pytest

from conftest import FIXTURES
from hostnet.analysis import profile_files, profiles
from hostnet.probes.perf import PerfOnHost
from hostnet.hosts import LocalHost
from hostnet.parsers.perf_default import NO_CPU, parse_script_default
from hostnet.parsers.perf_report import SymbolSamples
from hostnet.taxonomy import load

PERF = PerfOnHost(LocalHost())  # perf run here on the perf.data files (analysis runs no command)

WEIGHTING = FIXTURES / "perf-weighting"
LAYOUTS = FIXTURES / "perf-layouts"
TAX = load("linux-6")


def _read(name, directory=WEIGHTING):
    path = directory / name
    return profile_files.profile_from_text(gzip.decompress(path.read_bytes()).decode(), path.name)


def _leaf(p):
    return profiles.breakdown(p, p.cpus(), TAX, profiles.workload_comms(p, None, None), embedded=False)


def test_one_page_faults_profile_gives_one_breakdown_from_script_report_and_folded_stacks():
    script, report, period = _read("script_default.txt.gz"), _read("report_n.txt.gz"), _read("report_n_period.txt.gz")
    folded = _read("inferno.folded.gz")
    assert (script.unit, script.weight) == ("period", "by period: 259 samples whose periods add up to 17,961 (by "
                                            "samples the shares would differ: the event's period varies)")
    assert period.unit == "period" and period.weight == "by period: the Period column (--show-total-period)"
    assert report.unit == "% of samples" and report.weight.startswith("by period: the Overhead column (the Samples "
                                                                       "column gives other shares")
    assert any(n.endswith("perf report --show-total-period prints the periods exactly") for n in report.notes)
    assert folded.unit == "folded" and folded.weight.startswith("as folded:")
    # script vs the report's Period column: the same counts, so the same shares to the last digit
    s = _leaf(profile_files.Profile(script.source, script.format, script.rows, None, script.unit))
    assert s["busy_samples"] == sum(r.samples for r in period.rows) == 17961
    p = _leaf(period)
    assert p["leaf_pct"] == pytest.approx(s["leaf_pct"], abs=1e-9)
    # the Overhead column: printed to 0.01 %, so within half of that per row (46 rows)
    r = _leaf(report)
    assert max(abs(r["leaf_pct"][c] - s["leaf_pct"][c]) for c in s["leaf_pct"]) < 46 * 0.005 / 100 * 100
    # inferno's folded counts are the same sums (no CPU); it marks [vdso] a kernel frame (any "[...]" DSO),
    # which hostnet reads as user: that one frame moves from user to unclassified, nothing else moves
    f = _leaf(folded)
    whole = _leaf(profile_files.Profile(script.source, script.format,
                                   [SymbolSamples(NO_CPU, r.comm, r.symbol, r.kernel, r.samples)
                                    for r in script.rows], None, script.unit))
    assert f["busy_samples"] == whole["busy_samples"] == 17961
    moved = {c: f["leaf_pct"][c] - whole["leaf_pct"][c] for c in whole["leaf_pct"]}
    assert moved["user"] == pytest.approx(-moved["unclassified"]) and 0 < moved["unclassified"] < 0.5
    assert all(abs(v) < 1e-9 for c, v in moved.items() if c not in ("user", "unclassified"))
    # not a vacuous agreement: by samples the same text gives etc 0.39 %, by period 2.74 %
    counted = parse_script_default(gzip.decompress((WEIGHTING / "script_default.txt.gz").read_bytes()).decode()
                                   .splitlines()).samples
    by_samples = profile_files.Profile(script.source, script.format, profile_files.leaf_rows(counted), None)
    assert round(_leaf(by_samples)["leaf_pct"]["etc"], 2) == 0.39 and round(s["leaf_pct"]["etc"], 2) == 2.74


def test_a_fixed_period_event_weighs_the_same_by_period_as_by_samples_and_a_text_without_periods_by_samples():
    clock = _read("default.txt.gz", LAYOUTS)  # cpu-clock -F 499: every period 2004008
    assert (clock.unit, sum(clock.stacks.values())) == ("samples", 758)
    assert clock.weight == "by period, and every sample's is 2,004,008: the same as by samples"
    bare = _read("notime_tid.txt.gz", LAYOUTS)  # -F comm,tid,event,ip,sym,dso: no period printed
    assert bare.unit == "samples" and bare.weight.startswith("by samples: 758 sample headers print no period")
    assert sum(bare.stacks.values()) == 758
    report = _read("flat_comm_dso_sym_n_comma.txt.gz", FIXTURES / "perf-report-variants")
    assert report.unit == "samples" and report.weight.startswith("by period, through the exact Samples column")


def test_the_breakdown_says_how_it_weighed():
    p = _read("script_default.txt.gz")
    text = profiles.format_table(p, [_leaf(p)], "linux-6/7", "given")
    assert "\nweighted by period: 259 samples whose periods add up to 17,961" in text
    assert "(summed sample periods; idle and foreign below)" in text
    assert profiles.to_json(p, [_leaf(p)], "linux-6/7", "given")["weight"] == p.weight


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed (Debian: linux-perf)")
def test_a_perf_data_of_an_event_whose_period_varies_is_read_by_period(tmp_path):
    """hostnet's own report and folded stacks count samples (its probe records cpu-clock); a brought
    perf.data of page-faults is read from perf script's default text instead, which prints periods."""
    data = tmp_path / "pf.data"
    res = LocalHost().run(["perf", "record", "-a", "-g", "-F", "2999", "-e", "page-faults", "-o", str(data), "--",
                           "python3", "-c", "for i in range(40): b = bytearray(8 << 20)"], check=False, timeout=120)
    if res.returncode != 0:
        pytest.skip(f"perf record -a is not allowed here: {res.stderr.strip()[-200:]}")
    got = profile_files.read_profile(data, PERF)
    text = LocalHost().run(["perf", "script", "-i", str(data)], timeout=120).stdout
    want = profile_files.profile_from_text(text, "perf script")
    assert got.event == "page-faults" and got.weight == want.weight
    assert got.stacks == want.stacks and got.unit == want.unit
    if got.unit == "period":  # periods that happened to be equal would read as samples, rightly
        assert sum(got.stacks.values()) > len(text.split("page-faults:")) - 1
    # without -g: the leaf breakdown of the header lines' addresses, and no call-chain column
    flat = tmp_path / "flat.data"
    LocalHost().run(["perf", "record", "-a", "-F", "2999", "-e", "page-faults", "-o", str(flat), "--",
                     "python3", "-c", "for i in range(40): b = bytearray(8 << 20)"], timeout=120)
    leaf = profile_files.read_profile(flat, PERF)
    assert leaf.stacks is None and leaf.rows and "no call chains (perf record without -g)" in " ".join(leaf.notes)
