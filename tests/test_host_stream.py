"""Host.stream: a command's stdout consumed in chunks while it runs (LocalHost, the default
implementation through run(), and SshHost's command building)."""
import os
import shlex

import pytest

from conftest import FakeHost, gather
from hostnet import hosts
from hostnet.hosts import HostError, LocalHost
from hostnet.ssh import SshHost


def collect(chunks):
    return b"".join(chunks)


def test_local_stream_hands_over_the_whole_output_in_chunks(monkeypatch):
    monkeypatch.setattr(hosts, "STREAM_CHUNK", 1000)
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


def test_default_stream_goes_through_run():
    host = FakeHost(handlers={"perf": lambda argv, h: (0, "line\n", "warn\n")})
    res, out = host.stream(["perf", "script"], collect, check=False)
    assert (out, res.stdout, res.stderr, host.commands) == (b"line\n", "", "warn\n", [["perf", "script"]])


class FakeChannel:
    def __init__(self, data: bytes, rc: int):
        self.data, self.rc, self.closed, self.write_shut = data, rc, False, False

    def recv(self, n):
        out, self.data = self.data[:n], self.data[n:]
        return out

    def recv_exit_status(self):
        return self.rc

    def shutdown_write(self):
        self.write_shut = True

    def close(self):
        self.closed = True


class FakeFile:
    def __init__(self, channel, data=b""):
        self.channel, self.data, self.written = channel, data, ""

    def write(self, text):
        self.written += text

    def read(self):
        return self.data


class FakeClient:
    def __init__(self, out: bytes, err: bytes = b"", rc: int = 0):
        self.channel = FakeChannel(out, rc)
        self.err, self.commands = err, []

    def exec_command(self, command, timeout=None):
        self.commands.append((command, timeout))
        self.stdin = FakeFile(self.channel)
        return self.stdin, FakeFile(self.channel), FakeFile(self.channel, self.err)


def ssh_host(client, **kw):
    host = SshHost("198.18.0.9", **kw)
    host._connection = lambda: type("Conn", (), {"client": client})()
    return host


def test_ssh_stream_command_is_the_quoted_argv_and_streams_the_channel():
    client = FakeClient(b"x" * 300000 + b"\n", err=b"note\n")
    host = ssh_host(client, tool_paths={"perf": "/opt/perf"})
    res, out = host.stream(["perf", "script", "-F", "comm,sym", "-i", "/tmp/a b/perf.data"], collect, timeout=42)
    assert client.commands == [(shlex.join(["/opt/perf", "script", "-F", "comm,sym", "-i", "/tmp/a b/perf.data"]), 42)]
    assert out == b"x" * 300000 + b"\n" and res.ok and res.stderr == "note\n"
    assert client.channel.write_shut and client.stdin.written == ""


def test_ssh_stream_through_sudo_sends_the_password_on_stdin(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "pw")
    client = FakeClient(b"", err=b"boom\n", rc=2)
    host = ssh_host(client, user="alice")
    with pytest.raises(HostError, match="exited 2: boom"):
        host.stream(["id"], collect)
    assert client.commands[0][0] == "sudo -S -p '' -- id" and client.stdin.written == "pw\n"
    assert os.environ["HOSTNET_SUDO_PASSWORD"] == "pw"


def test_ssh_stream_missing_tool():
    client = FakeClient(b"", err=b"sh: 1: nope: not found\n", rc=127)
    with pytest.raises(HostError, match="nope is not installed"):
        ssh_host(client).stream(["nope"], collect)
