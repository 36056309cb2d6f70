"""The embedded testbed: two network namespaces joined by a veth pair on this machine (more hosts
hang off a bridge in a namespace of its own), addressed in the benchmarking ranges 198.18.0.0/15
and, for IPv6 flows, 2001:2::/48 (RFC 5180's, its IPv6 twin): traffic never leaves the namespaces.
Its state (and the knob journal) lives under state_dir() so `hostnet testbed status/down` and
`hostnet restore` work from another process, and it is torn down on success, exception, SIGINT
and SIGTERM.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..hosts import HostError, LocalHost, NetnsHost, ProcessTag, netns_exists, process_start_ticks
from ..hosts.base import remove_dead_scratch, write_private
from ..hosts.sshd import ssh_host, start_sshds
from ..knobs import Journal, JournalBusy, restore_journal
from ..knobs.journal import read_entries
from ..knobs.journal_lock import in_use, private_dir
from . import steering
from .base import Endpoint, RestoreError, Testbed, TestbedError, role_kind, role_name, state_dir

NAME_RE = re.compile(r"^[a-z0-9]{1,8}\Z")
SUBNET_PREFIX = "198.18.0"
SUBNET6_PREFIX = "2001:2::"  # a /64 of the IPv6 benchmarking range (RFC 5180), numbered like the IPv4 one
# The management network of a testbed with a bastion (SSH only, never measured): a bridge in the
# bastion's namespace, one veth "mgmt0" into each endpoint's namespace.
MGMT_PREFIX = "198.19.0"
BASTION_IP = f"{MGMT_PREFIX}.254"
MGMT_IFACE = "mgmt0"


@dataclass
class EmbeddedLayout:
    """Names and addresses of one embedded testbed; unique per testbed name.

    One sender and one receiver are joined by a veth pair; more hosts hang off a bridge in a
    namespace of its own (a switch). Sender i is 198.18.0.(1+2i), receiver j 198.18.0.(2+2j);
    their IPv6 addresses end in the same number (in hex): 2001:2::1, 2001:2::2, ...
    """

    name: str
    sender_cpus: list[int] = field(default_factory=lambda: [0])
    receiver_cpus: list[int] = field(default_factory=lambda: [1])
    n_senders: int = 1
    n_receivers: int = 1
    ssh: bool = False
    steering: str = steering.DEFAULT  # receive steering (steering.py)
    bastion: bool = False  # a jump host namespace and a management network (testbed.yaml rehearsals)

    def __post_init__(self):
        try:
            steering.check(self.steering)
        except steering.SteeringError as exc:
            raise TestbedError(str(exc)) from exc
        if not NAME_RE.match(self.name):
            raise TestbedError(f"testbed name {self.name!r}: use 1-8 lowercase letters or digits")
        if not (1 <= self.n_senders <= 9 and 1 <= self.n_receivers <= 9):
            raise TestbedError("an embedded testbed has 1-9 senders and 1-9 receivers")
        if self.bastion and not self.ssh:
            raise TestbedError("a bastion is a jump host for SSH: it needs the sshds (ssh=True)")

    @property
    def roles(self) -> list[str]:
        return ([role_name("sender", i) for i in range(self.n_senders)]
                + [role_name("receiver", j) for j in range(self.n_receivers)])

    @property
    def bridged(self) -> bool:
        return self.n_senders + self.n_receivers > 2

    def _index(self, role: str) -> int:
        return int(role[len(role_kind(role)):] or 0)

    @property
    def netns(self) -> dict[str, str]:
        short = {"sender": "snd", "receiver": "rcv"}
        out = {r: f"hostnet-{self.name}-{short[role_kind(r)]}{r[len(role_kind(r)):]}" for r in self.roles}
        if self.bridged:
            out["switch"] = f"hostnet-{self.name}-sw"
        if self.bastion:
            out["bastion"] = f"hostnet-{self.name}-bst"
        return out

    @property
    def ifaces(self) -> dict[str, str]:
        return {r: f"hn{self.name}{role_kind(r)[0]}{r[len(role_kind(r)):]}" for r in self.roles}

    def switch_port(self, role: str) -> str:
        return self.ifaces[role] + "b"

    @property
    def ips(self) -> dict[str, str]:
        return {r: f"{SUBNET_PREFIX}.{(1 if role_kind(r) == 'sender' else 2) + 2 * self._index(r)}"
                for r in self.roles}

    @property
    def ips6(self) -> dict[str, str]:
        return {r: f"{SUBNET6_PREFIX}{int(ip.rsplit('.', 1)[1]):x}" for r, ip in self.ips.items()}

    @property
    def mgmt_ips(self) -> dict[str, str]:
        """Each endpoint's management address (only with a bastion), numbered like its data IP."""
        if not self.bastion:
            return {}
        return {r: ip.replace(SUBNET_PREFIX, MGMT_PREFIX, 1) for r, ip in self.ips.items()}

    def cpus(self, role: str) -> list[int]:
        return self.sender_cpus if role_kind(role) == "sender" else self.receiver_cpus


def has_ipv6() -> bool:
    """Does this kernel run IPv6 (not built without it, nor booted with ipv6.disable=1)? Without
    it the testbed is IPv4 only: its endpoints have no ip6, and IPv6 points are refused by name."""
    return Path("/proc/net/if_inet6").exists()


def _state_file(name: str) -> Path:
    return state_dir() / f"{name}.json"


def _journal_file(name: str) -> Path:
    return state_dir() / f"{name}.journal"


def _tag(name: str) -> ProcessTag:
    # The state directory is part of the tag: two test runs with their own state never collide.
    return ProcessTag(f"{state_dir()}/{name}")


def _infra_tag(name: str) -> ProcessTag:
    return ProcessTag(f"{state_dir()}/{name}/infra")


def from_layout(layout: EmbeddedLayout) -> Testbed:
    """The Testbed object for a layout: hosts, endpoints and journal, nothing created on the machine."""
    tag = _tag(layout.name)
    local = LocalHost("root-ns", tag=tag)
    endpoints = {}
    for role in layout.roles:
        if layout.ssh:
            host = ssh_host(ssh_dir(layout.name), layout.netns[role], layout.ips[role], role, tag)
        else:
            host = NetnsHost(layout.netns[role], name=role, tag=tag)
        endpoints[role] = Endpoint(role, host, layout.ifaces[role], layout.ips[role], layout.cpus(role),
                                   machine="local", ip6=layout.ips6[role] if has_ipv6() else None)
    notes = ["network namespaces on one machine joined by " + ("a bridge (its own namespace)" if layout.bridged
             else "a veth pair") + "; receive path: " + steering.describe(layout.steering)]
    if layout.ssh:
        notes.append("endpoints are driven over SSH (an sshd in each namespace)")
    switch = NetnsHost(layout.netns["switch"], name="switch", tag=tag) if layout.bridged else None
    return Testbed(layout.name, "embedded", endpoints, {"local": local}, Journal(_journal_file(layout.name)),
                   notes=notes, switch=switch,
                   switch_ports=[layout.switch_port(r) for r in layout.roles] if layout.bridged else [],
                   rx_steering=layout.steering)


def ssh_dir(name: str) -> Path:
    return state_dir() / f"{name}-ssh"


def check_cpus(layout: EmbeddedLayout) -> None:
    n = os.cpu_count() or 1
    for cpu in layout.sender_cpus + layout.receiver_cpus:
        if cpu >= n:
            raise TestbedError(f"CPU {cpu} does not exist (this machine has {n})")
    if set(layout.sender_cpus) & set(layout.receiver_cpus):
        raise TestbedError("sender and receiver CPUs overlap; give each side its own CPUs")


def up(name: str = "default", sender_cpus=(0,), receiver_cpus=(1,), persistent: bool = False,
       n_senders: int = 1, n_receivers: int = 1, ssh: bool = False, steering: str | None = None,
       bastion: bool = False) -> Testbed:
    """Create the namespaces and links. Refuses a name already in use.

    persistent: brought up by `hostnet testbed up`, meant to outlive this process; it is only
    removed by `hostnet testbed down` (a restore keeps its namespaces).
    ssh: run an sshd in every endpoint namespace and drive the endpoints through SshHost, as
    real servers would be.
    steering: the receive path (steering.py: napi-thread, rps, none); None: steering.DEFAULT.
    bastion: also a jump host's namespace joined to every endpoint by a management network
    (MGMT_PREFIX), each endpoint's sshd listening there too: as_servers.py describes the testbed
    as servers reached through it (ProxyJump).
    """
    layout = EmbeddedLayout(name, list(sender_cpus), list(receiver_cpus), n_senders, n_receivers, ssh,
                            **({"steering": steering} if steering else {}), bastion=bastion)
    check_cpus(layout)
    if os.geteuid() != 0:
        raise TestbedError("the embedded testbed needs root (network namespaces); run as root")
    # A dead session's leftovers first: otherwise this session would journal its changed
    # global settings as "prior" values and restore them later.
    remove_dead_scratch()
    for dead in stale():
        problems = restore(dead)
        if problems:
            raise RestoreError(f"{dead} (left by a dead session; run `hostnet restore`)", problems)
    if _state_file(name).exists() or any(netns_exists(n) for n in layout.netns.values()):
        raise TestbedError(f"testbed {name!r} is already up; use it, or `hostnet testbed down {name}`")
    local = LocalHost("root-ns", tag=_tag(name))
    for tool in ("ip",) + (("sshd", "ssh-keygen", "nc") if ssh else ()):
        if not (local.which(tool) or Path("/usr/sbin", tool).exists()):
            raise TestbedError(f"{tool} is not installed; run `make install`")
    private_dir(state_dir())
    # The owner (this process, identified by PID and start time) lets `hostnet restore` tell a
    # testbed whose controller died from one that is still in use.
    pid = os.getpid()
    write_private(_state_file(name), json.dumps({  # a reader never sees half a state file
        "layout": asdict(layout), "persistent": persistent,
        "owner": {"pid": pid, "start_ticks": process_start_ticks(pid)}}, indent=2).encode())
    try:
        _create_links(local, layout)
        if ssh:
            # The sshds are infrastructure: a restore that keeps the testbed must not stop them.
            sshds = {r: (layout.netns[r], [layout.ips[r]] + ([layout.mgmt_ips[r]] if bastion else []))
                     for r in layout.roles}
            if bastion:
                sshds["bastion"] = (layout.netns["bastion"], [BASTION_IP])
            start_sshds(LocalHost("root-ns", tag=_infra_tag(name)), ssh_dir(name), sshds)
    except BaseException:
        down(name)
        raise
    return from_layout(layout)


def _create_links(local: LocalHost, layout: EmbeddedLayout) -> None:
    for ns in layout.netns.values():
        local.run(["ip", "netns", "add", ns])
        local.run(["ip", "-n", ns, "link", "set", "lo", "up"])
    if layout.bridged:
        sw = layout.netns["switch"]
        local.run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        local.run(["ip", "-n", sw, "link", "set", "br0", "up"])
        for role in layout.roles:
            iface, port = layout.ifaces[role], layout.switch_port(role)
            local.run(["ip", "link", "add", iface, "type", "veth", "peer", "name", port])
            local.run(["ip", "link", "set", port, "netns", sw])
            local.run(["ip", "-n", sw, "link", "set", port, "master", "br0"])
            local.run(["ip", "-n", sw, "link", "set", port, "up"])
    else:
        local.run(["ip", "link", "add", layout.ifaces["sender"], "type", "veth", "peer", "name",
                   layout.ifaces["receiver"]])
    for role in layout.roles:
        ns, iface = layout.netns[role], layout.ifaces[role]
        local.run(["ip", "link", "set", iface, "netns", ns])
        local.run(["ip", "-n", ns, "addr", "add", f"{layout.ips[role]}/24", "dev", iface])
        if has_ipv6():  # nodad: usable at once (duplicate detection holds it "tentative" for a second or more)
            local.run(["ip", "-n", ns, "addr", "add", f"{layout.ips6[role]}/64", "dev", iface, "nodad"])
        local.run(["ip", "-n", ns, "link", "set", iface, "up"])
    if layout.bastion:
        _create_management(local, layout)


def _create_management(local: LocalHost, layout: EmbeddedLayout) -> None:
    """The bastion's bridge and a veth to each endpoint, created inside the namespaces (nothing
    passes through the root namespace)."""
    bst = layout.netns["bastion"]
    local.run(["ip", "-n", bst, "link", "add", "br0", "type", "bridge"])
    local.run(["ip", "-n", bst, "addr", "add", f"{BASTION_IP}/24", "dev", "br0"])
    local.run(["ip", "-n", bst, "link", "set", "br0", "up"])
    for role in layout.roles:
        ns, port = layout.netns[role], f"m-{role}"
        local.run(["ip", "-n", bst, "link", "add", port, "type", "veth", "peer", "name", MGMT_IFACE, "netns", ns])
        local.run(["ip", "-n", bst, "link", "set", port, "master", "br0"])
        local.run(["ip", "-n", bst, "link", "set", port, "up"])
        local.run(["ip", "-n", ns, "addr", "add", f"{layout.mgmt_ips[role]}/24", "dev", MGMT_IFACE])
        local.run(["ip", "-n", ns, "link", "set", MGMT_IFACE, "up"])


def layout_of(name: str) -> EmbeddedLayout:
    """The layout of testbed `name`, which is up."""
    path = _state_file(name)
    if not path.exists():
        raise TestbedError(f"no testbed {name!r} is up; run `hostnet testbed up --name {name}`")
    return EmbeddedLayout(**json.loads(path.read_text())["layout"])


def attach(name: str = "default") -> Testbed:
    """The testbed `up` created, from another process."""
    layout = layout_of(name)
    missing = [n for n in layout.netns.values() if not netns_exists(n)]
    if missing:
        raise TestbedError(f"testbed {name!r} is broken (missing {', '.join(missing)}); "
                           f"run `hostnet testbed down {name}`")
    return from_layout(layout)


def is_persistent(name: str) -> bool:
    path = _state_file(name)
    return path.exists() and bool(json.loads(path.read_text()).get("persistent"))


def restore(name: str) -> list[str]:
    """Undo what a dead controller left: a persistent testbed keeps its namespaces."""
    return down(name, keep_namespaces=is_persistent(name))


def down(name: str = "default", keep_namespaces: bool = False) -> list[str]:
    """Stop our processes, restore journaled knobs, delete the namespaces (and the veth pair).

    Safe to call after the controller was SIGKILLed: processes are found by the mark they carry
    in their environment and through the namespaces themselves (everything inside them is ours).
    """
    path = _state_file(name)
    layout = (EmbeddedLayout(**json.loads(path.read_text())["layout"]) if path.exists()
              else EmbeddedLayout(name))
    local = LocalHost("root-ns")
    # Settings first, while an SSH testbed's sshds still run; then every process of ours. A journal
    # a live controller holds stops everything: its processes and namespaces are in use.
    try:
        problems = restore_journal(_journal_file(name))
    except JournalBusy as exc:
        raise TestbedError(f"testbed {name!r}: {exc}") from exc
    _tag(name).kill_all()
    if keep_namespaces:
        return problems
    _infra_tag(name).kill_all()
    # Whatever else runs inside our namespaces is ours too (e.g. a child that lost its mark).
    for ns in layout.netns.values():
        if netns_exists(ns):
            for pid in local.run(["ip", "netns", "pids", ns], check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
    # A controller killed between creating a veth pair and moving it leaves it in the root namespace.
    for iface in list(layout.ifaces.values()) + [layout.switch_port(r) for r in layout.roles]:
        if Path("/sys/class/net", iface).exists():
            local.run(["ip", "link", "del", iface], check=False)
    for ns in layout.netns.values():
        if netns_exists(ns):
            try:
                local.run(["ip", "netns", "del", ns])
            except HostError as exc:
                problems.append(str(exc))
    if problems and not any(netns_exists(ns) for ns in layout.netns.values()):
        # e.g. an endpoint's sshd died: what it could not put back went with its namespace, and a
        # host-wide setting of it is put back from here (journal.py archives the journal)
        problems = restore_journal(_journal_file(name))
    if not problems:
        path.unlink(missing_ok=True)
        shutil.rmtree(ssh_dir(name), ignore_errors=True)
    return problems


def owner_alive(name: str) -> bool:
    """Is the process that brought this testbed up still running?"""
    path = _state_file(name)
    if not path.exists():
        return False
    owner = json.loads(path.read_text()).get("owner") or {}
    pid = owner.get("pid")
    return pid is not None and process_start_ticks(pid) == owner.get("start_ticks")


def stale() -> list[str]:
    """Embedded testbeds a dead session left: one whose controller died (crash, SIGKILL) and that
    nobody will tear down, or a persistent one with a journal no live process holds (its settings
    are put back; it stays up). Journals without a state file are not embedded (leftovers.py)."""
    if not state_dir().exists():
        return []
    out = []
    for name in sorted(p.stem for p in state_dir().glob("*.json")):
        journal = _journal_file(name)
        if in_use(journal):
            continue
        if is_persistent(name) and journal.exists() or not is_persistent(name) and not owner_alive(name):
            out.append(name)
    return out


def has_state(name: str) -> bool:
    """Is `name` an embedded testbed (it has a state file)?"""
    return _state_file(name).exists()


def status() -> list[dict]:
    rows = []
    for path in sorted(state_dir().glob("*.json")):
        layout = EmbeddedLayout(**json.loads(path.read_text())["layout"])
        journal = _journal_file(layout.name)
        rows.append({
            "name": layout.name, "owner_alive": owner_alive(layout.name),
            "namespaces": {r: (n if netns_exists(n) else f"{n} (missing)") for r, n in layout.netns.items()},
            "ips": layout.ips, "ips6": layout.ips6,
            "sender_cpus": layout.sender_cpus, "receiver_cpus": layout.receiver_cpus,
            "ssh": layout.ssh, **({"bastion": BASTION_IP, "mgmt_ips": layout.mgmt_ips} if layout.bastion else {}),
            "journaled_changes": len(read_entries(journal)),
        })
    return rows


@contextlib.contextmanager
def raise_on_sigterm():
    """Turn SIGTERM into SystemExit so `finally` blocks tear things down (SIGINT already raises)."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def embedded(name: str = "default", sender_cpus=(0,), receiver_cpus=(1,), **kwargs):
    """An embedded testbed for the duration of a with-block, always torn down."""
    with raise_on_sigterm():
        tb = up(name, sender_cpus, receiver_cpus, **kwargs)
        try:
            yield tb
        finally:
            problems = down(name)
            if problems:  # raised over any exception of the block, which stays its __context__
                raise RestoreError(name, problems)
