"""The embedded testbed's layout (hostnet.testbed.namespaces): names unique and short enough for
interfaces, addresses in 198.18.0.0/15 and 2001:2::/48, bad names refused."""
import ipaddress

import pytest

from hostnet.testbed import EmbeddedLayout, TestbedError


def test_layout_names_are_unique_and_short():
    lay = EmbeddedLayout("ab12")
    assert all(len(i) <= 15 for i in lay.ifaces.values())
    assert lay.netns["sender"] != EmbeddedLayout("ab13").netns["sender"]
    assert all(ip.startswith("198.18.") for ip in lay.ips.values())
    # IPv6 in RFC 5180's benchmarking range, numbered like the IPv4 ones (ss prints them compressed)
    wide = EmbeddedLayout("ab12", n_senders=9, n_receivers=9)
    bench6 = ipaddress.ip_network("2001:2::/48")
    assert all(ipaddress.ip_address(ip) in bench6 and str(ipaddress.ip_address(ip)) == ip for ip in wide.ips6.values())
    assert len(set(wide.ips6.values())) == 18 and wide.ips6["receiver8"] == "2001:2::12"  # 198.18.0.18
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


def test_a_kernel_without_ipv6_gives_an_ipv4_testbed(monkeypatch):
    """Booted with ipv6.disable=1 (no /proc/net/if_inet6): no IPv6 address is added, endpoints have
    no ip6, and an IPv6 point is refused by Endpoint.address naming the missing address."""
    from hostnet.testbed import namespaces
    monkeypatch.setattr(namespaces, "has_ipv6", lambda: False)
    tb = namespaces.from_layout(EmbeddedLayout("ab12"))
    assert tb.receiver.ip6 is None and tb.receiver.address() == "198.18.0.2"
    with pytest.raises(TestbedError, match="receiver .* has no IPv6 data address"):
        tb.receiver.address(6)
    monkeypatch.setattr(namespaces, "has_ipv6", lambda: True)
    assert namespaces.from_layout(EmbeddedLayout("ab12")).receiver.address(6) == "2001:2::2"
