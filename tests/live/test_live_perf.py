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
