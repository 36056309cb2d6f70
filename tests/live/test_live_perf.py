"""report_files (hostnet.probes.perf) equals the sequential path on a fresh perf recording (root, perf)."""
import shutil
import subprocess

import pytest

from hostnet.hosts import LocalHost
from hostnet.probes.perf import report_files, report_files_sequential

pytestmark = pytest.mark.live


def _mask_tip(files):
    # perf report ends with a random "# (Tip: ...)" line: the one part that differs run to run
    return {k: "\n".join(line for line in v.splitlines() if not line.startswith("# (Tip:")) for k, v in files.items()}


@pytest.mark.skipif(not shutil.which("perf") or subprocess.run(["id", "-u"], capture_output=True, text=True)
                    .stdout.strip() != "0", reason="needs perf and root")
def test_report_files_equal_the_sequential_path_on_a_fresh_recording(tmp_path):
    data = str(tmp_path / "perf.data")
    LocalHost().run(["perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", "999", "-o", data, "--quiet",
                     "--", "sleep", "1"], timeout=60)
    new, old = report_files(LocalHost(), data), report_files_sequential(LocalHost(), data)
    assert _mask_tip(new) == _mask_tip(old) and new["perf_folded.txt"]


@pytest.mark.skipif(not shutil.which("perf") or subprocess.run(["id", "-u"], capture_output=True, text=True)
                    .stdout.strip() != "0", reason="needs perf and root")
def test_perf_samples_only_between_enable_and_disable():
    """PerfProbe armed for 1 s with its events off, on for 0.5 s, off for 1 s: the samples and
    perf_enabled_s.txt cover the half second only. A halted vCPU takes fewer cpu-clock samples,
    so the bound below is loose; sampling the 2.5 s perf ran would give over twice the upper one."""
    import os
    import time

    from hostnet.parsers.perf_script import parse_folded
    from hostnet.probes.perf import PerfProbe
    host, probe = LocalHost(), PerfProbe(999)
    probe.arm(host)
    time.sleep(1.0)
    probe.start(host)
    time.sleep(0.5)
    probe.close(host)
    time.sleep(1.0)
    files = probe.stop(host)
    enabled = float(files["perf_enabled_s.txt"])
    samples = sum(n for _, n in parse_folded(files["perf_folded.txt"]))
    assert 0.5 <= enabled < 0.7
    assert 0.3 * enabled * 999 <= samples <= 1.2 * enabled * 999 * os.cpu_count()


@pytest.mark.skipif(not shutil.which("perf") or subprocess.run(["id", "-u"], capture_output=True, text=True)
                    .stdout.strip() != "0", reason="needs perf and root")
def test_perf_led_ahead_of_the_window_keeps_only_the_window_samples():
    """PerfProbe switched on 1 s ahead (lead), the window then 0.5 s (bound): perf sampled 1.5 s,
    the report and stacks keep the half second, and perf_window.txt says how far ahead it started.
    Sampling the whole 1.5 s would give three times the window's samples (over the upper bound)."""
    import os
    import time

    from hostnet.parsers.perf_script import parse_folded
    from hostnet.probes.perf import PerfProbe
    host, probe = LocalHost(), PerfProbe(999)
    probe.arm(host)
    probe.lead(host)
    time.sleep(1.0)
    start = time.time()
    probe.start(host)  # led: marks nothing, sends nothing
    time.sleep(0.5)
    end = time.time()
    probe.bound(start, end)
    files = probe.stop(host)
    window = dict(line.split(" ", 1) for line in files["perf_window.txt"].splitlines())
    assert 0.95 <= float(window["lead_s"]) < 1.3 and abs(float(window["clock_offset_s"])) < 0.05
    assert float(files["perf_enabled_s.txt"]) == pytest.approx(end - start, abs=1e-5)
    samples = sum(n for _, n in parse_folded(files["perf_folded.txt"]))
    assert 0.3 * 0.5 * 999 <= samples <= 1.2 * 0.5 * 999 * os.cpu_count()
