"""Threaded NAPI knobs (hostnet.knobs.napi): NAPI threads found by name in captured ps output,
their affinity read from /proc and set with taskset, the kernel's refusal explained."""
import pytest

from conftest import FakeHost, fixture_text
from hostnet.hosts import HostError
from hostnet.knobs import KnobError, NapiAffinity, NapiThreaded
from hostnet.knobs.napi import is_napi_thread_of, parse_allowed, parse_ps


def test_threads_found_by_name_in_captured_ps():
    procs = parse_ps(fixture_text("ps_eo_pid_comm_napi.txt"))
    assert [p for p, c in procs if is_napi_thread_of(c, "hxr")] == [16674]
    assert [p for p, c in procs if is_napi_thread_of(c, "hxs")] == [16726]
    assert not [p for p, c in procs if is_napi_thread_of(c, "hx")]


def test_cut_names_match_the_interfaces_they_could_be():
    assert is_napi_thread_of("napi/hnabcdefgs", "hnabcdefgs")  # 15 characters: the id was cut off
    assert is_napi_thread_of("napi/hnabcdefgs", "hnabcdefgs1")
    assert not is_napi_thread_of("napi/hnabcdefgs", "hnabcdefgr")
    assert not is_napi_thread_of("napi/eth0-x", "eth0")


def test_affinity_read_from_proc_and_pinned_with_taskset():
    status = fixture_text("proc_pid_status_napi.txt")
    assert parse_allowed(status) == "1"
    def taskset(argv, h):  # the thread's Cpus_allowed_list becomes what was asked
        h.files["/proc/16674/status"] = status.replace("Cpus_allowed_list:\t1", f"Cpus_allowed_list:\t{argv[2]}")
        return 0, "", ""
    host = FakeHost(files={"/proc/16674/status": status},
                    handlers={"ps": lambda argv, h: (0, fixture_text("ps_eo_pid_comm_napi.txt"), ""),
                              "taskset": taskset})
    k = NapiAffinity()
    assert k.read(host, "hxr") == "1"
    k.write(host, "hxr", "1")  # already so: read, nothing pinned
    assert not any(c[0] == "taskset" for c in host.commands)
    k.write(host, "hxr", "0")
    assert ["taskset", "-pc", "0", "16674"] in host.commands and k.read(host, "hxr") == "0"
    assert k.read(host, "nothere") == "none"
    n = len(host.commands)
    k.write(host, "hxr", "none")  # the threads go when `threaded` is put back: nothing to do
    assert host.commands[n:] == []


def test_pinning_without_threads_is_an_error():
    host = FakeHost(handlers={"ps": lambda argv, h: (0, "1 init\n", "")})
    with pytest.raises(KnobError, match="no NAPI thread"):
        NapiAffinity().write(host, "hxr", "1")


class RefusingHost(FakeHost):
    def write_text(self, path, text):
        raise HostError("write /sys/class/net/hxr/threaded: Input/output error")


def test_threaded_refusal_says_why():
    host = RefusingHost(files={"/sys/class/net/hxr/threaded": "0\n"})
    with pytest.raises(KnobError, match="NAPI only with GRO on or an XDP program"):
        NapiThreaded().write(host, "hxr", "1")
    with pytest.raises(KnobError, match="0 or 1"):
        NapiThreaded().validate("hxr", "2")


class NoNapiHost(FakeHost):
    """A veth with GRO off and no XDP: `threaded` refuses writes unless GRO is on at that moment."""

    def __init__(self, gro="off"):
        self.gro = gro
        super().__init__(files={"/sys/class/net/hxr/threaded": "1\n"},
                         handlers={"ethtool": self._ethtool})

    def _ethtool(self, argv, host):
        if argv[1] == "-K":
            self.gro = argv[-1]
            return 0, "", ""
        return 0, f"Features for hxr:\ngeneric-receive-offload: {self.gro}\n", ""

    def write_text(self, path, text):
        if self.gro != "on":
            raise HostError(f"write {path}: Input/output error")
        super().write_text(path, text)


def test_threaded_is_cleared_on_a_device_that_lost_its_napi_and_gro_goes_back_off():
    """A kill between points can leave GRO restored to off before `threaded`: the flag must still go."""
    host = NoNapiHost()
    NapiThreaded().write(host, "hxr", "0")
    assert host.read_text("/sys/class/net/hxr/threaded").strip() == "0"
    assert [c for c in host.commands if c[:2] == ["ethtool", "-K"]] == [
        ["ethtool", "-K", "hxr", "gro", "on"], ["ethtool", "-K", "hxr", "gro", "off"]]
    assert host.gro == "off"
    off = NoNapiHost()
    off.files["/sys/class/net/hxr/threaded"] = "0\n"
    with pytest.raises(KnobError, match="NAPI only with GRO on"):  # turning it on still needs NAPI
        NapiThreaded().write(off, "hxr", "1")
