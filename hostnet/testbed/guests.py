"""The NIC rehearsal testbed: two QEMU guests with one emulated NIC each (e1000e or virtio-net,
optionally behind an emulated Intel IOMMU), so every NIC-facing knob meets a real driver before a
researcher's servers do. Functional only: under TCG nothing a guest measures is a measurement.

Each guest is Debian's packaged kernel (unpacked, never installed on the host: scripts/
install-guest-kernel.sh) booted by virtme-ng over the host's own userland, shared read-only, with an
sshd of its own. `up` writes a testbed.yaml, so hostnet drives the guests over SSH exactly as it
drives servers: the same Host, knob, journal and restore code.

Wiring, all on loopback (nothing leaves this machine):
- data: the NIC under test, on QEMU's socket backend: the sender's QEMU listens on 127.0.0.1:P, the
  receiver's connects; renamed data0 in the guest.
- management: a virtio-net NIC on QEMU's user network with restrict=on (the guest reaches nothing
  outside it) and one forwarded port, 127.0.0.1:Q -> the guest's sshd; mgmt0 in the guest, which
  hostnet never changes (knobs/guard.py), as on a server.

State lives under state_dir()/guests/ (NAME.json and NAME/: keys, the guest script, the consoles).
QEMU and virtme-ng carry the testbed's process mark, so `down` and `hostnet restore` stop them
after the controller was killed, even mid-boot.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..hosts import LocalHost, ProcessTag, process_start_ticks
from ..hosts.base import write_private
from ..knobs import JournalBusy, restore_journal
from ..knobs.journal_lock import private_dir
from .base import TestbedError, state_dir

# e1000 (82540EM) is the one with a legacy INTx line instead of MSI-X vectors
NICS = ("e1000e", "virtio", "e1000")
ROLES = ("sender", "receiver")
DATA_IFACE, MGMT_IFACE = "data0", "mgmt0"
# The guests' data network: its own /24 of the benchmarking range, apart from the embedded testbed's.
DATA_IPS = {"sender": "198.18.2.1", "receiver": "198.18.2.2"}
GUEST_MGMT_IP = "10.0.2.15"  # QEMU's user network gives the guest this address; restrict=on keeps it inside
MEMORY_MB, CPUS = 1024, 2
BOOT_TIMEOUT_S = 240.0
LABEL = "emulated NIC under TCG: functional rehearsal, not a measurement"
NAME_RE = re.compile(r"^[a-z0-9]{1,8}\Z")


class GuestsUnsupported(TestbedError):
    """This machine cannot run the NIC rehearsal (no QEMU, no guest kernel, too little memory)."""


def kernel_dir() -> Path:
    """Where scripts/install-guest-kernel.sh unpacked Debian's kernel package."""
    return Path(os.environ.get("HOSTNET_GUEST_KERNEL", "/var/tmp/hostnet-guest-kernel"))


def find_kernel(root: Path) -> tuple[Path, str]:
    """(vmlinuz, version) of the unpacked package under root; its modules must be indexed (depmod)."""
    images = sorted(root.glob("boot/vmlinuz-*"))
    if len(images) != 1:
        raise GuestsUnsupported(f"no guest kernel in {root} ({len(images)} boot/vmlinuz-*): run "
                                f"`make guest-kernel` (scripts/install-guest-kernel.sh)")
    version = images[0].name.removeprefix("vmlinuz-")
    if not (root / "lib/modules" / version / "modules.dep").exists():
        raise GuestsUnsupported(f"{root}/lib/modules/{version} has no modules.dep: run `make guest-kernel`")
    return images[0], version


def choose_accel(cpuinfo: str, kvm_usable: bool) -> tuple[str, str]:
    """("kvm" or "tcg", why). KVM only with hardware virtualisation (vmx/svm) under /dev/kvm: a
    /dev/kvm without it is a software nested scheme (kvm-pvm here) where a stock guest kernel boots
    ~300x slower than under TCG."""
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags |= set(line.partition(":")[2].split())
    if kvm_usable and flags & {"vmx", "svm"}:
        return "kvm", "KVM (the CPU offers vmx/svm)"
    if kvm_usable:
        return "tcg", ("QEMU TCG: /dev/kvm is not hardware virtualisation here (no vmx/svm flag; a software "
                       "nested scheme such as kvm-pvm, where a stock guest kernel crawls), so it is not used")
    return "tcg", "QEMU TCG: no usable /dev/kvm"


def free_port() -> int:
    """A TCP port on loopback nobody listens on now (QEMU binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class GuestLayout:
    name: str
    nic: str = "e1000e"
    iommu: bool = False
    ssh_ports: dict[str, int] = field(default_factory=dict)  # role -> 127.0.0.1 port forwarded to its sshd
    data_port: int = 0  # the sender's QEMU listens here for the data link
    accel: str = "tcg"
    cpus: int = CPUS

    def __post_init__(self):
        if not NAME_RE.match(self.name):
            raise TestbedError(f"testbed name {self.name!r}: 1-8 lowercase letters or digits")
        if self.nic not in NICS:
            raise TestbedError(f"--nic {self.nic!r}: one of {', '.join(NICS)}")

    @staticmethod
    def mac(role: str, link: str) -> str:
        return f"52:54:00:0{1 if link == 'mgmt' else 2}:00:0{ROLES.index(role) + 1}"

    @property
    def servers_name(self) -> str:
        """The testbed.yaml's name, so its journal (settings changed on the guests) is its own."""
        return f"{self.name}-guests"


def files_dir(name: str) -> Path:
    return state_dir() / "guests" / name


def _state_file(name: str) -> Path:
    return state_dir() / "guests" / f"{name}.json"


def _tag(name: str) -> ProcessTag:
    return ProcessTag(f"{state_dir()}/guests/{name}")


# The guest's init script (virtme-ng runs it once its own init has mounted the host's root
# read-only): names the two NICs by their MACs, gives the guest its own /tmp and /root (/var is an
# overlay: the knobs' journal copies go to /var/lib/hostnet) and a shadow file with root unlocked
# for keys (virtme-ng locks every account), then runs the sshd.
GUEST_SCRIPT = r"""#!/bin/sh
# written by hostnet (testbed/guests.py); runs in the guest: DIR ROLE DATA_IP DATA_MAC MGMT_MAC
set -eu
dir=$1 role=$2 data_ip=$3 data_mac=$4 mgmt_mac=$5
for m in virtio_net e1000e e1000; do modprobe -q "$m" 2>/dev/null || true; done
name_of() { for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "$1" ] && echo "${d##*/}"; done; true; }
for _ in $(seq 100); do  # a driver probes its device asynchronously after modprobe
  data=$(name_of "$data_mac") mgmt=$(name_of "$mgmt_mac")
  [ -n "$data" ] && [ -n "$mgmt" ] && break
  sleep 0.2
done
[ -n "$data" ] && [ -n "$mgmt" ] || { echo "hostnet-guest-failed: no NIC with $data_mac or $mgmt_mac"; exit 1; }
# perf record walks /lib/modules/RELEASE whenever it starts: ~4900 files over the 9p root take it
# 35 s under TCG idle, more than 80 s under a flow. The guest keeps a tmpfs copy of the modules it
# runs and of those hostnet loads (tcp_* congestion control, sch_* qdiscs) with the indexes.
rel=$(uname -r) && src=$(readlink -f "/usr/lib/modules/$rel") && mods=/run/hostnet-guest/modules/$rel
mkdir -p "$mods" && cp "$src"/modules.* "$mods"/
for m in $(cut -d' ' -f1 /proc/modules); do
  f=$(modinfo -n "$m" 2>/dev/null) || continue
  case $f in "$src"/*) rp=${f#"$src"/}; mkdir -p "$mods/${rp%/*}"; cp "$f" "$mods/$rp";; esac
done
for d in kernel/net/ipv4 kernel/net/sched; do mkdir -p "$mods/$d" && cp -r "$src/$d/." "$mods/$d/"; done
ln -sfn "$mods" "/usr/lib/modules/$rel"
ip link set "$mgmt" name mgmt0 && ip link set "$data" name data0
ip addr add 10.0.2.15/24 dev mgmt0 && ip link set mgmt0 up
ip addr add "$data_ip/24" dev data0 && ip link set data0 up
mkdir -p /run/hostnet-guest /run/sshd
cp "$dir/ssh/host_ed25519" "$dir/ssh/authorized_keys" "$dir/ssh/sshd.conf" /run/hostnet-guest/
for d in /tmp /root; do mount -t tmpfs -o mode=1777 tmpfs "$d"; done
chmod 700 /root
sed 's/^root:[^:]*:/root:*:/' /etc/shadow > /run/hostnet-guest/shadow
mount --bind /run/hostnet-guest/shadow /etc/shadow
echo "hostnet-guest-ready $role $(uname -r)"
exec /usr/sbin/sshd -D -e -f /run/hostnet-guest/sshd.conf
"""

SSHD_CONFIG = """ListenAddress {mgmt_ip}:22
HostKey /run/hostnet-guest/host_ed25519
PidFile /run/hostnet-guest/sshd.pid
AuthorizedKeysFile /run/hostnet-guest/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
"""


def virtme_argv(layout: GuestLayout, role: str, virtme_run: str, kernel: Path, files: Path) -> list[str]:
    """The virtme-ng command that boots one guest (pure: tested on its argv)."""
    data_dev = {"e1000e": "e1000e", "virtio": "virtio-net-pci", "e1000": "e1000"}[layout.nic]
    if layout.iommu and layout.nic == "virtio":  # a modern-only device honours the IOMMU (legacy virtio bypasses it);
        # without ATS: with ats=on and the IOMMU's device-iotlb=on no frame crossed the link (QEMU 7.2, TCG)
        data_dev = "virtio-net-pci-non-transitional,iommu_platform=on"
    link = (f"listen=127.0.0.1:{layout.data_port}" if role == "sender"
            else f"connect=127.0.0.1:{layout.data_port}")
    kopts = ["clocksource=tsc", "tsc=reliable"]  # TCG's clocks drift otherwise
    qemu = []
    if layout.iommu:
        kopts += ["intel_iommu=on", "iommu.passthrough=0"]
        qemu += ["-device", "intel-iommu"]
    qemu += ["-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{layout.ssh_ports[role]}-:22",
             "-device", f"virtio-net-pci,netdev=mgmt,mac={layout.mac(role, 'mgmt')}",
             "-netdev", f"socket,id=data,{link}",
             "-device", f"{data_dev},netdev=data,mac={layout.mac(role, 'data')}"]
    script = " ".join(["sh", str(files / "guest.sh"), str(files), role, DATA_IPS[role],
                       layout.mac(role, "data"), layout.mac(role, "mgmt")])
    argv = [virtme_run, "--kimg", str(kernel), "--mods", "auto", "--disable-microvm",
            "--memory", f"{MEMORY_MB}M", "--cpus", str(layout.cpus), "--name", f"hostnet-{layout.name}-{role}",
            "--show-boot-console", "--overlay-rwdir", "/usr/lib", "--overlay-rwdir", "/var",
            # bound over the overlays: the kernel's modules (under /var/tmp by default, which the /var
            # overlay hides from the guest) and the testbed's files
            "--rodir", str(kernel.parent.parent), "--rodir", str(files)]
    if layout.accel == "tcg":
        argv.append("--disable-kvm")
    for k in kopts:
        argv += ["-a", k]
    return argv + ["--script-sh", script, "--qemu-opts", *qemu]


def preflight(local: LocalHost) -> tuple[str, Path, str]:
    """What `up` needs, each missing piece refused in one line: (virtme-run, kernel, its version)."""
    if os.geteuid() != 0:
        raise GuestsUnsupported("the NIC rehearsal needs root (QEMU's guests read the host's root file system)")
    for tool in ("qemu-system-x86_64", "ssh-keygen"):
        if not local.which(tool):
            raise GuestsUnsupported(f"{tool} is not installed: run `make install` (scripts/install-system.sh)")
    virtme_run = shutil.which("virtme-run") or str(Path(sys.executable).with_name("virtme-run"))
    if not Path(virtme_run).exists():
        raise GuestsUnsupported("virtme-ng is not installed in this venv: run `make venv` (the dev extra)")
    if not (local.which("depmod") or Path("/usr/sbin/depmod").exists()):
        raise GuestsUnsupported("kmod (depmod, modprobe) is not installed: run `make install`")
    kernel, version = find_kernel(kernel_dir())
    need_kb = 2 * (MEMORY_MB + 256) * 1024
    avail = _mem_available_kb(local.read_text("/proc/meminfo"))
    if avail is not None and avail < need_kb:
        raise GuestsUnsupported(f"two guests need {need_kb // 1024} MiB and {avail // 1024} MiB is available")
    return virtme_run, kernel, version


def _mem_available_kb(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return None


def up(name: str, nic: str = "e1000e", iommu: bool = False, yaml_path: str | Path | None = None,
       timeout_s: float = BOOT_TIMEOUT_S) -> Path:
    """Boot the two guests, wait for their sshds, write the testbed.yaml (default: NAME/testbed.yaml
    under the state directory); returns its path. Refuses a name in use; undoes everything when a
    guest does not come up."""
    layout = GuestLayout(name, nic, iommu)
    local = LocalHost("root-ns", tag=_tag(name))
    virtme_run, kernel, version = preflight(local)
    for dead in stale():
        problems = down(dead)
        if problems:
            raise TestbedError(f"guests {dead} (left by a dead session): " + "; ".join(problems))
    if _state_file(name).exists():
        raise TestbedError(f"guests {name!r} are already up; use them, or `hostnet testbed down --name {name}`")
    layout.accel, accel_note = choose_accel(local.read_text("/proc/cpuinfo"), os.access("/dev/kvm", os.R_OK | os.W_OK))
    layout.ssh_ports = {role: free_port() for role in ROLES}
    layout.data_port = free_port()
    private_dir(state_dir())
    private_dir(state_dir() / "guests")
    files = files_dir(name)
    files.mkdir(mode=0o700, exist_ok=True)
    pid = os.getpid()
    _write_state(layout, {"ready": False, "kernel": version, "accel": accel_note,
                          "owner": {"pid": pid, "start_ticks": process_start_ticks(pid)}})
    try:
        _prepare_files(local, files)
        t0 = time.monotonic()
        for role in ROLES:
            argv = virtme_argv(layout, role, virtme_run, kernel, files)
            local.start(["sh", "-c", 'log=$1; shift; TMPDIR=$(dirname "$log") exec "$@" >"$log" 2>&1', "sh",
                         str(files / f"console-{role}.log"), *argv])
            if role == "sender":
                _wait_listening(local, layout.data_port, files)
        _wait_ready(files, timeout_s)
        boot_s = time.monotonic() - t0
        path = Path(yaml_path) if yaml_path else files / "testbed.yaml"
        write_yaml(layout, path, files, version, accel_note)
        check_link(path)
        _write_state(layout, {"ready": True, "kernel": version, "accel": accel_note, "boot_s": round(boot_s, 1),
                              "yaml": str(path.resolve())})
    except BaseException:
        down(name)
        raise
    return path


LINK_PORT = 5299


def check_link(path: Path, attempts: int = 20) -> None:
    """One TCP connection across the data link (nc, through the testbed.yaml as any run reaches the
    guests): guests whose NICs carry no frame are refused at `up`, not found out by a run (it found
    the dead links _wait_listening now prevents)."""
    from .servers import from_yaml
    tb = from_yaml(path)
    rcv, snd = tb.endpoints["receiver"].host, tb.endpoints["sender"].host
    # -k: it keeps listening, so an attempt the listener accepted but the sender gave up on (a lost
    # reply) does not leave every later attempt refused
    listener = rcv.start(["nc", "-l", "-k", DATA_IPS["receiver"], str(LINK_PORT)])
    try:
        for _ in range(attempts):  # the listener, or the NIC's carrier, may not be up yet on the first tries
            res = snd.run(["nc", "-z", "-v", "-w", "3", DATA_IPS["receiver"], str(LINK_PORT)], check=False, timeout=30)
            if res.returncode == 0:
                return
            time.sleep(1)
        raise TestbedError(f"the guests' data link carries no traffic: {DATA_IPS['sender']} cannot connect to "
                           f"{DATA_IPS['receiver']}:{LINK_PORT} ({(res.stderr or res.stdout).strip() or 'no answer'})")
    finally:
        if listener.poll() is None:
            listener.stop()


def _write_state(layout: GuestLayout, extra: dict) -> None:
    write_private(_state_file(layout.name), json.dumps({"layout": asdict(layout), **extra}, indent=2).encode())


def _prepare_files(local: LocalHost, files: Path) -> None:
    ssh = files / "ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    for key in ("client_ed25519", "host_ed25519"):
        if not (ssh / key).exists():
            local.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"hostnet-{key}", "-f", str(ssh / key)])
    (ssh / "authorized_keys").write_text((ssh / "client_ed25519.pub").read_text())
    (ssh / "sshd.conf").write_text(SSHD_CONFIG.format(mgmt_ip=GUEST_MGMT_IP))
    (files / "guest.sh").write_text(GUEST_SCRIPT)


def _wait_listening(local: LocalHost, port: int, files: Path, timeout_s: float = 60.0) -> None:
    """The receiver's QEMU connects its data link once, without blocking, and never again: started
    before the sender's QEMU listened, its guest booted with a dead link (2 of 12 e1000e boots here)."""
    deadline = time.monotonic() + timeout_s
    while not local.run(["ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip():
        if time.monotonic() > deadline:
            raise TestbedError(f"the sender's QEMU did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s: "
                               + _last_lines(_console(files, "sender")))
        time.sleep(0.2)


def _wait_ready(files: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    waiting = set(ROLES)
    while waiting:
        for role in sorted(waiting):
            text = _console(files, role)
            if "hostnet-guest-failed" in text or "Kernel panic" in text:
                raise TestbedError(f"guest {role} failed to boot: {_last_lines(text)}")
            if "Server listening on" in text:
                waiting.discard(role)
        if waiting and time.monotonic() > deadline:
            raise TestbedError(f"guests {sorted(waiting)} were not up within {timeout_s:.0f} s: "
                               + " | ".join(_last_lines(_console(files, r)) for r in sorted(waiting)))
        if waiting:
            time.sleep(0.5)


def _console(files: Path, role: str) -> str:
    try:
        return (files / f"console-{role}.log").read_text(errors="replace")
    except OSError:
        return ""


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("[")]
    return " / ".join(lines[-n:]) or "(no console output)"


def describe(layout: GuestLayout, files: Path) -> dict:
    """The testbed.yaml document (servers.SCHEMA) of the guests: each reached on its forwarded port."""
    ssh = files / "ssh"
    hosts = {role: {"address": "127.0.0.1", "port": layout.ssh_ports[role], "user": "root",
                    "key": str(ssh / "client_ed25519"), "proxy_jump": "none",
                    "data_iface": DATA_IFACE, "data_ip": DATA_IPS[role],
                    "cpus": {"app_cpus": [0], "irq_cpus": [layout.cpus - 1]}} for role in ROLES}
    return {"name": layout.servers_name, "rehearsal": LABEL,
            "ssh": {"config": False, "known_hosts": str(ssh / "known_hosts")},
            "hosts": hosts, "roles": {"senders": ["sender"], "receivers": ["receiver"]}}


def write_yaml(layout: GuestLayout, path: Path, files: Path, version: str, accel_note: str) -> None:
    host_pub = (files / "ssh" / "host_ed25519.pub").read_text().split()
    (files / "ssh" / "known_hosts").write_text("".join(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n"
                                                       for port in layout.ssh_ports.values()))
    doc = describe(layout, files)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# NIC rehearsal {layout.name!r}: two guests ({layout.nic}"
                    f"{' behind an IOMMU' if layout.iommu else ''}, Linux {version}) reached over SSH; "
                    f"valid while they are up.\n# {LABEL}; {accel_note}.\n"
                    + yaml.safe_dump(doc, sort_keys=False))


def layout_of(name: str) -> GuestLayout:
    return GuestLayout(**json.loads(_state_file(name).read_text())["layout"])


def state_of(name: str) -> dict:
    return json.loads(_state_file(name).read_text())


def has_state(name: str) -> bool:
    return _state_file(name).exists()


def names() -> list[str]:
    d = state_dir() / "guests"
    return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []


def _owner_alive(state: dict) -> bool:
    owner = state.get("owner") or {}
    return owner.get("pid") is not None and process_start_ticks(owner["pid"]) == owner.get("start_ticks")


def stale() -> list[str]:
    """Guests a dead `testbed up` left half booted (its owner died before they were ready): `hostnet
    restore` removes them (down). Guests that are up stay up; the settings a killed run changed on
    them are in their testbed.yaml's journal, which leftovers.py restores as any servers'."""
    return [n for n in names() if not state_of(n).get("ready") and not _owner_alive(state_of(n))]


def _servers_journal(name: str) -> Path:
    return state_dir() / f"{GuestLayout(name).servers_name}.journal"


def restore(name: str) -> list[str]:
    """`hostnet restore NAME`: half-booted guests of a dead session are removed; guests that are up
    stay up and get back the settings journaled on them."""
    if name in stale():
        return down(name)
    journal = _servers_journal(name)
    try:
        return restore_journal(journal) if journal.exists() else []
    except JournalBusy as exc:
        return [str(exc)]


def down(name: str) -> list[str]:
    """Put back the settings journaled on the guests (while they still run), stop them, and remove
    their files. Safe after the controller was SIGKILLed: the processes are found by their mark."""
    problems: list[str] = []
    journal = _servers_journal(name)
    if journal.exists():
        try:
            problems = restore_journal(journal)
        except JournalBusy as exc:
            raise TestbedError(f"guests {name!r}: {exc}") from exc
    _tag(name).kill_all()
    if not problems:
        shutil.rmtree(files_dir(name), ignore_errors=True)
        _state_file(name).unlink(missing_ok=True)
    return problems


def status() -> list[dict]:
    rows = []
    for n in names():
        st = state_of(n)
        rows.append({"name": n, "kind": "nic-rehearsal", **st["layout"], "ready": st.get("ready", False),
                     "kernel": st.get("kernel"), "accel_why": st.get("accel"), "boot_s": st.get("boot_s"),
                     "testbed_yaml": st.get("yaml"), "running": len(_tag(n).running())})
    return rows
