"""Hosts: where commands run. base.py holds the seam (Host, Proc, Result, ProcessTag,
check_argv), local.py this machine and its namespaces, ssh.py servers over SSH (a password's sudo
exchange in ssh_sudo.py, a ProxyCommand's socket in ssh_proxy.py), sshd.py an sshd per namespace
for testing the SSH path on one machine. host_from_description rebuilds a host from
Host.describe() (a journal restored after a crash).

SshHost and SshOptions load on first use (PEP 562): ssh.py imports paramiko, fabric and invoke at
its top (0.3 s), which importing hostnet.hosts (every command's parser, a notebook) does not pay."""
from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING

from .base import (RECONNECT_WAIT_S, STREAM_CHUNK, STREAM_PIPE, Host, HostError, HostUnreachable, Proc, ProcessTag,
                   Result, check_argv, process_start_ticks)
from .local import LocalHost, NetnsHost, netns_exists

if TYPE_CHECKING:  # what import-linter and a type checker read; at run time __getattr__ loads it
    from .ssh import SshHost, SshOptions

__all__ = ["RECONNECT_WAIT_S", "STREAM_CHUNK", "STREAM_PIPE", "Host", "HostError", "HostUnreachable", "LocalHost",
           "NetnsHost", "Proc", "ProcessTag", "Result", "SshHost", "SshOptions", "check_argv", "gone_namespace",
           "host_from_description", "netns_exists", "process_start_ticks"]
_SSH = ("SshHost", "SshOptions")


def __getattr__(name: str):
    if name in _SSH:
        value = getattr(importlib.import_module(f"{__name__}.ssh"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def host_from_description(desc: dict) -> Host:
    """Rebuild a host from Host.describe(), e.g. to restore a journal after a crash."""
    kind = desc.get("kind")
    if kind == "LocalHost":
        return LocalHost(desc.get("name", "local"))
    if kind == "NetnsHost":
        return NetnsHost(desc["netns"], desc.get("name"))
    if kind == "SshHost":
        # lazy: ssh.py loads paramiko and fabric (0.3 s); only a journal that names an SSH host needs them
        from .ssh import SshHost, SshOptions
        options = SshOptions(key_filename=desc.get("key_filename"), known_hosts=desc.get("known_hosts"),
                             sudo=desc.get("sudo"),
                             insecure_accept_unknown_keys=desc.get("insecure_accept_unknown_keys", False) is True)
        return SshHost(desc["address"], user=desc["user"], port=desc["port"], name=desc.get("name"),
                       proxy_command=_proxy_command(desc.get("proxy_command")), options=options,
                       # the jump host (ProxyJump) is rebuilt the same way, its own jump host too
                       proxy_jump=host_from_description(desc["proxy_jump"]) if desc.get("proxy_jump") else None)
    raise HostError(f"cannot rebuild a host of kind {kind!r}")


# The only proxy hostnet itself uses: nc inside one of its own namespaces (sshd.proxy_command); an
# ssh_config's ProxyCommand arrives with %h and %p already filled in (paramiko expands them).
_NETNS_PROXY = re.compile(r"ip netns exec (hostnet-[a-z0-9]{1,8}-[a-z0-9]{1,8}) nc "
                          r"(%h|(?:\d{1,3}\.){3}\d{1,3}) (%p|\d{1,5})")


def _proxy_command(recorded) -> str | None:
    """A restore never runs a command read from a journal: a recorded proxy is accepted only as
    the name of a hostnet namespace, and the command is built here from it."""
    if recorded is None:
        return None
    m = _NETNS_PROXY.fullmatch(str(recorded))
    if not m or not netns_exists(m.group(1)):
        raise HostError(f"the journal names an SSH proxy command ({str(recorded)[:80]!r}); hostnet does not run "
                        f"commands taken from a journal (only its own namespace proxy, for a namespace that exists)")
    # lazy: sshd.py builds SSH hosts (ssh.py: paramiko and fabric); only a recorded proxy gets here
    from .sshd import proxy_command
    return proxy_command(m.group(1), m.group(2), m.group(3))




def gone_namespace(desc: dict) -> str | None:
    """The hostnet namespace a described host lived in, when that namespace no longer exists (a
    reboot, `ip netns del`): a NetnsHost's, or an SshHost's reached through hostnet's own namespace
    proxy (or through a jump host that was). None for a host that is not in a gone namespace."""
    if desc.get("kind") == "NetnsHost":
        return None if netns_exists(str(desc.get("netns"))) else str(desc.get("netns"))
    if desc.get("kind") == "SshHost":
        m = _NETNS_PROXY.fullmatch(str(desc.get("proxy_command") or ""))
        if m:
            return None if netns_exists(m.group(1)) else m.group(1)
        if isinstance(desc.get("proxy_jump"), dict):
            return gone_namespace(desc["proxy_jump"])
    return None
