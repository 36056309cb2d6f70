"""kernel_patch/ as root: check.sh applies and builds the series; on this stock kernel a point
with the latency probe records that bpftrace measured it, and why."""
import os
import subprocess

import pytest

from conftest import REPO
from hostnet.probes import kernel_source

pytestmark = pytest.mark.live


def test_series_applies_and_builds_with_werror():
    """kernel_patch/check.sh: checkpatch, apply to the pinned source, compile net/core/ + the tcp objects.

    Live: as root it installs linux-source-6.12 and compiles. With HOSTNET_KERNEL_REQUIRED=1 (CI) a
    skip is a failure: the script exits 1 instead of 77, and so does this test."""
    required = os.environ.get("HOSTNET_KERNEL_REQUIRED") == "1"
    if os.geteuid() != 0 and not required:
        pytest.skip("check.sh installs linux-source-6.12 and needs root")
    res = subprocess.run(["bash", str(REPO / "kernel_patch" / "check.sh")], capture_output=True, text=True,
                         timeout=1800)
    # The build leaves gigabytes of dirty pages; written back while the next live tests measure, they
    # slowed every process start there (a 2 s incast point's window opened 1.3 s late and lasted 1 ms,
    # twice in a row in CI on 2026-11-28). Written back now, in this test's own time.
    os.sync()
    if res.returncode == 77 and not required:
        pytest.skip(res.stdout.strip().splitlines()[-1])
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "CHECK PASS" in res.stdout


def test_stock_kernel_point_records_the_ebpf_latency_source(state_dir, tmp_path):
    """On this stock kernel a point with the latency probe says bpftrace measured it, and why."""
    from conftest import live_ready
    from hostnet.measure import config as sc, runner
    from hostnet import store, testbed
    from hostnet.derive.workloads import LongFlow
    if live_ready() or os.path.exists(kernel_source.RX_PROF_FILE):
        pytest.skip(live_ready() or "this kernel has the rx_prof series")
    with testbed.embedded(f"kp{os.getpid() % 10000}") as tb:
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("all-opts"), LongFlow(2, 1), tmp_path, "live",
                                                     probing=runner.Probing(latency_sample_every=4)))
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    assert m["probes"]["latency"]["local"]["source"] == kernel_source.EBPF
    assert "stock kernel" in m["probes"]["latency"]["local"]["why"]
    t = store.read_tidy(path)
    assert (t.metric == "rx_to_copy_samples_count").any()
