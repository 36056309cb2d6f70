"""Host-wide settings owned once per machine (hostnet.knobs.machine): two testbeds on one machine
share its global sysctls and mounts; the second records the machine's real baseline, a
different value is refused naming the holder, and only the last holder puts the baseline back."""
import json

import pytest

from conftest import FakeHost, journal_held_elsewhere
from hostnet.knobs import KNOBS, Journal, restore_journal
from hostnet.knobs.journal_lock import release
from hostnet.knobs.machine import LEDGER, Ledger, SettingHeld, is_global, machine_of
from hostnet.knobs.sysctl import sysctl_path

FLOW = "net.core.rps_sock_flow_entries"


def machine(**values):
    return FakeHost(files={sysctl_path(k): f"{v}\n" for k, v in values.items()})


def value(host, key=FLOW):
    return host.files[sysctl_path(key)].strip()


def restore(path, host):
    return restore_journal(path, hosts=[host])


def test_which_settings_are_host_wide():
    assert is_global(KNOBS["sysctl"], FLOW) and not is_global(KNOBS["sysctl"], "net.ipv4.tcp_rmem")
    assert is_global(KNOBS["mount"], "/sys/kernel/tracing") and not is_global(KNOBS["mtu"], "veth0")
    assert machine_of({"kind": "LocalHost", "name": "a"}) == machine_of({"kind": "NetnsHost", "name": "b"})
    assert machine_of({"kind": "SshHost", "address": "198.18.0.2", "user": "root", "port": 22}) == \
        "ssh:root@198.18.0.2:22"


def test_two_testbeds_at_once_the_second_records_the_real_baseline_and_the_last_restores_it(tmp_path):
    """The issue's case: both apply all-opts; A finishes first. Before, A wrote 0 back under B's
    window, B's manifest said 32768, and B's own restore then left 32768 on the machine."""
    host = machine(**{FLOW: "0"})
    a, b = Journal(tmp_path / "a.journal"), Journal(tmp_path / "b.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    b.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert [e["prior"] for e in b.entries()] == ["0"] and b.entries()[0]["scope"] == "global"
    assert restore(a.path, host) == [] and value(host) == "32768"  # B still holds it
    assert restore(b.path, host) == [] and value(host) == "0"  # the last holder puts it back
    assert not (tmp_path / LEDGER).exists()


def test_a_second_testbed_needing_another_value_is_refused_naming_the_holder(tmp_path):
    host = machine(**{FLOW: "0"})
    a, b = Journal(tmp_path / "a.journal"), Journal(tmp_path / "b.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    with pytest.raises(SettingHeld, match=r"held at '32768' by the testbed of .*a\.journal.*needs '0'"):
        b.set(host, KNOBS["sysctl"], FLOW, "0")
    assert value(host) == "32768"
    a.set(host, KNOBS["sysctl"], FLOW, "0")  # its only holder may change it (the next point of a sweep)
    assert restore(b.path, host) == [] and value(host) == "0"
    assert restore(a.path, host) == [] and value(host) == "0"


def test_a_holder_in_another_live_process_is_respected(tmp_path):
    """Liveness is the journal's lock: held by another process, its hold stands."""
    host = machine(**{FLOW: "0"})
    other = tmp_path / "other.journal"
    Ledger(tmp_path).baseline({"name": "fake", "kind": "FakeHost"}, "sysctl", FLOW, lambda: "0")
    with journal_held_elsewhere(other):
        Ledger(tmp_path).claim({"name": "fake", "kind": "FakeHost"}, "sysctl", FLOW, "32768", other, "0",
                               write=lambda: None, same=str.__eq__)
        with pytest.raises(SettingHeld, match="other.journal"):
            Journal(tmp_path / "b.journal").set(host, KNOBS["sysctl"], FLOW, "4096")
    Journal(tmp_path / "b.journal").set(host, KNOBS["sysctl"], FLOW, "4096")  # that process ended
    assert value(host) == "4096"


def test_a_killed_sessions_value_is_not_taken_for_the_baseline(tmp_path):
    """A dies holding 32768 (its journal left for `hostnet restore`): B records 0, may change the
    setting, puts 0 back; A's restore later finds nothing left to do."""
    host = machine(**{FLOW: "0"})
    a = Journal(tmp_path / "a.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    release(a.path)  # as if killed: the kernel dropped its lock, the journal stays
    b = Journal(tmp_path / "b.journal")
    b.set(host, KNOBS["sysctl"], FLOW, "4096")
    assert [e["prior"] for e in b.entries()] == ["0"]
    assert restore(b.path, host) == [] and value(host) == "0"
    assert restore(a.path, host) == [] and value(host) == "0" and not a.path.exists()


def test_a_restored_dead_session_lets_the_next_testbed_read_a_fresh_baseline(tmp_path):
    host = machine(**{FLOW: "0"})
    a = Journal(tmp_path / "a.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert restore(a.path, host) == []
    host.files[sysctl_path(FLOW)] = "2048\n"  # an operator changed it since
    b = Journal(tmp_path / "b.journal")
    b.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert [e["prior"] for e in b.entries()] == ["2048"]


def test_a_journal_from_before_the_ledger_restores_its_own_prior(tmp_path):
    host = machine(**{FLOW: "32768"})
    path = tmp_path / "old.journal"
    path.write_text(json.dumps({"host": {"name": "fake", "kind": "FakeHost"}, "knob": "sysctl", "key": FLOW,
                                "prior": "0", "scope": "netns", "on_host": False}) + "\n")
    assert restore(path, host) == [] and value(host) == "0"


def test_mounts_are_shared_the_same_way(tmp_path):
    from conftest import FakeMachine
    host = FakeMachine()
    a, b = Journal(tmp_path / "a.journal"), Journal(tmp_path / "b.journal")
    a.set(host, KNOBS["mount"], "/sys/kernel/tracing", "mounted")
    b.set(host, KNOBS["mount"], "/sys/kernel/tracing", "mounted")
    assert restore(a.path, host) == []
    assert KNOBS["mount"].read(host, "/sys/kernel/tracing") == "mounted"  # B's probe still reads it
    assert restore(b.path, host) == []
    assert KNOBS["mount"].read(host, "/sys/kernel/tracing") == "unmounted"


def test_the_ledger_is_private_and_a_damaged_one_is_an_error_not_a_guess(tmp_path):
    from hostnet.knobs import KnobError
    host = machine(**{FLOW: "0"})
    a = Journal(tmp_path / "a.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert ((tmp_path / LEDGER).stat().st_mode & 0o777) == 0o600
    held = Ledger(tmp_path).held()
    assert [(e["key"], e["prior"], list(e["holders"].values())) for e in held] == [(FLOW, "0", ["32768"])]
    (tmp_path / LEDGER).write_text("{not json")
    with pytest.raises(KnobError, match="not a machine ledger"):
        Journal(tmp_path / "b.journal").set(host, KNOBS["sysctl"], FLOW, "32768")


def test_a_setting_nobody_holds_leaves_the_ledger_when_it_is_listed(tmp_path):
    """A session killed between its baseline and its claim leaves an entry without holders."""
    ledger = Ledger(tmp_path)
    ledger.baseline({"name": "fake", "kind": "FakeHost"}, "sysctl", FLOW, lambda: "0")
    assert (tmp_path / LEDGER).exists()
    assert ledger.held() == [] and not (tmp_path / LEDGER).exists()


def test_testbeds_journaling_in_two_state_dirs_share_the_machines_one_ledger(tmp_path):
    """#45: the ledger lived in each state dir, so two users (or HOSTNET_STATE_DIR set in one shell)
    undid each other's host-wide settings: rps_sock_flow_entries was left at 32768 where the
    baseline was 0. Now one ledger per machine, whatever dir a session journals in."""
    host = machine(**{FLOW: "0"})
    a = Journal(tmp_path / "alice" / "state" / "a.journal")
    b = Journal(tmp_path / "bob" / "state" / "b.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    with pytest.raises(SettingHeld, match=r"held at '32768' by the testbed of .*alice/state/a\.journal"):
        b.set(host, KNOBS["sysctl"], FLOW, "0")
    b.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert [e["prior"] for e in b.entries()] == ["0"]  # the machine's baseline, not A's value
    assert restore(a.path, host) == [] and value(host) == "32768"  # B still holds it
    assert restore(b.path, host) == [] and value(host) == "0"
    assert (tmp_path / LEDGER).exists() is False  # the machine's ledger (this test's), emptied
    assert not (tmp_path / "alice" / "state" / LEDGER).exists()


def test_a_ledger_entry_of_an_earlier_boot_is_not_believed_over_the_machines_value(tmp_path):
    """#45: after a reboot a stale entry's recorded value beat the machine's real baseline."""
    host = machine(**{FLOW: "0"})
    host.files["/proc/sys/kernel/random/boot_id"] = "boot-1\n"
    a = Journal(tmp_path / "a.journal")
    a.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert json.loads((tmp_path / LEDGER).read_text())["settings"][f"local sysctl {FLOW}"]["boot"] == "boot-1"
    # the machine reboots (its settings back to their defaults, 4096 here); A's journal was never restored
    host.files["/proc/sys/kernel/random/boot_id"] = "boot-2\n"
    host.files[sysctl_path(FLOW)] = "4096\n"
    b = Journal(tmp_path / "b.journal")
    b.set(host, KNOBS["sysctl"], FLOW, "32768")
    assert [e["prior"] for e in b.entries()] == ["4096"]  # read now, not the earlier boot's 0


def test_roots_sessions_share_run_hostnet_and_another_users_keeps_its_own(monkeypatch, tmp_path):
    """/run/hostnet is root's (0700): a session of another user, which cannot change host-wide
    settings, keeps its ledger in its state directory instead of failing on it."""
    from hostnet.knobs import machine as m
    monkeypatch.delenv("HOSTNET_LEDGER_DIR")
    monkeypatch.setattr(m.os, "geteuid", lambda: 0)
    assert Ledger(fallback=tmp_path).path == m.Path("/run/hostnet/machine.ledger")
    monkeypatch.setattr(m.os, "geteuid", lambda: 1000)
    assert Ledger(fallback=tmp_path).path == tmp_path / LEDGER
    monkeypatch.setenv("HOSTNET_LEDGER_DIR", str(tmp_path / "t"))
    assert Ledger(fallback=tmp_path).path == tmp_path / "t" / LEDGER
