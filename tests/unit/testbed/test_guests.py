"""The NIC rehearsal testbed (hostnet.testbed.guests, guest_boot) without booting a guest: the QEMU wiring it
asks virtme-ng for, the testbed.yaml it writes, what it refuses, and what a dead session leaves.
The guests themselves boot in tests/live/test_live_nic_rehearsal.py."""
import json
import os
import re
from pathlib import Path

import pytest

from hostnet.testbed import guest_boot, guests, leftovers, servers
from hostnet.testbed.base import TestbedError

KVM_PVM_CPUINFO = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sse2 ht syscall nx lm\n"
VMX_CPUINFO = KVM_PVM_CPUINFO.replace(" lm\n", " lm vmx ept\n")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTNET_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def layout(nic="e1000e", iommu=False):
    return guest_boot.GuestLayout("nr1", nic, iommu, ssh_ports={"sender": 40001, "receiver": 40002}, data_port=40003)


def qemu_opts(argv):
    return argv[argv.index("--qemu-opts") + 1:]


def test_kvm_is_used_only_with_hardware_virtualisation():
    assert guest_boot.choose_accel(VMX_CPUINFO, True)[0] == "kvm"
    accel, why = guest_boot.choose_accel(KVM_PVM_CPUINFO, True)  # this machine: /dev/kvm is kvm-pvm
    assert accel == "tcg" and "kvm-pvm" in why and "not used" in why
    assert guest_boot.choose_accel(VMX_CPUINFO, False) == ("tcg", "QEMU TCG: no usable /dev/kvm")


def test_the_sender_listens_for_the_data_link_and_the_receiver_connects_on_loopback():
    snd = qemu_opts(guest_boot.virtme_argv(layout(), "sender", "virtme-run", Path("/k/vmlinuz"), Path("/f")))
    rcv = qemu_opts(guest_boot.virtme_argv(layout(), "receiver", "virtme-run", Path("/k/vmlinuz"), Path("/f")))
    assert "socket,id=data,listen=127.0.0.1:40003" in snd and "socket,id=data,connect=127.0.0.1:40003" in rcv
    assert "e1000e,netdev=data,mac=52:54:00:02:00:01" in snd and "e1000e,netdev=data,mac=52:54:00:02:00:02" in rcv


def test_the_management_link_is_restricted_user_networking_with_one_loopback_port():
    opts = qemu_opts(guest_boot.virtme_argv(layout(), "receiver", "virtme-run", Path("/k"), Path("/f")))
    assert "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:40002-:22" in opts
    assert "virtio-net-pci,netdev=mgmt,mac=52:54:00:01:00:02" in opts


def test_no_address_but_loopback_and_the_guests_own_ranges_appears_in_the_command():
    """The network rule: a guest's traffic goes to loopback (QEMU's sockets, the forwarded port) or
    stays inside the guests (198.18.2.0/24 data, QEMU's user network 10.0.2.0/24 behind restrict=on)."""
    for nic in guest_boot.NICS:
        for role in guest_boot.ROLES:
            text = " ".join(guest_boot.virtme_argv(layout(nic, True), role, "virtme-run", Path("/k"), Path("/f")))
            for ip in re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", text):
                assert ip.startswith(("127.0.0.1", "198.18.2.", "10.0.2.")), ip


def test_tcg_is_asked_for_unless_kvm_was_chosen():
    argv = guest_boot.virtme_argv(layout(), "sender", "virtme-run", Path("/k"), Path("/f"))
    assert "--disable-kvm" in argv
    kvm = layout()
    kvm.accel = "kvm"
    assert "--disable-kvm" not in guest_boot.virtme_argv(kvm, "sender", "virtme-run", Path("/k"), Path("/f"))


def test_the_iommu_puts_a_modern_virtio_nic_behind_an_emulated_intel_iommu():
    argv = guest_boot.virtme_argv(layout("virtio", True), "sender", "virtme-run", Path("/k"), Path("/f"))
    opts = qemu_opts(argv)
    assert "intel-iommu" in opts
    # no ATS: with ats=on and device-iotlb=on nothing crossed the link (QEMU 7.2, TCG)
    assert any(o.startswith("virtio-net-pci-non-transitional,iommu_platform=on,netdev=data") for o in opts)
    assert "intel_iommu=on" in argv and "iommu.passthrough=0" in argv
    plain = guest_boot.virtme_argv(layout("virtio"), "sender", "virtme-run", Path("/k"), Path("/f"))
    assert "intel_iommu=on" not in plain and not any("intel-iommu" in o for o in qemu_opts(plain))


def test_the_guest_script_gets_its_files_role_address_and_macs():
    kernel = Path("/k/boot/vmlinuz-6.1.0-56-amd64")
    argv = guest_boot.virtme_argv(layout(), "receiver", "virtme-run", kernel, Path("/f"))
    script = argv[argv.index("--script-sh") + 1]
    assert script == "sh /f/guest.sh /f receiver 198.18.2.2 52:54:00:02:00:02 52:54:00:01:00:02"
    rodirs = [argv[i + 1] for i, a in enumerate(argv) if a == "--rodir"]
    assert rodirs == ["/k", "/f"]  # the kernel's modules and the testbed's files, over the overlays


def test_layout_refuses_bad_names_and_nics():
    with pytest.raises(TestbedError, match="1-8 lowercase"):
        guest_boot.GuestLayout("Bad_Name")
    with pytest.raises(TestbedError, match="one of e1000e, virtio"):
        guest_boot.GuestLayout("nr1", "mlx5")


def test_a_missing_guest_kernel_is_named_with_the_command_that_installs_it(tmp_path):
    with pytest.raises(guest_boot.GuestsUnsupported, match="make guest-kernel"):
        guest_boot.find_kernel(tmp_path)
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot/vmlinuz-6.1.0-47-amd64").write_bytes(b"")
    with pytest.raises(guest_boot.GuestsUnsupported, match="no modules.dep"):
        guest_boot.find_kernel(tmp_path)
    mods = tmp_path / "lib/modules/6.1.0-47-amd64"
    mods.mkdir(parents=True)
    (mods / "modules.dep").write_text("")
    assert guest_boot.find_kernel(tmp_path) == (tmp_path / "boot/vmlinuz-6.1.0-47-amd64", "6.1.0-47-amd64")


def test_the_testbed_yaml_is_a_valid_servers_file_reaching_each_guest_on_its_port(tmp_path, state):
    files = tmp_path / "files"
    (files / "ssh").mkdir(parents=True)
    (files / "ssh" / "host_ed25519.pub").write_text("ssh-ed25519 AAAAC3Nza hostnet-host\n")
    path = tmp_path / "testbed.yaml"
    guests.write_yaml(layout(), path, files, "6.1.0-47-amd64", "QEMU TCG")
    doc = servers.load(path)
    assert doc["name"] == "nr1-guests" and doc["roles"] == {"senders": ["sender"], "receivers": ["receiver"]}
    assert {h["port"] for h in doc["hosts"].values()} == {40001, 40002}
    assert all(h["address"] == "127.0.0.1" and h["data_iface"] == "data0" and h["proxy_jump"] == "none"
               for h in doc["hosts"].values())
    assert guests.LABEL in path.read_text()
    assert (files / "ssh" / "known_hosts").read_text().splitlines() == [
        "[127.0.0.1]:40001 ssh-ed25519 AAAAC3Nza", "[127.0.0.1]:40002 ssh-ed25519 AAAAC3Nza"]
    tb = servers.from_yaml(path)
    assert tb.journal.path.name == "nr1-guests.journal"  # its own journal, not the guests' state
    # every run on the guests records why it is no measurement, and analysis leaves it out
    assert doc["rehearsal"] == guests.LABEL and tb.describe()["rehearsal"] == guests.LABEL
    # and a capability record's label (notebooks 09 and 10) says it, as every section's label does
    from hostnet.testbed import record
    assert record.detect_testbed(str(path))[0] == f"servers testbed from testbed.yaml [REHEARSAL: {guests.LABEL}]"


def write_state(state_dir: Path, name: str, ready: bool, pid: int) -> None:
    d = state_dir / "guests"
    (d / name).mkdir(parents=True)
    (d / f"{name}.json").write_text(json.dumps({"layout": {"name": name}, "ready": ready,
                                                "owner": {"pid": pid, "start_ticks": -1}}))


def test_half_booted_guests_of_a_dead_session_are_stale_and_restore_removes_them(state):
    write_state(state, "nr1", ready=False, pid=2 ** 22 + 1)  # no such process
    write_state(state, "nr2", ready=True, pid=2 ** 22 + 1)  # up: it stays up
    assert guests.stale() == ["nr1"]
    assert "nr1" in leftovers.stale() and "nr2" not in leftovers.stale()
    assert leftovers.restore("nr1") == []
    assert not (state / "guests" / "nr1.json").exists() and not (state / "guests" / "nr1").exists()
    assert leftovers.restore("nr2") == [] and (state / "guests" / "nr2.json").exists()


def test_guests_booting_under_a_live_owner_are_not_stale(state):
    from hostnet.hosts import process_start_ticks
    d = state / "guests"
    d.mkdir(parents=True)
    (d / "nr1.json").write_text(json.dumps({"layout": {"name": "nr1"}, "ready": False, "owner": {
        "pid": os.getpid(), "start_ticks": process_start_ticks(os.getpid())}}))
    assert guests.stale() == []


def test_embedded_testbeds_do_not_read_the_guests_state(state):
    from hostnet.testbed import namespaces
    write_state(state, "nr1", ready=False, pid=2 ** 22 + 1)
    assert namespaces.stale() == [] and namespaces.status() == []


def test_testbed_up_nic_without_a_guest_kernel_says_so_in_one_line(tmp_path, state, monkeypatch, capsys):
    from hostnet import cli
    monkeypatch.setenv("HOSTNET_GUEST_KERNEL", str(tmp_path / "none"))
    monkeypatch.setattr(guests, "preflight", lambda local: (_ for _ in ()).throw(
        guest_boot.GuestsUnsupported(f"no guest kernel in {tmp_path / 'none'}: run `make guest-kernel`")))
    with pytest.raises(SystemExit) as exc:
        cli.main(["testbed", "up", "--nic", "e1000e", "--name", "nr1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unsupported: no guest kernel" in err and "make guest-kernel" in err


def test_testbed_up_nic_refuses_embedded_only_options(state, capsys):
    from hostnet import cli
    with pytest.raises(SystemExit):
        cli.main(["testbed", "up", "--nic", "virtio", "--ssh"])
    assert "--ssh, --bastion, --senders and --receivers do not apply" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["testbed", "up", "--iommu"])
    assert "--iommu needs --nic" in capsys.readouterr().err


class _Listener:
    def __init__(self):
        self.stopped = False

    def poll(self):
        return 0 if self.stopped else None

    def stop(self):
        self.stopped = True


def _link_testbed(monkeypatch, answers):
    from conftest import FakeHost
    from hostnet.testbed import Endpoint, Testbed
    listener = _Listener()
    rcv = FakeHost("receiver")
    rcv.start = lambda argv: (rcv.commands.append(list(argv)), listener)[1]
    snd = FakeHost("sender", handlers={"nc": lambda argv, h: answers.pop(0)})
    eps = {"sender": Endpoint("sender", snd, "data0", "198.18.2.1", [0], "sender"),
           "receiver": Endpoint("receiver", rcv, "data0", "198.18.2.2", [0], "receiver")}
    monkeypatch.setattr(servers, "from_yaml", lambda path: Testbed("nr1-guests", "servers", eps, {}, None))
    monkeypatch.setattr(guests.time, "sleep", lambda s: None)
    return rcv, snd, listener


def test_the_data_link_is_checked_with_one_connection_across_it(monkeypatch):
    rcv, snd, listener = _link_testbed(monkeypatch, [(1, "", "Connection refused"), (0, "", "")])
    guests.check_link(Path("tb.yaml"))
    assert rcv.commands == [["nc", "-l", "-k", "198.18.2.2", "5299"]]
    assert snd.commands[-1] == ["nc", "-z", "-v", "-w", "3", "198.18.2.2", "5299"] and len(snd.commands) == 2
    assert listener.stopped


def test_a_dead_data_link_refuses_the_guests_naming_what_failed(monkeypatch):
    _, _, listener = _link_testbed(monkeypatch, [(1, "", "nc: connect to 198.18.2.2 port 5299 (tcp) failed: "
                                                          "No route to host")] * 3)
    with pytest.raises(TestbedError, match="data link carries no traffic: 198.18.2.1 cannot connect to "
                                           "198.18.2.2:5299 .*No route to host"):
        guests.check_link(Path("tb.yaml"), attempts=3)
    assert listener.stopped


def test_the_receiver_waits_until_the_sender_s_qemu_listens_for_the_data_link(tmp_path, monkeypatch):
    """QEMU's socket link connects once, without blocking: a receiver started before the sender
    listened booted with a dead link. `up` asks ss until the sender's QEMU listens."""
    from conftest import FakeHost
    answers = ["", "", "LISTEN 0 1 127.0.0.1:40003 0.0.0.0:*\n"]
    local = FakeHost(handlers={"ss": lambda argv, h: (0, answers.pop(0), "")})
    monkeypatch.setattr(guests.time, "sleep", lambda s: None)
    guests._wait_listening(local, 40003, tmp_path)
    assert local.commands == [["ss", "-Hltn", "sport = :40003"]] * 3
    never = FakeHost(handlers={"ss": lambda argv, h: (0, "", "")})
    (tmp_path / "console-sender.log").write_text("qemu-system-x86_64: -netdev socket: Address already in use\n")
    with pytest.raises(TestbedError, match="did not listen on 127.0.0.1:40003 within 0 s: .*Address already in use"):
        guests._wait_listening(never, 40003, tmp_path, timeout_s=0)
