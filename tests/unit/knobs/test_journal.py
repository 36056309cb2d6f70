"""The knob journal (hostnet.knobs.journal): the prior value is on disk before the first write,
survives the process, is restored; values are validated before anything is written."""
import json
from pathlib import Path

import pytest

from conftest import FakeHost, journal_held_elsewhere
from hostnet.knobs import KNOBS, Journal, KnobError, Mtu, restore_journal
from hostnet.knobs.sysctl import sysctl_path


def sysctl_host(**values):
    return FakeHost(files={sysctl_path(k): f"{v}\n" for k, v in values.items()})


def test_journal_records_prior_before_first_write_and_restores(tmp_path):
    host = sysctl_host(**{"net.ipv4.tcp_rmem": "4096 131072 6291456"})
    j = Journal(tmp_path / "j")
    j.set(host, KNOBS["sysctl"], "net.ipv4.tcp_rmem", "4096 131072 12582912")
    j.set(host, KNOBS["sysctl"], "net.ipv4.tcp_rmem", "4096 131072 1048576")
    entries = j.entries()
    assert len(entries) == 1 and entries[0]["prior"] == "4096 131072 6291456"
    assert host.files[sysctl_path("net.ipv4.tcp_rmem")] == "4096 131072 1048576\n"
    # restore rebuilds hosts from their description; patch the rebuild to our fake.
    import hostnet.knobs.journal as journal_mod
    orig = journal_mod.host_from_description
    journal_mod.host_from_description = lambda desc: host
    try:
        assert restore_journal(tmp_path / "j") == []
    finally:
        journal_mod.host_from_description = orig
    assert host.files[sysctl_path("net.ipv4.tcp_rmem")] == "4096 131072 6291456\n"
    assert not (tmp_path / "j").exists()


def test_journal_survives_a_new_process(tmp_path):
    host = sysctl_host(**{"net.core.rps_sock_flow_entries": "0"})
    Journal(tmp_path / "j").set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "32768")
    j2 = Journal(tmp_path / "j")  # a later process, e.g. `hostnet restore`
    j2.set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "4096")
    assert [e["prior"] for e in j2.entries()] == ["0"]


def test_validation_happens_before_anything_is_written(tmp_path):
    host = FakeHost(handlers={"ip": lambda a, h: (0, "", "")})
    with pytest.raises(KnobError, match="not an MTU"):
        Journal(tmp_path / "j").set(host, Mtu(), "veth0", "99999")
    assert host.commands == [] and not (tmp_path / "j").exists()


def test_journal_lines_are_json_with_scope(tmp_path):
    host = sysctl_host(**{"net.core.rps_sock_flow_entries": "0"})
    Journal(tmp_path / "j").set(host, KNOBS["sysctl"], "net.core.rps_sock_flow_entries", "1")
    line = json.loads((tmp_path / "j").read_text().splitlines()[0])
    assert line["host"] == {"name": "fake", "kind": "FakeHost"} and line["knob"] == "sysctl"


RMEM = "net.ipv4.tcp_rmem"


def restored_on(host, path, **kw):
    """restore_journal with every entry's host mapped to `host` (no rebuild from the description)."""
    return restore_journal(path, hosts=[host], **kw)


def test_torn_last_line_is_cut_before_the_next_append(tmp_path):
    """A fragment left by a crash or a full disk must not swallow the next line: the original is back."""
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    path = tmp_path / "j"
    path.write_text('{"host": {"name": "fake", "kind": "FakeHost"}, "knob": "sysctl", "ke')
    Journal(path).set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert restored_on(host, path) == []
    assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n" and not path.exists()


def test_a_failed_journal_write_changes_nothing_and_is_cut_off_later(tmp_path, monkeypatch):
    """A full disk in the middle of a line: the knob is not written, the fragment goes at the next append."""
    import errno
    import os as _os

    from hostnet.knobs import journal_file
    host = sysctl_host(**{RMEM: "4096 131072 6291456", "net.core.rmem_max": "212992"})
    path = tmp_path / "j"
    real_write = _os.write

    def half_then_enospc(fd, data):
        if len(data) > 20:
            real_write(fd, data[:20])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)
    monkeypatch.setattr(journal_file.os, "write", half_then_enospc)
    with pytest.raises(KnobError, match="No space left"):
        Journal(path).set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    monkeypatch.setattr(journal_file.os, "write", real_write)
    assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"  # never changed
    Journal(path).set(host, KNOBS["sysctl"], "net.core.rmem_max", "1048576")
    assert [e["key"] for e in Journal(path).entries()] == ["net.core.rmem_max"]
    assert restored_on(host, path) == [] and host.files[sysctl_path("net.core.rmem_max")] == "212992\n"


def test_a_bad_line_in_the_middle_is_a_problem_and_the_rest_is_restored(tmp_path):
    host = sysctl_host(**{RMEM: "4096 131072 6291456", "net.core.rmem_max": "212992"})
    path = tmp_path / "j"
    j = Journal(path)
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    with open(path, "a") as fh:
        fh.write("garbage that is not json\n")
    j.set(host, KNOBS["sysctl"], "net.core.rmem_max", "1048576")
    problems = restored_on(host, path)
    assert len(problems) == 1 and "line 2 is not a journal entry" in problems[0]
    assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"
    assert host.files[sysctl_path("net.core.rmem_max")] == "212992\n"
    assert path.exists()  # kept: a person has to look at the line that could not be read


def test_set_after_restore_writes_a_new_line(tmp_path):
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    j = Journal(tmp_path / "j")
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert j.restore() == [] and j.entries() == []
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 2097152")
    assert [e["prior"] for e in j.entries()] == ["4096 131072 6291456"]
    assert j.restore() == [] and host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"


def test_state_directory_and_journal_are_private(tmp_path):
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    path = tmp_path / "state" / "x.journal"
    j = Journal(path)
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert path.parent.stat().st_mode & 0o777 == 0o700 and path.stat().st_mode & 0o777 == 0o600
    assert (path.parent / "x.journal.lock").stat().st_mode & 0o777 == 0o600
    assert j.restore() == [] and sorted(p.name for p in path.parent.iterdir()) == []


def test_a_shared_or_linked_state_directory_is_refused_not_changed(tmp_path):
    """Issue 33: a 1777 HOSTNET_STATE_DIR lost its sticky bit to a chmod 0700."""
    from hostnet.knobs import KnobError
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(KnobError, match=r"shared: writable by other users \(mode 1777\).*HOSTNET_STATE_DIR"):
        Journal(shared / "x.journal").set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert shared.stat().st_mode & 0o7777 == 0o1777 and host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(KnobError, match=r"link: not a directory of its own \(a symlink\?\)"):
        Journal(tmp_path / "link" / "x.journal").set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"


def test_a_second_controller_is_refused_naming_the_holder(tmp_path):
    from hostnet.knobs import JournalBusy
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    path = tmp_path / "j"
    with journal_held_elsewhere(path) as pid:
        with pytest.raises(JournalBusy, match=rf"in use by PID {pid} .*-c") as exc:
            Journal(path).set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
        assert "one controller per testbed" in str(exc.value)
        assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"
        with pytest.raises(JournalBusy):
            restore_journal(path)  # nor is a live session's journal restored under it
    Journal(path).set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")  # the holder is gone
    assert restored_on(host, path) == []


def test_restore_never_runs_a_proxy_command_taken_from_the_journal(tmp_path):
    path = tmp_path / "j"
    desc = {"name": "evil", "kind": "SshHost", "address": "192.0.2.1", "user": "root", "port": 22,
            "key_filename": None, "known_hosts": None, "sudo": False, "insecure_accept_unknown_keys": False,
            "proxy_command": f"sh -c 'touch {tmp_path}/owned'"}
    path.write_text(json.dumps({"host": desc, "knob": "sysctl", "key": RMEM, "prior": "4096 131072 6291456"}) + "\n")
    problems = restore_journal(path)
    assert len(problems) == 1 and "does not run commands taken from a journal" in problems[0]
    assert not (tmp_path / "owned").exists() and path.exists()


def test_every_knob_restores_twice_to_the_snapshot_taken_before(tmp_path, monkeypatch):
    """Awkward priors (tab-separated sysctls, an existing ntuple rule, DDIO ways 0, nothing mounted):
    a restore, and the same restore again (as after a crash during the first), both clean, and the
    machine's whole state equals the snapshot taken before anything was set."""
    from conftest import FakeMachine
    import hostnet.native.build
    monkeypatch.setattr(hostnet.native.build, "ensure", lambda tool, host: f"/opt/hostnet/{tool}")
    m = FakeMachine()
    m.state["msr"] = {0: 0, 1: 0}
    m.state["ifaces"]["eth1"]["rules"][5] = {"flow-type": "tcp4", "src-ip": "10.0.0.1", "action": "0"}
    m.files.update({sysctl_path(RMEM): "4096\t131072\t6291456\n",
                    sysctl_path("net.ipv4.ip_local_port_range"): "32768\t60999\n",
                    sysctl_path("net.core.rps_sock_flow_entries"): "0\n",
                    sysctl_path("net.ipv4.tcp_congestion_control"): "cubic\n",
                    sysctl_path("net.ipv4.tcp_allowed_congestion_control"): "reno cubic\n",
                    sysctl_path("net.ipv4.tcp_available_congestion_control"): "reno cubic bbr\n"})
    plan = [(f"offload.{f}", "eth1", "on") for f in ("tso", "gso", "gro", "lro", "rx", "tx", "sg", "ntuple")] + [
        ("mtu", "eth1", "9000"), ("ring.rx", "eth1", "4096"), ("ring.tx", "eth1", "1024"),
        ("coalesce.rx-usecs", "eth1", "50"), ("coalesce.rx-frames", "eth1", "32"), ("coalesce.tx-usecs", "eth1", "8"),
        ("coalesce.tx-frames", "eth1", "16"), ("coalesce.adaptive-rx", "eth1", "on"),
        ("coalesce.adaptive-tx", "eth1", "on"),
        ("channels.rx", "eth1", "2"), ("channels.tx", "eth1", "2"), ("channels.combined", "eth1", "1"),
        ("rps_cpus", "eth1/rx-0", "3"), ("rps_flow_cnt", "eth1/rx-0", "4096"), ("xps_cpus", "eth1/tx-0", "2"),
        ("ntuple_rule", "eth1/5", "flow-type tcp4 dst-ip 198.18.0.2 dst-port 5201 action 1"),
        ("ntuple_rule", "eth1/6", "flow-type udp4 dst-port 9000 action 2"),
        ("irq_affinity", "30", "1"), ("irqbalance", "service", "stopped"),
        ("sysctl", RMEM, "4096 131072 1048576"), ("sysctl", "net.ipv4.ip_local_port_range", "20000 30000"),
        ("sysctl", "net.core.rps_sock_flow_entries", "32768"),
        ("congestion_allowed", "net.ipv4.tcp_allowed_congestion_control", "+bbr"),
        ("congestion_control", "net.ipv4.tcp_congestion_control", "bbr"), ("loss", "eth1", "0.01"),
        ("ddio_ways", "llc_ways", "0x600"), ("mount", "/sys/kernel/tracing", "mounted"),
        ("napi_threaded", "eth1", "1"), ("napi_affinity", "eth1", "1"), ("xdp", "eth1", "pass"),
        ("gro_max_size", "eth1", "0"),
        ("qdisc", "eth1", "pfifo limit 1000"),
        # BIG TCP: the GRO pair set after gro_max_size 0 moved its IPv4 limit to 0 (the kernel's coupling)
        ("link.gso_limits", "eth1", "185000/185000"), ("link.gro_limits", "eth1", "185000/185000"),
    ]
    assert {k for k, _, _ in plan} | {"iommu"} == set(KNOBS)  # iommu is read-only: nothing to restore
    before = m.snapshot()
    path = tmp_path / "j"
    j = Journal(path)
    for knob, key, value in plan:
        j.set(m, KNOBS[knob], key, value)
    assert m.snapshot() != before
    priors = {(e["knob"], e["key"]): e["prior"] for e in j.entries()}
    assert priors[("ntuple_rule", "eth1/5")] == "flow-type tcp4 src-ip 10.0.0.1 action 0"  # the rule, not "present"
    assert priors[("sysctl", "net.ipv4.ip_local_port_range")] == "32768 60999"  # no tab the validator refuses
    assert priors[("ddio_ways", "llc_ways")] == "0x0" and priors[("mount", "/sys/kernel/tracing")] == "unmounted"
    assert priors[("congestion_allowed", "net.ipv4.tcp_allowed_congestion_control")] == "reno cubic"  # whole
    text = path.read_text()
    assert restored_on(m, path) == [] and m.snapshot() == before and not path.exists()
    path.write_text(text)  # the same journal again: everything is already back
    assert restored_on(m, path) == [] and m.snapshot() == before and not path.exists()


def test_restore_rebuilds_a_jump_host_and_only_hostnets_own_namespace_proxy(tmp_path, monkeypatch):
    """A host behind a jump host (ProxyJump) is rebuilt with it; the jump host's proxy command is
    accepted only as nc in one of hostnet's namespaces (as an ssh_config's ProxyCommand reads once
    paramiko filled in %h and %p), never as a command read from the journal."""
    from hostnet.hosts import HostError, host_from_description
    monkeypatch.setattr("hostnet.hosts.netns_exists", lambda name: name == "hostnet-lab1-bst")
    jump = {"name": "gw", "kind": "SshHost", "address": "198.19.0.254", "user": "root", "port": 22,
            "key_filename": None, "known_hosts": str(tmp_path / "known_hosts"), "sudo": False,
            "insecure_accept_unknown_keys": False,
            "proxy_command": "ip netns exec hostnet-lab1-bst nc 198.19.0.254 22"}
    desc = {**jump, "name": "sender", "address": "198.19.0.1", "proxy_command": None, "proxy_jump": jump}
    host = host_from_description(desc)
    assert host.describe() == desc and host.proxy_jump.proxy_command == jump["proxy_command"]
    evil = {**desc, "proxy_jump": {**jump, "proxy_command": f"sh -c 'touch {tmp_path}/owned'"}}
    with pytest.raises(HostError, match="does not run commands taken from a journal"):
        host_from_description(evil)


def test_a_hosts_own_copy_cuts_a_torn_line_before_the_next_append(tmp_path, monkeypatch):
    """The script a server runs to keep its own copy, run here by a real sh: a fragment left by a crash
    or a full disk on the server is cut off, not glued onto the next line (the same rule as the
    controller's copy), earlier lines are kept, and the copy stays root-only."""
    from hostnet.hosts import LocalHost
    from hostnet.knobs import journal_file
    monkeypatch.setattr(journal_file, "HOST_DIR", str(tmp_path / "hostdir"))
    journal = tmp_path / "lab-100g.journal"
    copy = Path(journal_file.host_copy(journal))
    first = {"host": {"name": "alpha", "kind": "FakeHost"}, "knob": "sysctl", "key": RMEM, "prior": "1 2 3"}
    second = {**first, "key": "net.core.rmem_max", "prior": "212992"}
    host = LocalHost("controller")
    journal_file.append_on_host(host, journal, first)
    with open(copy, "a") as fh:
        fh.write('{"host": {"name": "alpha", "kind": "FakeHost"}, "knob": "sysctl", "ke')  # torn
    journal_file.append_on_host(host, journal, second)
    entries, problems = journal_file.read_on_host(host, journal)
    assert problems == [] and entries == [first, second]
    assert copy.read_text().endswith("\n") and copy.read_text().count("\n") == 2
    assert copy.parent.stat().st_mode & 0o777 == 0o700 and copy.stat().st_mode & 0o777 == 0o600
    copy.write_text('{"torn')  # a copy that is nothing but a fragment
    journal_file.append_on_host(host, journal, first)
    assert journal_file.read_on_host(host, journal) == ([first], [])


_TRY_LOCK = """
import sys
from hostnet.knobs import Journal, JournalBusy
try:
    Journal(sys.argv[1]).lock()
except JournalBusy as exc:
    print(exc)
    sys.exit(3)
"""


def test_a_restore_in_the_middle_of_a_session_keeps_the_lock(tmp_path):
    """A sweep restores after a host came back and goes on: no second controller may take the
    testbed before its next point; the session's last restore lets the lock go."""
    import os
    import subprocess
    import sys

    from conftest import REPO
    from hostnet.knobs.journal_lock import generation, lock_path
    host = sysctl_host(**{RMEM: "4096 131072 6291456"})
    path = tmp_path / "j"
    j = Journal(path)
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    assert j.restore(keep_lock=True) == [] and not path.exists()
    assert host.files[sysctl_path(RMEM)] == "4096 131072 6291456\n"
    other = subprocess.run([sys.executable, "-c", _TRY_LOCK, str(path)], capture_output=True, text=True, cwd=REPO)
    assert other.returncode == 3 and f"in use by PID {os.getpid()}" in other.stdout
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 2097152")
    assert j.restore() == [] and generation(path) is None and not lock_path(path).exists()
    assert subprocess.run([sys.executable, "-c", _TRY_LOCK, str(path)], cwd=REPO).returncode == 0


def test_each_line_is_fsynced_and_a_new_journal_s_directory_too(tmp_path, monkeypatch):
    """The line is on disk before the setting changes: the file is fsynced after every line, and
    the directory once, when the file is new (its entry must survive a crash too)."""
    import os

    from hostnet.knobs import journal_file
    synced = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), os.path.getsize(f"/proc/self/fd/{fd}")))
        real_fsync(fd)
    monkeypatch.setattr(journal_file.os, "fsync", recording_fsync)
    host = sysctl_host(**{RMEM: "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"})
    path = tmp_path / "state" / "j"
    writes = []
    monkeypatch.setattr(KNOBS["sysctl"].__class__, "write",
                        lambda self, h, k, v: writes.append((k, list(synced))))
    j = Journal(path)
    j.set(host, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    j.set(host, KNOBS["sysctl"], "net.ipv4.tcp_wmem", "4096 16384 1048576")
    first, second = writes
    assert first[1][0][0] == str(path) and first[1][0][1] > 0  # the line, before the first write
    assert first[1][1][0] == str(path.parent)  # then its new directory entry
    assert [p for p, _ in second[1][2:]] == [str(path)]  # the second line: the file only
    assert second[1][2][1] == path.stat().st_size  # synced with both lines in it


def test_a_setting_already_at_its_prior_is_not_written_again(tmp_path, monkeypatch):
    """A write that failed (a global sysctl, read-only from a namespace rehearsing a server) leaves
    the setting at its prior: restoring it must not try the write again and fail."""
    import hostnet.knobs.journal as journal_mod
    key = "net.core.rmem_max"
    host = sysctl_host(**{key: "212992"})
    real_write = type(host).write_text
    def read_only(self, path, text):
        if path == sysctl_path(key):
            from hostnet.hosts import HostError
            raise HostError(f"cannot create {path}: Permission denied")
        return real_write(self, path, text)
    monkeypatch.setattr(type(host), "write_text", read_only)
    j = Journal(tmp_path / "j")
    with pytest.raises(KnobError, match="Permission denied"):
        j.set(host, KNOBS["sysctl"], key, "4194304")
    assert j.entries()[0]["prior"] == "212992"
    monkeypatch.setattr(journal_mod, "host_from_description", lambda desc: host)
    assert restore_journal(tmp_path / "j") == [] and not (tmp_path / "j").exists()


class Silent(FakeHost):
    """A server that stopped answering: every read and write is HostUnreachable, and counted."""

    def __init__(self, name):
        super().__init__(name)
        self.tries = 0

    def read_text(self, path):
        from hostnet.hosts import HostUnreachable
        self.tries += 1
        raise HostUnreachable(f"{self.name}: unreachable (no SSH server answered)")

    write_text = read_text

    def describe(self):
        return {"name": self.name, "kind": "FakeHost", "silent": True}


def test_a_restore_tries_an_unreachable_host_once_keeps_its_settings_and_puts_back_the_rest(tmp_path):
    """An sshd killed mid-campaign: `hostnet restore` and `testbed down` looped on "Error reading SSH
    protocol banner", a connection timeout per setting (issue 45). Now the silent host is tried once
    per restore, named in one problem, and its settings stay journaled for a later restore."""
    keys = ["net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_mtu_probing"]
    gone, ok = Silent("receiver@ssh"), sysctl_host(**{k: "1" for k in keys})
    path = tmp_path / "j"
    lines = [{"host": h.describe(), "knob": "sysctl", "key": k, "prior": "1"} for h in (gone, ok) for k in keys]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for k in keys:
        ok.files[sysctl_path(k)] = "2\n"
    problems = restore_journal(path, hosts=[gone, ok])
    assert gone.tries == 1
    assert problems == [f"receiver@ssh: unreachable (no SSH server answered): 3 settings of receiver@ssh stay "
                        f"journaled in {path}; `hostnet restore` puts them back once receiver@ssh answers"]
    assert all(ok.files[sysctl_path(k)] == "1\n" for k in keys)  # the host that answers got its values back
    assert len(Journal(path).entries()) == 6  # the journal stays whole for the next try


def test_a_journal_whose_namespaces_are_gone_is_archived_with_a_note(tmp_path, monkeypatch, caplog):
    """An --ssh testbed's namespaces deleted by hand (or a reboot): every later `hostnet restore` exited 2
    with 18 errors, for every user (issue 45). Settings of a namespace went with it; a host-wide one
    set from it is this machine's and is put back from here; the journal is archived, noted."""
    import hostnet.knobs.journal as journal_mod
    monkeypatch.setattr("hostnet.hosts.netns_exists", lambda name: False)
    machine = sysctl_host(**{"net.core.rps_sock_flow_entries": "32768"})
    monkeypatch.setattr(journal_mod, "LocalHost", lambda name: machine)
    ssh = {"name": "receiver@ssh", "kind": "SshHost", "address": "198.18.0.2", "user": "root", "port": 22,
           "key_filename": None, "known_hosts": None, "sudo": False, "insecure_accept_unknown_keys": False,
           "proxy_command": "ip netns exec hostnet-k1-rcv nc %h %p"}
    ns = {"name": "sender", "kind": "NetnsHost", "netns": "hostnet-k1-snd"}
    path = tmp_path / "k1.journal"
    lines = [{"host": ssh, "knob": "sysctl", "key": RMEM, "prior": "4096 131072 6291456"},
             {"host": ns, "knob": "sysctl", "key": RMEM, "prior": "4096 131072 6291456"},
             {"host": ssh, "knob": "sysctl", "key": "net.core.rps_sock_flow_entries", "prior": "0"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import logging
    # the CLI's setup_logging (run by earlier tests in the same process) stops "hostnet" propagating
    monkeypatch.setattr(logging.getLogger("hostnet"), "propagate", True)
    with caplog.at_level("WARNING", logger="hostnet.knobs.journal"):
        assert restore_journal(path) == []
    assert machine.files[sysctl_path("net.core.rps_sock_flow_entries")] == "0\n"
    assert not path.exists()
    archived = list(tmp_path.glob("k1.journal.gone-*"))
    assert len(archived) == 2
    kept = next(p for p in archived if not p.name.endswith(".note"))
    assert kept.read_text() == "".join(json.dumps(line) + "\n" for line in lines)
    note = kept.with_name(kept.name + ".note").read_text()
    assert note == ("3 journaled settings lived in namespaces that no longer exist (hostnet-k1-rcv, hostnet-k1-snd) "
                    "and went with them (host-wide ones were put back from this machine)\n")
    assert str(kept) in caplog.text
    assert restore_journal(path) == []  # and the next restore has nothing left to do
