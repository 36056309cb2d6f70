"""A testbed for a with-block (hostnet.testbed.session.using): restore problems always reach the
caller, also when the block failed (a section that catches the block's exception cannot drop
them), and `hostnet run --testbed` exits non-zero on them; a second controller is refused."""
import pytest

from conftest import FakeHost, journal_held_elsewhere
from hostnet import cli
from hostnet.testbed import Endpoint, RestoreError, Testbed, TestbedError, session
from hostnet.testbed.capabilities import MissingCapability


class FailingJournal:
    """A journal one of whose settings could not be put back."""

    def lock(self):
        pass

    def restore(self):
        return ["could not put mtu[eth1] on rx back to '1500': device busy"]


def attached(journal):
    eps = {r: Endpoint(r, FakeHost(r), "eth1", ip, [0], r) for r, ip in (("sender", "198.18.0.1"),
                                                                         ("receiver", "198.18.0.2"))}
    return Testbed("up1", "embedded", eps, {"local": FakeHost()}, journal)


def test_restore_problems_are_raised_over_the_blocks_own_exception(monkeypatch):
    monkeypatch.setattr(session, "attach", lambda name: attached(FailingJournal()))
    with pytest.raises(RestoreError, match="device busy") as exc:
        try:
            with session.using("up1"):
                raise MissingCapability("no DDIO here")
        except MissingCapability:  # what numa.collect and dca_iommu.collect catch
            pytest.fail("the restore problem was dropped with the refusal")
    assert isinstance(exc.value.__context__, MissingCapability) and exc.value.problems


def test_hostnet_run_on_a_testbed_exits_non_zero_on_restore_problems(monkeypatch, capsys):
    from hostnet.measure import sweep
    monkeypatch.setattr("hostnet.cli.live_edge.require_live", lambda tools=(): None)
    monkeypatch.setattr(session, "attach", lambda name: attached(FailingJournal()))
    monkeypatch.setattr(sweep, "run_configs", lambda tb, spec, **kw: [])
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "single-flow", "--config", "all-opts", "--testbed", "up1", "--quiet"])
    assert exc.value.code != 0 and "could not restore: could not put mtu[eth1]" in capsys.readouterr().err


def test_a_second_controller_is_refused_before_the_block_runs(monkeypatch, tmp_path):
    from hostnet.knobs import Journal
    path = tmp_path / "up1.journal"
    monkeypatch.setattr(session, "attach", lambda name: attached(Journal(path)))
    with journal_held_elsewhere(path) as pid:
        with pytest.raises(TestbedError, match=f"in use by PID {pid}"):
            with session.using("up1"):
                pytest.fail("a second controller ran")
