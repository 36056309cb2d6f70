"""Host (hostnet.hosts.base): the default stream goes through run() and hands the output over whole."""
from conftest import FakeHost


def collect(chunks):
    return b"".join(chunks)


def test_default_stream_goes_through_run():
    host = FakeHost(handlers={"perf": lambda argv, h: (0, "line\n", "warn\n")})
    res, out = host.stream(["perf", "script"], collect, check=False)
    assert (out, res.stdout, res.stderr, host.commands) == (b"line\n", "", "warn\n", [["perf", "script"]])
