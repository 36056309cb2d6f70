"""What boots a NIC rehearsal guest (guests.py brings the two up and down): its layout (the NIC under test,
the IOMMU, the loopback ports of its links), Debian's kernel unpacked for it, KVM or TCG, the init
script and sshd config it runs, and the virtme-ng command that boots it (pure: tested on its argv).
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from .base import TestbedError

# e1000 (82540EM) is the one with a legacy INTx line instead of MSI-X vectors
NICS = ("e1000e", "virtio", "e1000")
ROLES = ("sender", "receiver")
DATA_IFACE, MGMT_IFACE = "data0", "mgmt0"
# The guests' data network: its own /24 of the benchmarking range, apart from the embedded testbed's.
DATA_IPS = {"sender": "198.18.2.1", "receiver": "198.18.2.2"}
GUEST_MGMT_IP = "10.0.2.15"  # QEMU's user network gives the guest this address; restrict=on keeps it inside
MEMORY_MB, CPUS = 1024, 2
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
