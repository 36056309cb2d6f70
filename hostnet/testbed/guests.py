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

What boots one guest (its layout, kernel, init script and virtme-ng's command) is guest_boot.py's;
here: bringing the two up (preflight, boot, the data link checked, the testbed.yaml), their state,
down and restore. State lives under state_dir()/guests/ (NAME.json and NAME/: keys, the guest
script, the consoles).
QEMU and virtme-ng carry the testbed's process mark, so `down` and `hostnet restore` stop them
after the controller was killed, even mid-boot.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

import yaml

from ..hosts import LocalHost, ProcessTag, process_start_ticks
from ..hosts.base import write_private
from ..knobs import JournalBusy, restore_journal
from ..knobs.journal_lock import private_dir
from .base import TestbedError, state_dir
from .guest_boot import (DATA_IFACE, DATA_IPS, GUEST_MGMT_IP, GUEST_SCRIPT, MEMORY_MB, ROLES, SSHD_CONFIG, GuestLayout,
                         GuestsUnsupported, choose_accel, find_kernel, free_port, kernel_dir, virtme_argv)
from . import servers

BOOT_TIMEOUT_S = 240.0
LABEL = "emulated NIC under TCG: functional rehearsal, not a measurement"


def files_dir(name: str) -> Path:
    return state_dir() / "guests" / name


def _state_file(name: str) -> Path:
    return state_dir() / "guests" / f"{name}.json"


def _tag(name: str) -> ProcessTag:
    return ProcessTag(f"{state_dir()}/guests/{name}")


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
    tb = servers.from_yaml(path)
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
