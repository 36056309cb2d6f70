"""hostnet's public names: what a notebook of one's own needs, loaded on first use."""
import subprocess
import sys

import pytest

import hostnet
from conftest import FIXTURES, REPO
from hostnet import sections, store
from hostnet.analysis import profiles
from hostnet.measure import sweep


def test_each_public_name_is_the_library_s_own():
    assert hostnet.SECTIONS is sections.SECTIONS and hostnet.section is sections.section
    assert hostnet.declared is sweep.declared and hostnet.run_sweep is sweep.run_sweep
    assert hostnet.Campaign is store.Campaign
    assert set(hostnet.__all__) >= {"load", "breakdown", "SECTIONS", "section", "declared", "run_sweep", "Campaign"}
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        hostnet.nothing  # noqa: B018


def test_breakdown_of_a_text_profile_is_the_cli_s_csv():
    path = FIXTURES / "perf_report_no-opts.txt"
    table = hostnet.breakdown(path, cpus=[[1]], comms=["iperf3"])
    _, results, _, _ = profiles.analyse(path, cpus=[[1]], comms=["iperf3"])
    assert table.equals(profiles.table(results)) and set(table.category) >= {"data_copy", "tcp/ip"}


def test_importing_hostnet_loads_no_floor():
    code = "import sys, hostnet; print(sorted(m for m in sys.modules if m.startswith('hostnet')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "['hostnet']"
