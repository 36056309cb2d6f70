"""LocalHost (hostnet.hosts.local): stream hands a command's stdout over in chunks while it runs."""
from pathlib import Path

import pytest

from conftest import gather
from hostnet.hosts import HostError, LocalHost
from hostnet.hosts import local as local_hosts


def collect(chunks):
    return b"".join(chunks)


def test_local_stream_hands_over_the_whole_output_in_chunks(monkeypatch):
    monkeypatch.setattr(local_hosts, "STREAM_CHUNK", 1000)
    sizes = []
    res, out = LocalHost().stream(["seq", "1", "20000"], lambda chunks: gather(chunks, sizes))
    assert out.decode().split() == [str(i) for i in range(1, 20001)]
    assert res.ok and res.stdout == "" and res.argv == ("seq", "1", "20000")
    assert len(sizes) > 50 and max(sizes) <= 1000


def test_local_stream_arguments_arrive_literally():
    hostile = ["a b", "it's", ";", "$(id)", "`id`", "*"]
    _, out = LocalHost().stream(["printf", "%s\\n", *hostile], collect)
    assert out.decode().splitlines() == hostile


def test_local_stream_exit_status_and_stderr():
    res, out = LocalHost().stream(["sh", "-c", "echo out; echo err >&2; exit 3"], collect, check=False)
    assert (res.returncode, res.stderr, out) == (3, "err\n", b"out\n")
    with pytest.raises(HostError, match="exited 3: err"):
        LocalHost().stream(["sh", "-c", "echo err >&2; exit 3"], collect)


def test_local_stream_missing_tool_and_timeout():
    with pytest.raises(HostError, match="not installed"):
        LocalHost().stream(["hostnet-no-such-tool"], collect)
    with pytest.raises(HostError, match="timed out after 0.3 s"):
        LocalHost().stream(["sleep", "30"], collect, timeout=0.3)


def test_local_stream_sink_that_stops_early_or_fails_ends_the_command():
    res, first = LocalHost().stream(["yes"], lambda chunks: next(iter(chunks))[:2], check=False)
    assert first == b"y\n" and not res.ok  # yes ends on SIGPIPE once nobody reads

    def bad(chunks):
        next(iter(chunks))
        raise ValueError("sink failed")
    with pytest.raises(ValueError, match="sink failed"):
        LocalHost().stream(["yes"], bad)


def test_netns_prefix_is_part_of_the_streamed_command():
    host = LocalHost("p", prefix=["env", "HOSTNET_TEST=1"])
    res, out = host.stream(["sh", "-c", 'echo "$HOSTNET_TEST"'], collect)
    assert out == b"1\n" and res.argv[:2] == ("env", "HOSTNET_TEST=1")


def test_local_children_never_see_the_sudo_password(monkeypatch):
    """HOSTNET_SUDO_PASSWORD is for SshHost's sudo; no process started here inherits it."""
    from hostnet.hosts import ProcessTag
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "s3cret")
    monkeypatch.setenv("HOSTNET_UNIT_MARK", "kept")
    show = ["sh", "-c", 'printf "%s %s" "${HOSTNET_SUDO_PASSWORD-unset}" "${HOSTNET_UNIT_MARK-unset}"']
    assert LocalHost().run(show).stdout == "unset kept"
    assert LocalHost().stream(show, collect)[1] == b"unset kept"
    for host in (LocalHost(), LocalHost(tag=ProcessTag("unit-test"))):
        proc = host.start(show)
        proc.wait(10)
        assert proc.stdout() == "unset kept"
        proc.close()
    assert "HOSTNET_SUDO_PASSWORD" not in ProcessTag("unit-test").env()


def test_temporary_files_live_in_the_private_scratch_dir_and_dead_sessions_ones_are_removed(state_dir):
    """#33: a killed local run left ~10 /tmp/hostnet-* entries (perf.data among them) no restore
    removed. Now they are 0600/0700 under <state dir>/scratch, named with the session's PID."""
    import os
    import signal
    import subprocess
    import sys

    from hostnet.hosts.base import make_temp_dir, remove_dead_scratch, scratch_dir
    host = LocalHost()
    proc = host.start(["sleep", "30"])
    made = make_temp_dir(host, "perf")
    try:
        scratch = scratch_dir()
        assert (scratch.stat().st_mode & 0o777) == 0o700 and Path(made).parent == scratch
        assert Path(made).name.startswith(f"hostnet-{os.getpid()}-perf-")
        mine = sorted(p.name for p in scratch.iterdir())
        assert len(mine) == 3 and all(n.startswith(f"hostnet-{os.getpid()}-") for n in mine)
        assert all((scratch / n).stat().st_mode & 0o077 == 0 for n in mine)
        # A session that is gone: its PID no longer runs.
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
        (scratch / f"hostnet-{dead}-perf-abc123").mkdir()
        (scratch / f"hostnet-{dead}-perf-abc123" / "perf.data").write_bytes(b"x" * 1000)
        (scratch / f"hostnet-{dead}-out-xyz").write_text("iperf3 output")
        assert remove_dead_scratch() == (2, 1013)
        assert sorted(p.name for p in scratch.iterdir()) == mine  # this live session's stay
    finally:
        # SIGTERM: a sleep started from a background job (CI, nohup) ignores SIGINT, and stop() would
        # wait out its 5 s grace before SIGKILL
        proc.stop(signal.SIGTERM)
        proc.close()
        subprocess.run(["rm", "-rf", made], check=True)
    assert not any(p.name.startswith(f"hostnet-{os.getpid()}-out") for p in scratch_dir().iterdir())


def test_a_shared_state_dir_is_refused_for_scratch_files_too(tmp_path, monkeypatch):
    from hostnet.hosts.base import scratch_dir
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)
    monkeypatch.setenv("HOSTNET_STATE_DIR", str(shared))
    with pytest.raises(HostError, match="writable by other users"):
        scratch_dir()
    assert (shared.stat().st_mode & 0o7777) == 0o1777
