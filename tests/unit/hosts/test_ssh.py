"""SshHost (hostnet.hosts.ssh) without a server: the command it builds (quoted argv, tool paths,
sudo), the channel stream() reads (a fake paramiko client), the sudo password sent only in answer
to the command's own prompt and never ahead of the input (a fake fabric connection playing sudo),
the session's interface read outside sudo, the password kept out of the proxy command's
environment. SshHost against a real sshd: tests/live/test_live_ssh.py."""
import json
import os
import shlex
import time

import pytest

from hostnet.hosts import HostError
from hostnet.hosts.ssh import SshHost, SshOptions
from hostnet.hosts.ssh_proxy import proxy_socket, proxy_tokens


def collect(chunks):
    return b"".join(chunks)


class FakeChannel:
    def __init__(self, data: bytes, rc: int):
        self.data, self.rc, self.closed, self.write_shut = data, rc, False, False
        self.err = b""  # stderr not yet read through recv_stderr (sudo's prompt and start marker)

    def recv(self, n):
        out, self.data = self.data[:n], self.data[n:]
        return out

    def recv_stderr(self, n):
        out, self.err = self.err[:n], self.err[n:]
        return out

    def recv_exit_status(self):
        return self.rc

    def shutdown_write(self):
        self.write_shut = True

    def close(self):
        self.closed = True


class FakeFile:
    def __init__(self, channel, data=b"", on_write=None):
        self.channel, self.data, self.written, self.on_write = channel, data, "", on_write

    def write(self, text):
        self.written += text
        if self.on_write:
            self.on_write(text)

    def flush(self):
        pass

    def read(self):
        return self.data


class FakeClient:
    """paramiko's client; with sudo_password set, the remote sudo prompts for it (on stderr)."""

    def __init__(self, out: bytes, err: bytes = b"", rc: int = 0, sudo_password: str | None = None):
        self.channel = FakeChannel(out, rc)
        self.err, self.commands, self.sudo_password = err, [], sudo_password

    def exec_command(self, command, timeout=None):
        self.commands.append((command, timeout))
        argv = shlex.split(command)
        on_write = None
        if argv[:2] == ["sudo", "-S"]:
            prompt, marker = argv[3], argv[8]
            if self.sudo_password is None:
                self.channel.err = marker.encode()
            else:
                self.channel.err = prompt.encode()

                def on_write(text):
                    ok = text == f"{self.sudo_password}\n"
                    self.channel.err += (marker if ok else f"Sorry, try again.\n{prompt}").encode()
        self.stdin = FakeFile(self.channel, on_write=on_write)
        return self.stdin, FakeFile(self.channel), FakeFile(self.channel, self.err)


def ssh_host(client, user="root", **options):
    host = SshHost("198.18.0.9", user=user, options=SshOptions(**options))
    host.connection = lambda: type("Conn", (), {"client": client})()
    return host


def test_ssh_stream_command_is_the_quoted_argv_and_streams_the_channel():
    client = FakeClient(b"x" * 300000 + b"\n", err=b"note\n")
    host = ssh_host(client, tool_paths={"perf": "/opt/perf"})
    res, out = host.stream(["perf", "script", "-F", "comm,sym", "-i", "/tmp/a b/perf.data"], collect, timeout=42)
    assert client.commands == [(shlex.join(["/opt/perf", "script", "-F", "comm,sym", "-i", "/tmp/a b/perf.data"]), 42)]
    assert out == b"x" * 300000 + b"\n" and res.ok and res.stderr == "note\n"
    assert client.channel.write_shut and client.stdin.written == ""


def test_ssh_stream_through_sudo_answers_only_its_prompt(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "pw")
    client = FakeClient(b"", err=b"boom\n", rc=2, sudo_password="pw")
    host = ssh_host(client, user="alice")
    with pytest.raises(HostError, match="exited 2: boom$"):  # sudo's prompt and marker are not the command's
        host.stream(["id"], collect)
    argv = shlex.split(client.commands[0][0])
    assert argv[:3] == ["sudo", "-S", "-p"] and argv[-1] == "id" and "hostnet sudo" in argv[3]
    assert client.stdin.written == "pw\n" and client.channel.write_shut
    assert os.environ["HOSTNET_SUDO_PASSWORD"] == "pw"
    quiet = FakeClient(b"uid=0\n")  # sudo does not prompt (NOPASSWD, or a cached ticket)
    res, out = ssh_host(quiet, user="alice").stream(["id"], collect)
    assert out == b"uid=0\n" and res.stderr == "" and quiet.stdin.written == ""
    wrong = FakeClient(b"", rc=1, sudo_password="other")
    with pytest.raises(HostError, match="did not accept the password"):
        ssh_host(wrong, user="alice").stream(["id"], collect)
    assert wrong.stdin.written == "pw\n"  # once: the second prompt is not answered


def test_ssh_stream_missing_tool():
    client = FakeClient(b"", err=b"sh: 1: nope: not found\n", rc=127)
    with pytest.raises(HostError, match="nope is not installed"):
        ssh_host(client).stream(["nope"], collect)


class FakeSudoConnection:
    """fabric's Connection.run on a server where the login is not root: it plays sudo's part
    (env reset, -n, -S with the prompt on stderr and a line of stdin read as the password) and
    invoke's (watchers see stderr; stdin is read while the program runs), and records what the
    command itself received on stdin and everything sent to the remote side."""

    def __init__(self, password: str | None = None):
        self.password = password  # None: sudo does not prompt
        self.sent, self.got, self.commands = [], [], []
        self.session = "198.18.5.1 40022 198.18.5.9 22"

    def _drain(self, in_stream):
        data = ""
        while (c := in_stream.read(1)) is not None and c != "":
            data += c
        return data, c

    def run(self, command, *, hide, warn, timeout, pty, in_stream, watchers=()):
        argv = shlex.split(command)
        self.commands.append(argv)
        env, stderr, first = {"SSH_CONNECTION": self.session}, "", len(self.sent)

        def show(text):
            nonlocal stderr
            stderr += text
            for w in watchers:
                self.sent += list(w.submit(stderr))
        if argv[0] == "sudo":
            env = {}  # env_reset: SSH_CONNECTION is gone under sudo
            if argv[1] == "-n":
                if self.password is not None:
                    return self.result(1, "", "sudo: a password is required\n")
                argv = argv[3:]
            else:
                prompt, inner = argv[3], argv[5:]
                assert in_stream.read(1) is None  # nothing offered before sudo is done
                if self.password is not None:
                    show(prompt)
                    typed = "".join(self.sent[first:])
                    if typed != f"{self.password}\n":
                        show(f"Sorry, try again.\n{prompt}")
                        data, end = self._drain(in_stream)
                        assert (data, end) == ("", "")  # stdin closed without the input
                        return self.result(1, "", stderr + "sudo: no password was provided\n")
                show(inner[3])  # the start marker, printed by the wrapper once sudo let it run
                argv = inner[4:]
        data, _ = self._drain(in_stream)
        self.got.append(data)
        if argv == ["sh", "-c", 'echo "$SSH_CONNECTION"']:
            return self.result(0, env.get("SSH_CONNECTION", "") + "\n", stderr)
        if argv == ["ip", "-j", "addr"]:
            return self.result(0, json.dumps([{"ifname": "lo", "addr_info": [{"local": "127.0.0.1"}]},
                                              {"ifname": "eno1", "addr_info": [{"local": "198.18.5.9"}]}]), stderr)
        return self.result(0, "", stderr + "note\n")

    @staticmethod
    def result(rc, out, err):
        return type("R", (), {"exited": rc, "stdout": out, "stderr": err})()


def sudo_host(conn, **options):
    host = SshHost("198.18.5.9", user="alice", options=SshOptions(**options))
    host.connection = lambda: conn
    return host


RULES = "table inet hostnet_loss {\n}\n"


def test_sudo_that_does_not_prompt_gets_no_password(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "pw")
    conn = FakeSudoConnection(password=None)
    res = sudo_host(conn).run(["nft", "-f", "-"], input=RULES)
    assert conn.got == [RULES] and not any("pw" in s for s in conn.sent)
    assert res.stderr == "note\n"  # the start marker is not the command's output


def test_sudo_prompt_is_answered_once_and_the_input_follows(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "pw")
    conn = FakeSudoConnection(password="pw")
    host = sudo_host(conn)
    res = host.run(["nft", "-f", "-"], input=RULES)
    assert conn.sent == ["pw\n"] and conn.got == [RULES] and res.stderr == "note\n"
    host.run(["true"])
    assert conn.sent == ["pw\n", "pw\n"]
    prompts = [c[3] for c in conn.commands]
    assert len(set(prompts)) == 2 and all(p.startswith("[hostnet sudo ") for p in prompts)  # one per command


def test_sudo_refusing_the_password_is_an_error_and_the_input_is_never_sent(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "wrong")
    conn = FakeSudoConnection(password="pw")
    with pytest.raises(HostError, match="did not accept the password in HOSTNET_SUDO_PASSWORD"):
        sudo_host(conn).run(["nft", "-f", "-"], input=RULES, check=False)
    assert conn.sent == ["wrong\n"] and conn.got == []


def test_sudo_without_a_password_never_prompts(monkeypatch):
    monkeypatch.delenv("HOSTNET_SUDO_PASSWORD", raising=False)
    conn = FakeSudoConnection(password=None)
    sudo_host(conn).run(["nft", "-f", "-"], input=RULES)
    assert conn.commands[0][:3] == ["sudo", "-n", "--"] and conn.got == [RULES]
    with pytest.raises(HostError, match="sudo needs a password for alice"):
        sudo_host(FakeSudoConnection(password="pw")).run(["true"], check=False)


def test_session_interface_of_a_sudo_login_is_read_outside_sudo(monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "pw")
    conn = FakeSudoConnection(password="pw")
    host = sudo_host(conn)
    assert host.connection_interfaces() == ["eno1"]
    assert all(c[0] != "sudo" for c in conn.commands) and conn.sent == []
    conn.session = ""
    with pytest.raises(HostError, match="SSH_CONNECTION is empty"):
        host.connection_interfaces()
    conn.session = "198.18.5.1 40022 198.18.7.7 22"
    with pytest.raises(HostError, match="no interface holds 198.18.7.7"):
        host.connection_interfaces()


def keepalive(transport, interval):
    transport.keepalive_s = interval


def test_proxy_command_runs_without_the_sudo_password(monkeypatch):
    """The proxy command is a local child (the socket connection() builds); read what it printed."""
    import fabric
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "s3cret")
    built = {}

    class Conn:
        def __init__(self, *a, connect_kwargs=None, **kw):
            built["sock"] = connect_kwargs["sock"]
            self.client = type("C", (), {"set_missing_host_key_policy": lambda s, p: None,
                                         "load_host_keys": lambda s, f: None})()
            self.transport = type("T", (), {"channel_timeout": 3600, "sock": None, "set_keepalive": keepalive})()

        def open(self):
            pass
    monkeypatch.setattr(fabric, "Connection", Conn)
    SshHost("198.18.0.9", proxy_command="sh -c 'printf %s ${HOSTNET_SUDO_PASSWORD-unset}'").connection()
    proxy = built["sock"]
    try:
        assert proxy.recv(100) == b"unset"
    finally:
        proxy.close()


def test_a_proxy_command_that_ended_reads_as_a_closed_socket_at_once():
    """paramiko's own ProxyCommand spun a CPU for good once the command exited (select says readable,
    read says b"" for ever) and never told the transport: `hostnet run` hung at 98 % CPU when the
    receiver's sshd was killed (issue 45). Ours returns what it has, then b"" (a socket's EOF)."""
    proxy = proxy_socket("printf abc")
    proxy.settimeout(5)
    try:
        started = time.monotonic()
        assert proxy.recv(10) == b"abc"
        assert proxy.recv(10) == b""
        assert time.monotonic() - started < 2
    finally:
        proxy.close()
    assert proxy.process.returncode is not None and proxy.process.stdout.closed  # reaped, pipes closed


def test_a_quiet_proxy_command_times_out_like_a_socket_and_close_ends_it():
    import socket
    proxy = proxy_socket("sleep 30")
    proxy.settimeout(0.1)
    try:
        with pytest.raises(socket.timeout):  # the transport's idle tick, not a failure
            proxy.recv(10)
    finally:
        proxy.close()
    assert proxy.process.returncode is not None


def test_proxy_command_tokens_are_filled_in_with_the_hosts_own_port():
    """fabric reads a gateway string as a config without our Port (its %p is always 22): an sshd on
    another port behind `nc %h %p` was never reached (found by the live non-root sudo test, port 2222)."""
    h = SshHost("198.18.0.2", user="lab", port=2222, proxy_command="ip netns exec hostnet-x nc %h %p")
    assert proxy_tokens(h.proxy_command, h) == "ip netns exec hostnet-x nc 198.18.0.2 2222"
    assert proxy_tokens("ssh -W %h:%p %r@bastion 100%%", h) == "ssh -W 198.18.0.2:2222 lab@bastion 100%"
    assert proxy_tokens("printf %s", h) == "printf %s"  # not an ssh_config token: left alone


FAKE_SUDO = r"""#!/bin/sh
# sudo's part as SshHost uses it: -n -- CMD, or -S -p PROMPT -- CMD (prompt on stderr, password from stdin)
if [ "$1" = "-n" ]; then shift 2; exec "$@"; fi
prompt=$3; shift 4
if [ -n "$FAKE_SUDO_PASSWORD" ]; then
  printf %s "$prompt" >&2
  IFS= read -r typed || { echo "sudo: no password was provided" >&2; exit 1; }
  if [ "$typed" != "$FAKE_SUDO_PASSWORD" ]; then
    printf 'Sorry, try again.\n%s' "$prompt" >&2
    IFS= read -r typed || { echo "sudo: 1 incorrect password attempt" >&2; exit 1; }
    exit 1
  fi
fi
exec "$@"
"""


class InvokeConnection:
    """Connection.run through invoke's own local runner (its threads, watchers and stdin
    handling), with a shell script in place of sudo."""

    def __init__(self, fake_sudo, password):
        self.fake_sudo, self.password = str(fake_sudo), password

    def run(self, command, **kw):
        import invoke
        if command.startswith("sudo "):
            command = shlex.quote(self.fake_sudo) + command[len("sudo"):]
        return invoke.Context().run(command, env={"FAKE_SUDO_PASSWORD": self.password or ""}, **kw)


@pytest.mark.parametrize("remote_password,ours,ok", [(None, "pw", True), ("pw", "pw", True), ("pw", "bad", False)])
def test_sudo_exchange_through_invokes_runner(tmp_path, monkeypatch, remote_password, ours, ok):
    fake_sudo = tmp_path / "sudo"
    fake_sudo.write_text(FAKE_SUDO)
    fake_sudo.chmod(0o755)
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", ours)
    host = sudo_host(InvokeConnection(fake_sudo, remote_password), command_timeout=20)
    got = tmp_path / "stdin"
    argv = ["sh", "-c", 'cat > "$1"; echo done; echo note >&2', "sh", str(got)]
    if not ok:
        with pytest.raises(HostError, match="did not accept the password"):
            host.run(argv, input=RULES)
        assert not got.exists()
        return
    res = host.run(argv, input=RULES)
    assert got.read_text() == RULES and (res.stdout, res.stderr) == ("done\n", "note\n")


class FakeFabric:
    """fabric.Connection without a network: records each hop's host-key policy, known_hosts, the
    socket it connects over, and the direct-tcpip channels its transport opens."""

    def __init__(self, refuse_channel=None, unknown_key=()):
        self.made, self.refuse_channel, self.unknown_key = [], refuse_channel, set(unknown_key)
        fabric = self

        class Channel:
            def __init__(self, dest):
                self.dest, self.closed = dest, False

            def close(self):
                self.closed = True

        class Transport:
            sock = None

            def __init__(self):
                self.opened = []

            def set_keepalive(self, interval):
                self.keepalive_s = interval

            def open_channel(self, kind, dest, src, timeout=None):
                if fabric.refuse_channel:
                    raise fabric.refuse_channel
                self.opened.append((kind, dest, src, timeout))
                return Channel(dest)

        class Client:
            def __init__(self):
                self.policy, self.known = None, None

            def set_missing_host_key_policy(self, policy):
                self.policy = policy

            def load_host_keys(self, path):
                self.known = path

        class Connection:
            def __init__(self, host, user, port, connect_timeout, connect_kwargs, config, gateway=None):
                self.host, self.port, self.kwargs, self.gateway = host, port, connect_kwargs, gateway
                self.client, self.transport, self.is_connected = Client(), Transport(), False
                fabric.made.append(self)

            def open(self):
                import paramiko
                if self.host in fabric.unknown_key:
                    raise paramiko.SSHException(f"Server {self.host!r} not found in known_hosts")
                self.is_connected = True

            def close(self):
                self.is_connected = False

        self.Connection = Connection


def jumped(monkeypatch, tmp_path, **fake):
    import fabric
    fake_fabric = FakeFabric(**fake)
    monkeypatch.setattr(fabric, "Connection", fake_fabric.Connection)
    known = tmp_path / "known_hosts"
    known.write_text("")
    bastion = SshHost("gw.example.org", user="bob", name="bastion", options=SshOptions(known_hosts=str(known)))
    hosts = [SshHost(f"10.1.0.{i}", port=2222, name=f"srv{i}", proxy_jump=bastion,
                     options=SshOptions(known_hosts=str(known), connect_timeout=7)) for i in (1, 2)]
    return fake_fabric, bastion, hosts


def test_a_jump_host_is_opened_once_and_both_hops_reject_unknown_keys(monkeypatch, tmp_path):
    import paramiko
    fake, bastion, (one, two) = jumped(monkeypatch, tmp_path)
    one.connection()
    two.connection()
    gw, c1, c2 = fake.made  # the bastion first, once for both hosts behind it
    assert gw.host == "gw.example.org" and gw.gateway is None
    assert [(c.host, c.port) for c in (c1, c2)] == [("10.1.0.1", 2222), ("10.1.0.2", 2222)]
    assert gw.transport.opened == [("direct-tcpip", ("10.1.0.1", 2222), ("", 0), 7),
                                   ("direct-tcpip", ("10.1.0.2", 2222), ("", 0), 7)]
    assert c1.kwargs["sock"].dest == ("10.1.0.1", 2222) and c1.gateway is None
    for c in (gw, c1, c2):
        assert isinstance(c.client.policy, paramiko.RejectPolicy) and c.client.known == str(tmp_path / "known_hosts")
    one.close()
    assert bastion.connection() is gw  # closing a host behind it leaves the shared jump connection open


def test_a_target_the_jump_host_cannot_reach_is_unreachable(monkeypatch, tmp_path):
    import paramiko
    from hostnet.hosts import HostUnreachable
    _, _, (one, _) = jumped(monkeypatch, tmp_path, refuse_channel=paramiko.ChannelException(2, "Connect failed"))
    with pytest.raises(HostUnreachable, match=r"srv1: bastion could not reach 10.1.0.1:2222 \(.*Connect failed"):
        one.connection()


def test_an_unknown_jump_host_key_is_refused_naming_both_hops(monkeypatch, tmp_path):
    fake, _, (one, _) = jumped(monkeypatch, tmp_path, unknown_key={"gw.example.org"})
    with pytest.raises(HostError, match="srv1: through its jump host: bastion: host key unknown"):
        one.connection()
    assert [c.host for c in fake.made] == ["gw.example.org"]  # never got as far as the target


def test_an_unknown_target_key_behind_the_jump_closes_the_channel(monkeypatch, tmp_path):
    fake, _, (one, _) = jumped(monkeypatch, tmp_path, unknown_key={"10.1.0.1"})
    with pytest.raises(HostError, match="srv1: host key unknown"):
        one.connection()
    assert fake.made[1].kwargs["sock"].closed


def test_a_proxy_command_and_a_jump_host_are_exclusive():
    with pytest.raises(HostError, match="not both"):
        SshHost("10.1.0.1", proxy_command="nc %h %p", proxy_jump=SshHost("gw"))


def test_a_host_that_could_not_be_reached_is_not_tried_again_within_its_connect_timeout(monkeypatch):
    """A failed point's cleanup stops each of its processes on the lost host: each call used to wait
    out its own connection attempt. Within connect_timeout of a failed attempt calls fail at once."""
    from conftest import FakeRemote
    from hostnet.hosts import HostUnreachable
    remote = FakeRemote()
    remote.install(monkeypatch)
    remote.up = False  # down for good
    host = SshHost("198.18.0.9", name="lab", options=SshOptions(insecure_accept_unknown_keys=True,
                                                                 connect_timeout=0.3))
    for _ in range(5):
        with pytest.raises(HostUnreachable, match="lab: unreachable"):
            host.run(["true"])
    assert remote.refused == 1
    time.sleep(0.35)
    with pytest.raises(HostUnreachable):
        host.run(["true"])
    assert remote.refused == 2  # tried again once its timeout passed
    remote.up, remote.down_for = True, 0
    time.sleep(0.35)
    assert host.run(["true"]).ok  # and answers when it is back


def fake_connection(monkeypatch, *, on_open=None, on_run=None):
    import fabric

    class Conn:
        def __init__(self, *a, **kw):
            self.client = type("C", (), {"set_missing_host_key_policy": lambda s, p: None,
                                         "load_host_keys": lambda s, f: None})()
            self.transport = type("T", (), {"channel_timeout": 3600, "sock": None, "set_keepalive": keepalive})()
            self.is_connected = False

        def open(self):
            if on_open:
                on_open()
            self.is_connected = True

        def run(self, command, **kw):
            return on_run(self)

        def close(self):
            self.is_connected = False
    monkeypatch.setattr(fabric, "Connection", Conn)


def test_a_connection_that_meets_no_ssh_server_is_unreachable_and_channels_wait_no_hour(monkeypatch):
    """A proxy command whose nc found nothing listening ends before the banner: unreachable (as a
    refused TCP connection is), not an SSH failure; an open connection's channels wait connect_timeout."""
    import paramiko
    from hostnet.hosts import HostUnreachable

    def no_banner():
        raise paramiko.SSHException("Error reading SSH protocol banner")
    fake_connection(monkeypatch, on_open=no_banner)
    with pytest.raises(HostUnreachable, match="lab: unreachable .no SSH server answered"):
        SshHost("198.18.0.9", name="lab").run(["true"])
    fake_connection(monkeypatch)
    host = SshHost("198.18.0.9", name="lab", options=SshOptions(connect_timeout=7))
    assert host.connection().transport.channel_timeout == 7


def test_an_idle_link_says_something_so_a_dead_one_shows(monkeypatch):
    """An endpoint's sshd killed under the namespace proxy left nc.openbsd holding a half-closed socket
    (CLOSE-WAIT): no EOF reached paramiko, and a command waiting for output waited out its whole
    timeout. A keepalive's write gets the reset that ends nc; a TCP socket gives up on data
    unacknowledged for LINK_DEAD_S."""
    import socket

    from hostnet.hosts.ssh import KEEPALIVE_S, LINK_DEAD_S
    fake_connection(monkeypatch)
    transport = SshHost("198.18.0.9", name="lab").connection().transport
    assert transport.keepalive_s == KEEPALIVE_S
    tcp = socket.socket()
    try:
        transport.sock = tcp
        SshHost("198.18.0.9", name="lab")._watch_link(transport)
        assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == LINK_DEAD_S * 1000
    finally:
        tcp.close()


def test_a_command_whose_channel_closed_with_the_link_is_unreachable_not_exit_status_minus_1(monkeypatch):
    """A channel that closes with its transport gives no exit status: paramiko says -1. That is the
    link lost, not the command's answer."""
    from types import SimpleNamespace

    from hostnet.hosts import HostUnreachable

    def link_gone(conn):
        conn.is_connected = False
        return SimpleNamespace(exited=-1, stdout="", stderr="")
    fake_connection(monkeypatch, on_run=link_gone)
    with pytest.raises(HostUnreachable, match="lab: SSH link lost during ethtool"):
        SshHost("198.18.0.9", name="lab").run(["ethtool", "-k", "eth1"], check=False)
