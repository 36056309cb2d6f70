"""Notebooks 14 (end-host loss) and 11 (congestion control) run live in the quick profile, on
a small grid: UDP at a low and a high rate with both placements, and cubic plus dctcp (refused
on a kernel without it, and then listed as not available)."""
import json
import shutil

import pandas as pd
import pytest

from conftest import REPO, live_ready
from hostnet.notebook import batch
from hostnet import store
from hostnet.sections import end_host_loss

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready())),
              pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf (iperf2) missing: make install")]


def _run(name, tmp_path, **params):
    figs = tmp_path / "figures"
    batch.execute(REPO / "notebooks" / name, {"mode": "run", "campaign": "", **batch.SMOKE,
                                                  "runs_dir": str(tmp_path / "runs"), "figures_dir": str(figs),
                                                  "include_contaminated": True,  # a shared machine: test the path
                                                  **params}, tmp_path / "executed")
    return json.loads((figs / name.replace(".ipynb", ".meta.json")).read_text())


def test_end_host_loss_notebook_runs_live(state_dir, tmp_path):
    meta = _run("14-end-host-loss.ipynb", tmp_path, rates_gbps=[0.5, 8], buffers_kb=[1024],
                placements=["same", "different"], algorithms=["cubic"], flows=[1])
    assert [v["id"] for v in meta["verdicts"]] == ["F21", "F22", "F23", "F28"]
    assert meta["verdicts"][3]["verdict"] == "not testable here"  # vegas is not in the sweep here
    assert {"end-host-loss-locations", "end-host-loss-tcp"} <= set(meta["figures"])
    udp = store.load_manifests(tmp_path / "runs", meta["campaign"], "udp-loss")
    per_point = batch.SMOKE["repetitions"] + end_host_loss.spec().unprofiled_repetitions  # perf's cost, per point
    assert len(udp) == 4 * per_point and all(m["status"] == "ok" for m in udp)
    assert sum(m["probes"].get("perf") == "off" for m in udp) == 4 * end_host_loss.spec().unprofiled_repetitions
    different = next(m["placement"] for m in udp if m["point"]["app_cpu"] == "different")
    assert different["confounded"] and different["app_cpu"] == different["sender_cpu"]  # 2-core testbed
    tidy = store.load_tidy(tmp_path / "runs", meta["campaign"], "udp-loss")
    per_run = tidy[tidy.side != "flow"].pivot_table(index="run_id", columns="metric", values="value", aggfunc="sum")
    assert (per_run.sent_datagrams_count > 0).all() and (per_run.offered_datagrams_count > 0).all()
    # where iperf's own sequence numbers saw clear loss, a kernel counter located it
    lossy = per_run[per_run.iperf_loss_pct > 5]
    assert (lossy.lost_datagrams_count > 0).all()
    assert set(pd.DataFrame(meta["summary"]).placement) == {"same", "different"}


def test_congestion_control_notebook_runs_live_and_lists_dctcp(state_dir, tmp_path):
    meta = _run("11-congestion-control.ipynb", tmp_path, algorithms=["cubic", "dctcp"], flows=[1])
    rows = {r["congestion_control"]: r for r in meta["summary"]}
    assert rows["cubic"]["status"] == "measured" and rows["cubic"]["throughput_gbps"] > 0
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    if "dctcp" not in available:
        assert rows["dctcp"]["status"] == "not available on this host"
        assert "dctcp: not available on this host" in meta["verdicts"][0]["this run shows"]
