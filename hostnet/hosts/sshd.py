"""An sshd in each namespace of the embedded testbed, so experiments drive the endpoints
through SshHost exactly as they would drive real servers (keys and known_hosts are the
testbed's own, created under its state directory and removed with it)."""
from __future__ import annotations

import time
from pathlib import Path

from .base import HostError, ProcessTag
from .local import LocalHost
from .ssh import SshHost, SshOptions

SSHD = "/usr/sbin/sshd"


def _keys(local: LocalHost, d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    for key in ("client_ed25519", "host_ed25519"):
        if not (d / key).exists():
            local.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"hostnet-{key}", "-f", str(d / key)])
    (d / "authorized_keys").write_text((d / "client_ed25519.pub").read_text())


def sshd_config(d: Path, role: str, ips: str | list[str]) -> str:
    ips = [ips] if isinstance(ips, str) else ips
    return "\n".join([
        *(f"ListenAddress {ip}:22" for ip in ips), f"HostKey {d / 'host_ed25519'}", f"PidFile {d / f'sshd-{role}.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "Subsystem sftp internal-sftp", "MaxStartups 100:30:200", "MaxSessions 100", ""])


def proxy_command(netns: str, address: str = "%h", port: str = "%p") -> str:
    # The controller stays in the root namespace; nc inside the endpoint's namespace carries SSH.
    return f"ip netns exec {netns} nc {address} {port}"


def ssh_host(d: Path, netns: str, ip: str, role: str, tag: ProcessTag | None) -> SshHost:
    # SSH rides the namespace's only (data) interface on purpose: hostnet created that namespace,
    # so the management-interface guard, meant for real servers, does not apply to it.
    return SshHost(ip, user="root", name=f"{role}@ssh", proxy_command=proxy_command(netns),
                   options=SshOptions(key_filename=str(d / "client_ed25519"), known_hosts=str(d / "known_hosts"),
                                      tag=tag, connect_timeout=10, guard_connection_interface=False))


def start_sshds(local: LocalHost, d: Path, endpoints: dict[str, tuple[str, str | list[str]]],
                timeout_s: float = 15) -> None:
    """endpoints: role -> (netns, its address or addresses). Starts one sshd per namespace, listening
    on each address, and waits until each answers; known_hosts names the host key at every address."""
    _keys(local, d)
    local.run(["mkdir", "-p", "/run/sshd"])  # sshd's privilege-separation directory
    host_pub = (d / "host_ed25519.pub").read_text().split()
    addrs = {role: [ips] if isinstance(ips, str) else list(ips) for role, (_, ips) in endpoints.items()}
    (d / "known_hosts").write_text("".join(f"{ip} {host_pub[0]} {host_pub[1]}\n"
                                           for ips in addrs.values() for ip in ips))
    for role, (netns, _) in endpoints.items():
        conf = d / f"sshd-{role}.conf"
        conf.write_text(sshd_config(d, role, addrs[role]))
        local.run([SSHD, "-t", "-f", str(conf)])
        local.start(["ip", "netns", "exec", netns, SSHD, "-D", "-e", "-f", str(conf)])
    deadline = time.monotonic() + timeout_s
    for role, (netns, _) in endpoints.items():
        ip = addrs[role][0]
        while True:
            res = local.run(["ip", "netns", "exec", netns, "ss", "-Hltn", f"src {ip}:22"], check=False)
            if res.stdout.strip():
                break
            if time.monotonic() > deadline:
                raise HostError(f"sshd in {netns} did not start listening on {ip}:22 within {timeout_s} s")
            time.sleep(0.1)
