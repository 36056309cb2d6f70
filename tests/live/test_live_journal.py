"""The journal under SIGKILL at chosen steps, not only at random times (test_live_knobs has those):
a controller on a persistent embedded testbed is stopped exactly between a journal line and its
setting, after a setting, in the middle of writing a line (a torn line), and in the middle of its
own restore; `hostnet restore` then puts every setting back and clears the journal, and while the
controller lives a second one and `hostnet restore` leave it alone."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO, live_ready
from hostnet import testbed
from hostnet.knobs import KNOBS

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]

RFS = "net.core.rps_sock_flow_entries"

# The controller: three journaled settings (a global sysctl, the receiver's MTU and GRO), then its
# own restore; it prints STEP and waits to be killed at the step named by argv[2]. The pause is a
# wrapper around the library's own functions, so what runs is the real journal code.
CONTROLLER = r"""
import json, os, sys, time
from hostnet import testbed
from hostnet.knobs import KNOBS, base, journal, journal_file
name, step, rfs = sys.argv[1], sys.argv[2], sys.argv[3]
state = {"writes": 0, "lines": 0, "restoring": False}

def pause():
    print("STEP", flush=True)
    time.sleep(3600)

real_write = base.Knob.write
def write(self, host, key, value):
    state["writes"] += 1
    if step == "before-setting" and state["writes"] == 2:
        pause()  # the MTU's journal line is on disk, the MTU not yet changed
    real_write(self, host, key, value)
    if step == "after-setting" and state["writes"] == 2:
        pause()  # the MTU changed, GRO not yet journaled
    if step == "during-restore" and state["restoring"]:
        pause()  # the first prior (GRO) is back, the MTU and the sysctl not yet
base.Knob.write = write

real_append = journal_file.append_line
def append_line(path, entry):
    state["lines"] += 1
    if step == "torn-line" and state["lines"] == 3:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, json.dumps(entry).encode()[:25])  # half a line, as a crash mid-write leaves it
        os.fsync(fd)
        pause()
    real_append(path, entry)
journal.append_line = append_line

with testbed.using(name) as tb:
    rcv, local = tb.receiver, tb.machines["local"]
    prior = KNOBS["sysctl"].read(local, rfs)
    tb.journal.set(local, KNOBS["sysctl"], rfs, "4096" if prior != "4096" else "8192")
    tb.journal.set(rcv.host, KNOBS["mtu"], rcv.iface, "9000")
    gro = KNOBS["offload.gro"].read(rcv.host, rcv.iface)
    tb.journal.set(rcv.host, KNOBS["offload.gro"], rcv.iface, "off" if gro == "on" else "on")
    state["restoring"] = True  # the block ends here: using() restores the journal
"""

STEPS = ("before-setting", "after-setting", "torn-line", "during-restore")


def test_sigkill_at_chosen_steps_then_restore(state_dir, summary_line):
    env = {**os.environ, "HOSTNET_STATE_DIR": str(state_dir)}
    name = f"jk{os.getpid() % 10000}"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                              timeout=120, cwd=REPO, env=env)
    assert cli("testbed", "up", "--name", name).returncode == 0
    restored = []
    try:
        tb = testbed.attach(name)
        rcv, local = tb.receiver, tb.machines["local"]

        def snapshot():
            return {"rfs": KNOBS["sysctl"].read(local, RFS), "mtu": KNOBS["mtu"].read(rcv.host, rcv.iface),
                    "gro": KNOBS["offload.gro"].read(rcv.host, rcv.iface)}
        for step in STEPS:
            before = snapshot()
            child = subprocess.Popen([sys.executable, "-c", CONTROLLER, name, step, RFS], cwd=REPO, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = child.stdout.readline().strip()
                assert line == "STEP", f"{step}: the controller ended before its step ({line!r}): " \
                                       f"{child.stderr.read() if child.poll() is not None else ''}"
                # While it lives: a second controller is refused, naming it, and a restore leaves it alone.
                second = cli("run", "single-flow", "--config", "all-opts", "--duration", "1", "--warmup", "0",
                             "--testbed", name, "--runs-dir", str(state_dir / "runs"), "--quiet")
                assert second.returncode != 0 and f"PID {child.pid}" in second.stderr, (step, second.stderr)
                assert "nothing to restore" in cli("restore").stdout, step
                assert (state_dir / f"{name}.journal").exists(), step
            finally:
                child.send_signal(signal.SIGKILL)
                child.wait()
            out = cli("restore")
            assert out.returncode == 0, f"{step}: {out.stdout} {out.stderr}"
            assert f"restored {name}" in out.stdout and "persistent testbed kept up" in out.stdout, step
            assert snapshot() == before, step
            assert not [p.name for p in state_dir.glob(f"{name}.journal*")], step  # journal and lock gone
            assert "nothing to restore" in cli("restore").stdout, step  # and a second restore has nothing left
            restored.append(step)
    finally:
        assert cli("testbed", "down", "--name", name).returncode == 0
    summary_line(f"journal fault injection: SIGKILL at {len(restored)}/{len(STEPS)} chosen steps "
                 f"({', '.join(restored)}) fully restored by `hostnet restore`")
