"""The embedded testbed's layout (hostnet.testbed.namespaces): names unique and short enough for
interfaces, addresses in 198.18.0.0/15, bad names refused."""
import pytest

from hostnet.testbed import EmbeddedLayout, TestbedError


def test_layout_names_are_unique_and_short():
    lay = EmbeddedLayout("ab12")
    assert all(len(i) <= 15 for i in lay.ifaces.values())
    assert lay.netns["sender"] != EmbeddedLayout("ab13").netns["sender"]
    assert all(ip.startswith("198.18.") for ip in lay.ips.values())
    with pytest.raises(TestbedError, match="lowercase"):
        EmbeddedLayout("Bad Name")


def test_stale_tells_dead_sessions_from_live_ones_by_owner_and_journal_lock(state_dir):
    """No root needed: state files only. A dead owner's testbed is stale; a persistent testbed only
    when its journal is left by a dead session; a journal a live process holds never is."""
    import json

    from conftest import journal_held_elsewhere
    from hostnet.testbed import namespaces
    state_dir.mkdir()
    dead = {"pid": 2 ** 22 + 1, "start_ticks": 1}
    for name, persistent in (("gone", False), ("kept", True)):
        (state_dir / f"{name}.json").write_text(json.dumps({"layout": {"name": name}, "persistent": persistent,
                                                            "owner": dead}))
    assert namespaces.stale() == ["gone"]  # kept: persistent, and nothing journaled
    (state_dir / "kept.journal").write_text("")
    assert namespaces.stale() == ["gone", "kept"]
    # a server testbed's journal (no state file; its session may be live on another terminal) is
    # never an embedded testbed's leftover: `testbed up` neither restores nor deletes it
    (state_dir / "lab-100g.journal").write_text('{"host": {}, "knob": "sysctl", "key": "k", "prior": "1"}\n')
    assert namespaces.stale() == ["gone", "kept"] and (state_dir / "lab-100g.journal").exists()
    with journal_held_elsewhere(state_dir / "gone.journal"), journal_held_elsewhere(state_dir / "kept.journal"):
        assert namespaces.stale() == []
