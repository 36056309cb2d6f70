"""A host name as the researcher's ssh_config (~/.ssh/config) has it: alias -> HostName, User, Port,
IdentityFile, ProxyJump, ProxyCommand, UserKnownHostsFile (paramiko.SSHConfig does the matching).

hostnet resolves these itself instead of letting fabric load ssh_config: fabric would build a
ProxyJump gateway whose client trusts any host key, and would read the system-wide file too.
`Include` is followed here (paramiko ignores it); `Match exec` is refused, since it would run a
command from the file on the controller with hostnet's environment (the sudo password in it). The
refusal reads each Match line's criteria as paramiko tokenises them (shlex), so quoting or escapes
(`ex''ec`, `e\\xec`) cannot hide one; files are read size-limited (hostnet.inputfiles).
"""
from __future__ import annotations

import getpass
import glob
import os
import re
import shlex
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import paramiko

from .. import inputfiles
from .base import SUDO_PASSWORD_VAR, HostError
from .ssh import SshHost, SshOptions

DEFAULT_PATH = "~/.ssh/config"
_INCLUDE = re.compile(r"^\s*include\s*(?:=\s*)?(?P<paths>.+?)\s*$", re.IGNORECASE)
_MAX_INCLUDE_DEPTH = 16  # ssh's own limit


class SshConfigError(HostError):
    """An ssh_config hostnet cannot use as it stands (names the file and line)."""


@dataclass
class Target:
    """Where to connect for one host name; None: the file says nothing (the caller's default)."""

    name: str
    address: str
    user: str | None = None
    port: int | None = None
    keys: list[str] = field(default_factory=list)
    proxy_jump: str | None = None
    proxy_command: str | None = None
    known_hosts: str | None = None


def _inline(path: Path, depth: int = 0) -> str:
    """The file's text with every Include replaced by the files it names (relative to ~/.ssh, as
    ssh reads them; globs sorted), so a Host block in an included file is seen."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise SshConfigError(f"{path}: Include nested deeper than {_MAX_INCLUDE_DEPTH} (a loop?)")
    try:
        text = inputfiles.read_text(path)
    except inputfiles.InputFileError as exc:
        raise SshConfigError(str(exc)) from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if _runs_a_command(path, i, line):
            raise SshConfigError(f"{path} line {i}: 'Match exec' would run a command on the controller; hostnet does "
                                 f"not (put these settings in a Host block or in the testbed.yaml)")
        m = _INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        for pattern in m["paths"].split():
            pattern = os.path.expanduser(pattern)
            if not os.path.isabs(pattern):
                pattern = str(Path("~/.ssh").expanduser() / pattern)
            out += [_inline(Path(p), depth + 1) for p in sorted(glob.glob(pattern))]
    return "\n".join(out) + "\n"


def _runs_a_command(path: Path, i: int, line: str) -> bool:
    """A Match line with an exec criterion (negated or not, any case), read as paramiko reads it:
    its SETTINGS_REGEX splits keyword from value, shlex splits the criteria."""
    m = re.match(paramiko.SSHConfig.SETTINGS_REGEX, line.strip())
    if not m or m.group(1).lower() != "match":
        return False
    try:
        tokens = shlex.split(m.group(2))
    except ValueError as exc:  # paramiko would fail on it too, later and without the line
        raise SshConfigError(f"{path} line {i}: Match criteria unreadable ({exc})") from None
    return any(t.lstrip("!").lower() == "exec" for t in tokens)


@contextmanager
def without_sudo_password():
    """The sudo password out of this process's environment while an ssh_config is parsed and
    looked up: `Match exec` is refused (load), and whatever else a lookup might run (paramiko's
    own matching) still cannot see it. Put back after, for SshHost to read."""
    password = os.environ.pop(SUDO_PASSWORD_VAR, None)
    try:
        yield
    finally:
        if password is not None:
            os.environ[SUDO_PASSWORD_VAR] = password


def load(path: str | os.PathLike | None = DEFAULT_PATH):
    """The parsed config, or None when there is no such file (nothing to honour)."""
    if path is None:
        return None
    path = Path(os.path.expanduser(str(path)))
    if not path.exists():
        return None
    try:
        with without_sudo_password():
            return paramiko.SSHConfig.from_text(_inline(path))
    except paramiko.ssh_exception.ConfigParseError as exc:
        raise SshConfigError(f"{path}: {inputfiles.one_line(str(exc))}") from None


def resolve(config, name: str) -> Target:
    """What config says about host `name` (an alias or an address); config None: only the name."""
    if config is None:
        return Target(name, name)
    with without_sudo_password():
        opts = config.lookup(name)
    port = opts.get("port")
    jump = opts.get("proxyjump")
    command = opts.get("proxycommand")
    known = (opts.get("userknownhostsfile") or "").split()
    return Target(name, opts.get("hostname", name), user=opts.get("user"), port=int(port) if port else None,
                  keys=[os.path.expanduser(k) for k in opts.get("identityfile", [])],
                  proxy_jump=None if jump is None or jump.lower() == "none" else jump,
                  proxy_command=None if command is None or command.lower() == "none" else command,
                  known_hosts=os.path.expanduser(known[0]) if known and known[0].lower() != "none" else None)


_HOP = re.compile(r"^(?:ssh://)?(?:(?P<user>[^@/\s]+)@)?(?P<host>\[[^\]]+\]|[^:@/\s]+)(?::(?P<port>\d{1,5}))?/?\Z")


@dataclass
class Hop:
    """One hop of a ProxyJump list: [user@]host[:port] (host may be an ssh_config alias)."""

    host: str
    user: str | None = None
    port: int | None = None


def parse_jump(spec: str) -> list[Hop]:
    """ssh's -J syntax: hops separated by commas, the first connected first."""
    hops = []
    for part in spec.split(","):
        m = _HOP.match(part.strip())
        if not m or (m["port"] and not 1 <= int(m["port"]) <= 65535):
            raise SshConfigError(f"ProxyJump {spec!r}: {part.strip()!r} is not [user@]host[:port]")
        hops.append(Hop(m["host"].strip("[]"), m["user"], int(m["port"]) if m["port"] else None))
    return hops


def local_user() -> str:
    """ssh's default login for a host whose config names no User."""
    return getpass.getuser()


_MAX_JUMPS = 8  # a ProxyJump chain longer than this is a loop in the config


def build(name: str, address: str, config, *, user: str | None = None, port: int | None = None,
          proxy_jump: str | None = None, options=None, default_user: str = "root", jumps: dict | None = None,
          _depth: int = 0):
    """An SshHost for `address` (an ssh_config alias or an address) with what config says about it,
    each explicit argument overriding the file (proxy_jump "none": connect directly, without the
    file's ProxyJump or ProxyCommand; options: an ssh.SshOptions, whose key_filename and
    known_hosts, when set, override the file's IdentityFile and UserKnownHostsFile). A ProxyJump's
    hops are resolved through config as ssh does (the first hop with its own proxy settings, each
    later one through the hop before it) and logged into as the local user unless a User says
    otherwise; known_hosts (None: the file's, else ~/.ssh/known_hosts) and the host-key policy
    apply to every hop. jumps: jump hosts already built, shared by the hosts behind them (one
    connection each)."""
    options = options or SshOptions()
    if _depth > _MAX_JUMPS:
        raise SshConfigError(f"{name}: more than {_MAX_JUMPS} jump hosts (a ProxyJump loop in the ssh_config?)")
    jumps = {} if jumps is None else jumps
    target = resolve(config, address)
    key = options.key_filename
    keys = [os.path.expanduser(key)] if key else [k for k in target.keys if os.path.exists(k)]
    known = options.known_hosts or target.known_hosts or str(Path("~/.ssh/known_hosts").expanduser())
    jump_spec = target.proxy_jump if proxy_jump is None else proxy_jump
    command = target.proxy_command if proxy_jump is None and not target.proxy_jump else None
    via = None
    if jump_spec and jump_spec.lower() != "none":
        for i, hop in enumerate(parse_jump(jump_spec)):
            via = _jump(hop, config, via if i else "own", replace(options, known_hosts=known), jumps, _depth)
    return SshHost(target.address, user=user or target.user or default_user, port=port or target.port or 22,
                   name=name, proxy_command=command, proxy_jump=via,
                   options=replace(options, key_filename=(keys[0] if len(keys) == 1 else keys) or None,
                                   known_hosts=known))


def _jump(hop: Hop, config, via, options, jumps: dict, depth: int):
    """One jump host, built once per (hop, the way to it) and shared: the host-key policy and time
    limits of the hosts behind it, nothing else of theirs (its own key is the config's)."""
    basics = SshOptions(known_hosts=options.known_hosts,
                        insecure_accept_unknown_keys=options.insecure_accept_unknown_keys,
                        connect_timeout=options.connect_timeout, command_timeout=options.command_timeout)
    ident = (hop.host, hop.user, hop.port, options.known_hosts, None if via == "own" else id(via))
    if ident not in jumps:
        if via == "own":  # the first hop: its own ProxyJump or ProxyCommand from the config
            host = build(hop.host, hop.host, config, user=hop.user, port=hop.port, options=basics,
                         default_user=local_user(), jumps=jumps, _depth=depth + 1)
        else:
            host = build(hop.host, hop.host, config, user=hop.user, port=hop.port, options=basics,
                         default_user=local_user(), proxy_jump="none", jumps=jumps, _depth=depth + 1)
            host.proxy_jump = via
        # a jump host only forwards: it runs nothing, so no guard and no sudo apply to it
        host.guard_connection_interface = False
        jumps[ident] = host
    return jumps[ident]
