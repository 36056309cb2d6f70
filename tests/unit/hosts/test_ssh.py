"""SshHost.stream (hostnet.hosts.ssh) without a server: the command it builds (quoted argv, tool
paths, sudo with the password on stdin) and the channel it reads, through a fake paramiko client.
SshHost against a real sshd: tests/live/test_live_ssh.py."""
import os
import shlex

import pytest

from hostnet.hosts import HostError
from hostnet.hosts.ssh import SshHost


def collect(chunks):
    return b"".join(chunks)


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
    host.connection = lambda: type("Conn", (), {"client": client})()
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
