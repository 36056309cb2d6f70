"""The embedded testbed itself (root, network namespaces): up, status, down, name collisions,
teardown on SIGTERM, a persistent testbed kept across runs, and the capability check through SSH.

Each test builds its own uniquely named testbed and tears it down, even on failure.
"""
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO, live_ready
from hostnet import testbed
from hostnet.hosts import netns_exists
from hostnet.knobs import KNOBS

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def _name(tag):
    return f"{tag}{os.getpid() % 10000}"


def test_up_status_down_and_name_collision(state_dir):
    name = _name("ud")
    tb = testbed.up(name)
    try:
        assert all(netns_exists(n) for n in testbed.EmbeddedLayout(name).netns.values())
        assert [r["name"] for r in testbed.status()] == [name]
        out = tb.sender.host.run(["ip", "-br", "addr", "show", "dev", tb.sender.iface]).stdout
        assert "198.18.0.1/24" in out
        with pytest.raises(testbed.TestbedError, match="already up"):
            testbed.up(name)
        assert testbed.attach(name).receiver.ip == "198.18.0.2"
    finally:
        assert testbed.down(name) == []
    assert not any(netns_exists(n) for n in testbed.EmbeddedLayout(name).netns.values())
    assert testbed.status() == []


def test_sigterm_tears_the_testbed_down(state_dir, tmp_path):
    name = _name("sg")
    code = ("import time\nfrom hostnet import testbed\n"
            f"with testbed.embedded({name!r}):\n    print('up', flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "HOSTNET_STATE_DIR": str(state_dir)})
    try:
        assert proc.stdout.readline().strip() == "up"
        assert netns_exists(testbed.EmbeddedLayout(name).netns["sender"])
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        testbed.down(name)
    assert not any(netns_exists(n) for n in testbed.EmbeddedLayout(name).netns.values())


def test_run_on_a_persistent_testbed_restores_its_settings(state_dir, tmp_path):
    env = {**os.environ, "HOSTNET_STATE_DIR": str(state_dir)}
    name = _name("ps")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                              timeout=120, cwd=REPO, env=env)
    assert cli("testbed", "up", "--name", name).returncode == 0
    try:
        tb = testbed.attach(name)
        mtu_before = KNOBS["mtu"].read(tb.receiver.host, tb.receiver.iface)
        out = cli("run", "single-flow", "--config", "all-opts", "--duration", "2", "--warmup", "0",
                  "--testbed", name, "--runs-dir", str(tmp_path), "--quiet")
        assert out.returncode == 0, out.stderr
        assert KNOBS["mtu"].read(tb.receiver.host, tb.receiver.iface) == mtu_before
        assert testbed.stale() == []  # persistent: not mistaken for a crashed session's leftovers
        assert "persistent testbed kept up" in cli("restore", "--name", name).stdout
        assert netns_exists(testbed.EmbeddedLayout(name).netns["sender"])
    finally:
        assert cli("testbed", "down", "--name", name).returncode == 0
    assert not netns_exists(testbed.EmbeddedLayout(name).netns["sender"])


def _cli(state_dir, *args):
    import subprocess
    import sys

    from conftest import REPO
    return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env={**os.environ, "HOSTNET_STATE_DIR": str(state_dir)})


def test_testbed_check_prints_capabilities_through_ssh(state_dir):
    out = _cli(state_dir, "testbed", "check", "--ssh")
    assert out.returncode == 0, out.stderr
    for row in ("reachable", "hw_perf_counters", "ntuple_arfs", "ring_max", "ddio", "iommu", "netem", "tool:iperf3"):
        assert row in out.stdout
    assert "over SSH" in out.stdout
    assert testbed.status() == []


def test_point_needing_a_missing_capability_is_refused_up_front(state_dir, tmp_path):
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    if "dctcp" in available:
        pytest.skip("this kernel has dctcp")
    out = _cli(state_dir, "run", "incast", "--flows", "2", "--cc", "dctcp", "--duration", "1",
               "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and "lacks congestion control dctcp" in out.stderr
    assert not list(tmp_path.rglob("manifest.json"))  # refused before any point ran
