"""What dead sessions left (hostnet.testbed.leftovers): a server testbed's journal (no state file,
any name the file allows) is restored only when no live process holds it, through `hostnet restore`."""
import pytest

from conftest import FakeHost, journal_held_elsewhere
from hostnet import cli
from hostnet.knobs import KNOBS, Journal
from hostnet.knobs.journal_lock import release
from hostnet.knobs.sysctl import sysctl_path
from hostnet.testbed import leftovers

RMEM = "net.ipv4.tcp_rmem"


class ServerHost(FakeHost):
    """A fake real server: described as an SshHost, as a server testbed journals it."""

    def describe(self):
        return {"name": self.name, "kind": "SshHost", "address": "lab-host-0", "user": "root", "port": 22,
                "key_filename": None, "known_hosts": None, "proxy_command": None, "sudo": False,
                "insecure_accept_unknown_keys": False}


@pytest.fixture
def server(state_dir, monkeypatch):
    """A session on lab-100g changed alpha's tcp_rmem; restores reach alpha through the rebuild."""
    alpha = ServerHost("alpha", files={sysctl_path(RMEM): "4096 131072 6291456\n"})
    path = state_dir / "lab-100g.journal"
    Journal(path).set(alpha, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    release(path)  # this test process is not the session: another process will hold it
    monkeypatch.setattr("hostnet.knobs.journal.host_from_description", lambda desc: alpha)
    return alpha, path


def test_a_live_server_session_keeps_its_journal_through_hostnet_restore(server, capsys):
    alpha, path = server
    with journal_held_elsewhere(path) as pid:
        assert leftovers.stale() == []
        assert cli.main(["restore"]) == 0
        assert "nothing to restore" in capsys.readouterr().out
        with pytest.raises(SystemExit) as exc:
            cli.main(["restore", "--name", "lab-100g"])
        assert exc.value.code != 0 and f"PID {pid}" in capsys.readouterr().err
        assert path.exists() and alpha.files[sysctl_path(RMEM)] == "4096 131072 1048576\n"


def test_a_dead_server_session_named_with_a_dash_is_restored_with_exit_0(server, capsys):
    alpha, path = server
    assert leftovers.stale() == ["lab-100g"]
    assert cli.main(["restore"]) == 0
    out = capsys.readouterr().out
    assert "restored lab-100g" in out and "--file" in out
    assert alpha.files[sysctl_path(RMEM)] == "4096 131072 6291456\n" and not path.exists()
    assert leftovers.stale() == []


def test_an_unknown_name_is_a_problem_not_a_success(state_dir, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["restore", "--name", "lab-100g"])
    assert exc.value.code != 0 and "no testbed and no journal named 'lab-100g'" in capsys.readouterr().err


def test_restore_says_which_host_wide_settings_live_testbeds_still_hold(state_dir, capsys, monkeypatch):
    """A live testbed's host-wide setting is left in place by a restore; `hostnet restore` says so."""
    flow = "net.core.rps_sock_flow_entries"
    host = FakeHost(files={sysctl_path(flow): "0\n"})
    monkeypatch.setattr("hostnet.knobs.journal.host_from_description", lambda desc: host)
    path = state_dir / "lab-live.journal"
    Journal(path).set(host, KNOBS["sysctl"], flow, "32768")
    assert cli.main(["restore"]) == 0
    out = capsys.readouterr().out
    assert "nothing to restore" in out and f"sysctl[{flow}] = '32768' by lab-live" in out
    release(path)  # the session ends: nothing held any more
    assert cli.main(["restore", "--name", "lab-live"]) == 0
    assert "held" not in capsys.readouterr().out and host.files[sysctl_path(flow)] == "0\n"
