"""The management-interface guard (hostnet.knobs.guard): device knobs on the default-route
interface are refused before anything is written."""
import json

import pytest

from conftest import FakeHost
from hostnet.knobs import KNOBS, Journal, KnobError, Mtu


def _route_host(dev="eth0", **files):
    host = FakeHost(files=files, handlers={
        "ip": lambda argv, h: (0, json.dumps([{"dst": "default", "dev": dev}]) if "-4" in argv else "[]", "")})
    return host


def test_management_interface_is_refused_before_any_write(tmp_path):
    host = _route_host(**{"/sys/class/net/eth0/queues/rx-0/rps_cpus": "0\n"})
    j = Journal(tmp_path / "j")
    with pytest.raises(KnobError, match="refusing to change eth0"):
        j.set(host, Mtu(), "eth0", "9000")
    with pytest.raises(KnobError, match="refusing to change eth0"):
        j.set(host, KNOBS["rps_cpus"], "eth0/rx-0", "2")
    assert not (tmp_path / "j").exists()
    assert all(c[0] == "ip" and "route" in c for c in host.commands)
    assert host.files["/sys/class/net/eth0/queues/rx-0/rps_cpus"] == "0\n"
