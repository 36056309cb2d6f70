"""SshHost: a remote machine behind the Host seam, through fabric (paramiko) over SSH.

Host keys are checked against a known_hosts file and an unknown key is refused (fabric itself
would auto-add it); `insecure_accept_unknown_keys` exists for throwaway labs. Commands are argv
lists joined with shlex.join; a non-root login runs them through sudo. The password (if any) comes
from HOSTNET_SUDO_PASSWORD, is never logged, written to a manifest or put in a child's environment,
and is sent only in answer to a prompt unique to the command, as fabric's own sudo watcher does;
the command's input follows only once sudo has started it. Without a password sudo runs with -n
(never prompts) and a login that needs one is a clear HostError. The sudo exchange is ssh_sudo.py's,
a ProxyCommand's socket ssh_proxy.py's.
"""
from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import fabric  # fabric.Connection as an attribute: the tests stand a fake in for it
import paramiko
from invoke.exceptions import CommandTimedOut, ThreadException

from .base import (STREAM_CHUNK, SUDO_PASSWORD_VAR, Host, HostError, HostUnreachable, ProcessTag, Result, check_argv,
                   remote_temp_prefix)
from .ssh_proxy import proxy_socket, proxy_tokens
from .ssh_sudo import CommandStdin, SudoExchange, SudoWatcher, answer_sudo

DEFAULT_CONNECT_TIMEOUT_S = 10
DEFAULT_COMMAND_TIMEOUT_S = 120
KEEPALIVE_S = 5  # an idle connection says something this often, so a dead link shows (_watch_link)
LINK_DEAD_S = 30  # data a server has not acknowledged for this long: the link is gone
# Background start: detach into its own session, remember the PID, send output to files.
# The script is constant; the command arrives as separate, quoted arguments.
# umask 077: the output files (and whatever the command writes) are the login user's alone.
_START = 'umask 077; base=$1; shift; setsid "$@" >"$base.out" 2>"$base.err" </dev/null & echo $!'
# Many background starts in one round trip (bash: arrays, and $EPOCHREALTIME without a fork):
# groups "base argv..." separated by $1, a token no argument contains; prints "PID start-time" each.
_START_MANY = ('umask 077; sep=$1; shift; while [ $# -gt 0 ]; do base=$1; shift; cmd=(); '
               'while [ $# -gt 0 ] && [ "$1" != "$sep" ]; do cmd+=("$1"); shift; done; [ $# -gt 0 ] && shift; '
               'setsid "${cmd[@]}" >"$base.out" 2>"$base.err" </dev/null & echo "$! $EPOCHREALTIME"; done')
# Running = exists and is not a zombie (an orphan waits for init to reap it).
_RUNNING = 'test -d "/proc/$1" && ! grep -q "^State:[[:space:]]*Z" "/proc/$1/status"'


class RemoteProc:
    """A background command on an SshHost, tracked by its remote PID (= its process group)."""

    def __init__(self, host: "SshHost", argv: list[str], pid: int, base: str):
        self.host, self.argv, self.pid, self._base = host, argv, pid, base
        self._rc: int | None = None

    def poll(self) -> int | None:
        if self._rc is None:
            alive = self.host.run(["sh", "-c", _RUNNING, "sh", str(self.pid)], check=False).returncode == 0
            if not alive:
                self._rc = 0  # the exit status of a detached process is not kept; output tells
        return self._rc

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise HostError(f"{self.host.name}: {self.argv[0]} did not finish within {timeout} s")
            time.sleep(0.2)
        return self._rc

    def stop(self, sig: int = signal.SIGINT, grace: float = 5.0) -> int:
        if self.poll() is None:
            for s, t in ((sig, grace), (signal.SIGKILL, 5.0)):
                self.host.run(["kill", f"-{int(s)}", "--", f"-{self.pid}"], check=False)
                try:
                    return self.wait(t)
                except HostError:
                    continue
        return self.wait(5)

    def stdout(self) -> str:
        return self.host.run(["cat", f"{self._base}.out"], check=False).stdout

    def stderr(self) -> str:
        return self.host.run(["cat", f"{self._base}.err"], check=False).stdout

    def close(self) -> None:
        self.stop()
        self.host.run(["rm", "-f", f"{self._base}.out", f"{self._base}.err"], check=False)


@dataclass(frozen=True)
class SshOptions:
    """How hostnet talks to a host beyond where it is: the key and host-key policy, time limits,
    the process tag, the management interfaces it must not touch, sudo, tools off the PATH, and
    whether the guard on the connection's own interface applies (not in hostnet's own namespaces)."""
    key_filename: str | list[str] | None = None
    known_hosts: str | None = None  # None: ~/.ssh/known_hosts
    insecure_accept_unknown_keys: bool = False
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S
    tag: ProcessTag | None = None
    management_interfaces: Sequence[str] = ()
    sudo: bool | None = None  # None: when the user is not root
    tool_paths: dict[str, str] | None = None
    guard_connection_interface: bool = True


class SshHost(Host):
    def __init__(self, address: str, *, user: str = "root", port: int = 22, name: str | None = None,
                 proxy_command: str | None = None, proxy_jump: "SshHost | None" = None,
                 options: SshOptions = SshOptions()):
        self.address, self.user, self.port = address, user, int(port)
        self.name = name or f"{user}@{address}"
        self.key_filename = options.key_filename
        self.known_hosts = options.known_hosts or str(Path.home() / ".ssh" / "known_hosts")
        self.insecure = options.insecure_accept_unknown_keys
        if proxy_command and proxy_jump:
            raise HostError(f"{self.name}: a proxy command or a jump host, not both (as in ssh_config)")
        self.proxy_command = proxy_command
        self.proxy_jump = proxy_jump  # an SshHost to tunnel through (ProxyJump), shared by the hosts behind it
        self.connect_timeout, self.command_timeout = options.connect_timeout, options.command_timeout
        self.tag = options.tag
        self.management_interfaces = list(options.management_interfaces)
        self.sudo = (user != "root") if options.sudo is None else options.sudo
        self.tool_paths = dict(options.tool_paths or {})
        self.guard_connection_interface = options.guard_connection_interface
        self._conn = None
        self._lost: tuple[float, str] | None = None  # when and why the last connection attempt failed
        self._opening = threading.Lock()  # hosts behind one jump host may open it at the same time

    # -- connection -------------------------------------------------------------------------
    def connection(self):
        """The fabric Connection, opened on first use (and again if it dropped), strict about host keys
        (also through a jump host, whose own connection is as strict). A host that could not be
        reached is not tried again for connect_timeout seconds: the calls meanwhile (a failed point's
        cleanup stopping each of its processes) fail at once instead of each waiting out a timeout."""
        with self._opening:
            if self._conn is None or not self._conn.is_connected:
                if self._lost is not None and time.monotonic() - self._lost[0] < self.connect_timeout:
                    raise HostUnreachable(self._lost[1])
                try:
                    self._conn = self._open()
                except HostUnreachable as exc:
                    self._lost = (time.monotonic(), str(exc))
                    raise
                self._lost = None
            return self._conn

    def _through_jump(self):
        """A direct-tcpip channel from the jump host to this host's SSH port: the socket paramiko
        connects over (fabric's own gateway would open it without a timeout)."""
        jump = self.proxy_jump
        try:
            transport = jump.connection().transport
            return transport.open_channel("direct-tcpip", (self.address, self.port), ("", 0),
                                          timeout=self.connect_timeout)
        except HostUnreachable as exc:
            raise HostUnreachable(f"{self.name}: its jump host is unreachable ({exc})") from exc
        except HostError as exc:
            raise HostError(f"{self.name}: through its jump host: {exc}") from exc
        except (paramiko.SSHException, EOFError, OSError) as exc:  # ChannelException: refused, no route
            raise HostUnreachable(f"{self.name}: {jump.name} could not reach {self.address}:{self.port} "
                                  f"({exc or type(exc).__name__})") from exc

    def _open(self):
        _quiet_paramiko()

        kwargs = {"look_for_keys": self.key_filename is None, "allow_agent": self.key_filename is None,
                  "banner_timeout": self.connect_timeout, "auth_timeout": self.connect_timeout}
        if self.key_filename:
            kwargs["key_filename"] = self.key_filename
        if self.proxy_jump is not None:
            kwargs["sock"] = self._through_jump()
        elif self.proxy_command:
            # the proxy command runs here as a child of ours: without the sudo password in its environment
            kwargs["sock"] = proxy_socket(f"env -u {SUDO_PASSWORD_VAR} {proxy_tokens(self.proxy_command, self)}")
        conn = fabric.Connection(self.address, user=self.user, port=self.port, connect_timeout=self.connect_timeout,
                                 connect_kwargs=kwargs, config=fabric.Config(overrides={"load_ssh_configs": False}))
        # fabric installs AutoAddPolicy; a measurement tool must not trust a host it has never seen.
        if self.insecure:
            conn.client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        else:
            conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
            if os.path.exists(self.known_hosts):
                conn.client.load_host_keys(self.known_hosts)
        try:
            try:
                conn.open()
            except BaseException:
                if kwargs.get("sock") is not None:  # the jump host's channel for this attempt
                    kwargs["sock"].close()
                raise
        except paramiko.SSHException as exc:
            if "not found in known_hosts" in str(exc):
                raise HostError(f"{self.name}: host key unknown (not in {self.known_hosts}); add it with "
                                f"ssh-keyscan, or opt out for a throwaway lab") from exc
            if _silent(exc):
                raise HostUnreachable(f"{self.name}: unreachable (no SSH server answered: {exc})") from exc
            raise HostError(f"{self.name}: SSH failed: {exc}") from exc
        except (socket.timeout, TimeoutError) as exc:
            raise HostUnreachable(f"{self.name}: unreachable (no answer within {self.connect_timeout} s)") from exc
        except OSError as exc:
            raise HostUnreachable(f"{self.name}: unreachable ({exc.strerror or exc})") from exc
        self._watch_link(conn.transport)
        return conn

    def _watch_link(self, transport) -> None:
        """A link that dies without a word must end what waits on it: paramiko waits an hour for a
        channel to open, and a command waiting for output sends nothing, so nothing notices. An
        endpoint's sshd killed under the namespace proxy leaves nc holding a half-closed socket:
        only a write gets the reset that ends it, so the transport sends a keepalive when idle; a
        TCP socket also gives up on data unacknowledged for LINK_DEAD_S (a server that vanished)."""
        transport.channel_timeout = self.connect_timeout
        transport.set_keepalive(KEEPALIVE_S)
        if isinstance(transport.sock, socket.socket):
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(LINK_DEAD_S * 1000))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _wrap(self, argv: Sequence[str], privileged: bool = True) -> tuple[str, SudoExchange | None]:
        argv = check_argv(argv)
        if argv[0] in self.tool_paths:  # testbed.yaml may say where a tool lives on this host
            argv = [self.tool_paths[argv[0]], *argv[1:]]
        if not (self.sudo and privileged):
            return shlex.join(argv), None
        password = os.environ.get(SUDO_PASSWORD_VAR)
        if not password:  # -n: a login that needs a password fails at once instead of eating stdin
            return shlex.join(["sudo", "-n", "--", *argv]), None
        sudo = SudoExchange(password)
        return sudo.command(argv), sudo

    def _sudo_failed(self, sudo: SudoExchange | None, rc: int, stderr: str) -> None:
        if sudo is not None and sudo.refused:
            raise HostError(f"{self.name}: sudo did not accept the password in {SUDO_PASSWORD_VAR}")
        if sudo is None and self.sudo and rc == 1 and "sudo: a password is required" in stderr:
            raise HostError(f"{self.name}: sudo needs a password for {self.user}: set {SUDO_PASSWORD_VAR} "
                            f"(or allow the commands without one)")

    # -- the Host seam ------------------------------------------------------------------------
    def run(self, argv, *, check=True, timeout=None, input=None) -> Result:
        return self._run(argv, check=check, timeout=timeout, input=input)

    def _run(self, argv, *, check=True, timeout=None, input=None, privileged=True) -> Result:
        command, sudo = self._wrap(argv, privileged)
        timeout = timeout or self.command_timeout
        conn = self.connection()
        try:
            res = conn.run(command, hide=True, warn=True, timeout=timeout, pty=False,
                           in_stream=CommandStdin(input, sudo), watchers=[SudoWatcher(sudo)] if sudo else [])
        except CommandTimedOut as exc:
            raise HostError(f"{self.name}: {' '.join(check_argv(argv))} timed out after {timeout} s") from exc
        except (paramiko.SSHException, EOFError, OSError, ThreadException) as exc:
            # the link dropped under the command: the next call reconnects (or says unreachable)
            self.close()
            raise HostUnreachable(f"{self.name}: SSH link lost during {argv[0]}: {exc or type(exc).__name__}") from exc
        if res.exited == -1 and not conn.is_connected:  # the channel closed with the link, no exit status
            self.close()
            raise HostUnreachable(f"{self.name}: SSH link lost during {argv[0]}")
        stderr = sudo.stderr(res.stderr) if sudo else res.stderr
        self._sudo_failed(sudo, res.exited, stderr)
        out = Result(tuple(check_argv(argv)), res.exited, res.stdout, stderr)
        if out.returncode == 127 and "not found" in stderr:
            raise HostError(f"{self.name}: {argv[0]} is not installed")
        return out.checked(self.name) if check else out

    def stream(self, argv, sink, *, check=True, timeout=None):
        """The command's stdout arrives in chunks over the SSH channel while it runs (nothing
        held whole on either side); stderr is kept for the Result."""
        command, sudo = self._wrap(argv)
        timeout = timeout or self.command_timeout
        client = self.connection().client
        try:
            stdin, stdout, stderr = client.exec_command(command, timeout=timeout)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self.close()
            raise HostUnreachable(f"{self.name}: SSH link lost before {argv[0]}: {exc or type(exc).__name__}") from exc
        channel = stdout.channel
        before = ""
        try:
            if sudo:
                before = answer_sudo(channel, stdin, sudo)
            stdin.channel.shutdown_write()
            value = sink(_channel_chunks(channel))
            while channel.recv(1 << 16):  # a sink that stopped early: drain to the exit status
                pass
        except socket.timeout as exc:
            channel.close()
            raise HostError(f"{self.name}: {' '.join(check_argv(argv))} timed out after {timeout} s") from exc
        except BaseException:
            channel.close()
            raise
        rc = channel.recv_exit_status()
        err = before + stderr.read().decode(errors="replace")
        if sudo:
            err = sudo.stderr(err)
        self._sudo_failed(sudo, rc, err)
        if rc == 127 and "not found" in err:
            raise HostError(f"{self.name}: {argv[0]} is not installed")
        res = Result(tuple(check_argv(argv)), rc, "", err)
        return (res.checked(self.name) if check else res), value

    def start(self, argv) -> RemoteProc:
        argv = check_argv(argv)
        base = f"/tmp/{remote_temp_prefix(self, 'out')}{uuid.uuid4().hex[:12]}"
        full = ["sh", "-c", _START, "sh", base, *(["env", f"{ProcessTag.VAR}={self.tag.tag}"] if self.tag else []),
                *argv]
        pid = self.run(full).stdout.strip().splitlines()[-1]
        if not pid.isdigit():
            raise HostError(f"{self.name}: could not start {argv[0]}")
        return RemoteProc(self, argv, int(pid), base)

    def start_many(self, argvs) -> list[tuple[RemoteProc, float]]:
        """Every command started by one remote bash, in one round trip: n flows start within
        milliseconds of each other instead of n round trips apart. Start times are the remote's."""
        argvs = [check_argv(a) for a in argvs]
        if not argvs:
            return []
        sep = f"--hostnet-next-{uuid.uuid4().hex}--"
        tag = ["env", f"{ProcessTag.VAR}={self.tag.tag}"] if self.tag else []
        bases = [f"/tmp/{remote_temp_prefix(self, 'out')}{uuid.uuid4().hex[:12]}" for _ in argvs]
        args: list[str] = []
        for i, (base, argv) in enumerate(zip(bases, argvs, strict=True)):
            args += [*([sep] if i else []), base, *tag, *argv]
        lines = self.run(["bash", "-c", _START_MANY, "bash", sep, *args]).stdout.strip().splitlines()
        started = [ln.split() for ln in lines]
        if len(started) != len(argvs) or not all(len(s) == 2 and s[0].isdigit() for s in started):
            raise HostError(f"{self.name}: could not start {len(argvs)} commands: {' | '.join(lines)[:300]}")
        return [(RemoteProc(self, argv, int(pid), base), float(t.replace(",", ".")))  # a locale may say 1,5
                for argv, base, (pid, t) in zip(argvs, bases, started, strict=True)]

    def _sftp_ok(self, path: str) -> bool:
        # sftp runs as the login user and sees procfs/sysfs files as empty: use cat/tee there.
        return not self.sudo and not path.startswith(("/proc/", "/sys/"))

    def read_text(self, path: str) -> str:
        if not self._sftp_ok(path):
            return self.run(["cat", path]).stdout
        try:
            with self.connection().sftp().open(path, "r") as fh:
                return fh.read().decode()
        except (OSError, paramiko.SSHException) as exc:
            raise HostError(f"{self.name}: cannot read {path}: {exc}") from exc

    def write_text(self, path: str, text: str) -> None:
        if not self._sftp_ok(path):
            # One write() call: a sysctl or sysfs file takes each write as a whole new value, and
            # stdin streamed over SSH would arrive in pieces.
            self.run(["sh", "-c", 'printf %s "$1" > "$2"', "sh", text, path])
            return
        try:
            with self.connection().sftp().open(path, "w") as fh:
                fh.write(text.encode())
        except (OSError, paramiko.SSHException) as exc:
            raise HostError(f"{self.name}: cannot write {path}: {exc}") from exc

    def connection_interfaces(self) -> list[str]:
        """The interface(s) holding the address this SSH session arrived on: management."""
        if not self.guard_connection_interface:
            return []
        # the login's own shell: sudo resets the environment, SSH_CONNECTION with it
        conn = self._run(["sh", "-c", 'echo "$SSH_CONNECTION"'], check=False, privileged=False).stdout.split()
        if len(conn) < 3:
            raise HostError(f"{self.name}: SSH_CONNECTION is empty in the login's shell")
        try:
            addrs = json.loads(self._run(["ip", "-j", "addr"], privileged=False).stdout)
        except ValueError as exc:
            raise HostError(f"{self.name}: ip -j addr printed no JSON ({exc})") from exc
        found = [a["ifname"] for a in addrs for i in a.get("addr_info", []) if i.get("local") == conn[2]]
        if not found:
            raise HostError(f"{self.name}: no interface holds {conn[2]}, the address this SSH session arrived on")
        return found

    def which(self, tool: str) -> str | None:
        if tool in self.tool_paths:
            return self.tool_paths[tool]
        res = self.run(["sh", "-c", 'command -v "$1"', "sh", tool], check=False)
        return res.stdout.strip() or None

    def describe(self) -> dict:
        """Enough to reconnect (e.g. for `hostnet restore`); never a password."""
        return {"name": self.name, "kind": "SshHost", "address": self.address, "user": self.user,
                "port": self.port, "key_filename": self.key_filename, "known_hosts": self.known_hosts,
                "proxy_command": self.proxy_command, "sudo": self.sudo,
                "insecure_accept_unknown_keys": self.insecure,
                **({"proxy_jump": self.proxy_jump.describe()} if self.proxy_jump is not None else {})}


def _quiet_paramiko() -> None:
    """paramiko's transport thread prints a traceback for every connection that meets no SSH server
    (Python's last-resort handler, when nobody configured logging); hostnet says the same in one
    HostUnreachable. A handler the user gave paramiko, or the root logger's, still gets them."""
    logger = logging.getLogger("paramiko")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def _silent(exc: Exception) -> bool:
    """Whether a failed connection met no SSH server at all (a proxy command that ended, a port
    that closed before the banner): unreachable, like a refused TCP connection."""
    return isinstance(exc, paramiko.ProxyCommandFailure) or str(exc).startswith("Error reading SSH protocol banner")


def _channel_chunks(channel):
    # the channel hands out packets of a few KB; the sink gets them gathered into big chunks
    buf = bytearray()
    while data := channel.recv(1 << 16):
        buf += data
        if len(buf) >= STREAM_CHUNK:
            yield bytes(buf)
            buf.clear()
    if buf:
        yield bytes(buf)
