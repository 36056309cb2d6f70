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
