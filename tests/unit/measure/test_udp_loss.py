"""hostnet.measure.udp_loss: the UDP loss point's placement and knob settings, and what a host must allow."""

from conftest import FakeHost
from hostnet.measure import udp_loss
from hostnet.knobs import Journal
from hostnet.testbed import Endpoint, Testbed
from hostnet.derive.workloads import UdpRate


def _testbed(tmp_path, receiver_cpus, receiver_machine="local"):
    hosts = {"local": FakeHost("local"), "rx": FakeHost("rx")}
    eps = {"sender": Endpoint("sender", FakeHost("snd"), "vs", "198.18.0.1", [0], "local"),
           "receiver": Endpoint("receiver", FakeHost("rcv"), "vr", "198.18.0.2", receiver_cpus, receiver_machine)}
    return Testbed("t", "embedded", eps, {m: hosts[m] for m in {"local", receiver_machine}}, Journal(tmp_path / "j"))


def test_confound_and_knob_settings(tmp_path):
    w = UdpRate(2, 1, app_cpu="different", socket_buffer_kb=4096)
    p = udp_loss.placement(_testbed(tmp_path, [1]), w)
    assert p["confounded"] and "sender also uses" in p["note"]
    assert not udp_loss.placement(_testbed(tmp_path, [1], "rx"), w)["confounded"]  # sender on another machine
    assert not udp_loss.placement(_testbed(tmp_path, [1, 2]), w)["confounded"]
    got = {(s.place.label, s.knob.name, s.key): s.value for s in udp_loss.settings(_testbed(tmp_path, [3]), w)}
    assert got == {("receiver", "rps_cpus", "vr/rx-0"): "8", ("receiver", "rps_flow_cnt", "vr/rx-0"): "0",
                   ("machine:local", "sysctl", "net.core.rmem_max"): str(4096 * 1024)}


def test_a_receiver_that_cannot_raise_rmem_max_is_refused_before_any_setting():
    """A network namespace (the rehearsal of servers) sees init_net's net.core.rmem_max read-only."""
    from conftest import FakeHost, servers_testbed
    from hostnet.measure import udp_loss
    asked = []
    def test_w(code):
        return lambda argv, h: (asked.append(argv) or code, "", "")
    assert udp_loss.requirements(servers_testbed(FakeHost("rx", handlers={"test": test_w(0)}))) == []
    problems = udp_loss.requirements(servers_testbed(FakeHost("rx", handlers={"test": test_w(1)})))
    assert problems == ["rx: net.core.rmem_max is read-only here (a network namespace?); UDP loss points size "
                        "the receive buffer through it"]
    assert asked == [["test", "-w", "/proc/sys/net/core/rmem_max"]] * 2
