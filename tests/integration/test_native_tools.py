"""hostnet's C tools (hostnet/native) compiled here and run: their argument errors, microbench,
udpbatch and zcflow over loopback, the XDP object ip link loads. The build commands, on a fake
host, are unit tests (tests/unit/native/test_native.py)."""
import subprocess

import pytest

from hostnet import native
from hostnet.native import build
from hostnet.parsers.native import parse_microbench, parse_udpbatch, parse_zcflow
from hostnet.measure.benches import recv_argv, send_argv


@pytest.fixture(scope="module")
def tools():
    try:
        return {t: build.ensure(t) for t in native.TOOLS}
    except native.NativeBuildError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("args, message", [
    ([], "missing role"),
    (["listen"], "role must be send or recv: listen"),
    (["send", "--port", "9"], "--dst is required"),
    (["send", "--dst", "198.18.0.2", "--port", "9", "--batch", "0", "--size", "18", "--seconds", "1"],
     "--batch must be an integer in 1..1024: 0"),
    (["send", "--dst", "198.18.0.2", "--port", "70000"], "--port must be an integer in 1..65535"),
    (["recv", "--bind", "198.18.0.2", "--port", "9", "--batch", "4", "--seconds", "soon"], "--seconds must be"),
    (["recv", "--bind", "198.18.0.2", "--size", "5"], "unknown option: --size"),
    (["send", "--dst", "not-an-ip", "--port", "9", "--batch", "1", "--size", "18", "--seconds", "1"],
     "not an IPv4 address"),
])
def test_udpbatch_argument_errors(tools, args, message):
    p = subprocess.run([tools["udpbatch"], *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and message in p.stderr and "usage: udpbatch" in p.stderr


def test_microbench_runs_and_refuses_unknown(tools):
    p = subprocess.run([tools["microbench"], "atomic", "--iterations", "100000"], capture_output=True, text=True)
    r = parse_microbench(p.stdout)
    assert r.bench == "atomic" and r.iterations == 100_000 and r.ns_per_op > 0
    p = subprocess.run([tools["microbench"], "nosuch"], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown benchmark: nosuch" in p.stderr


def test_malloc256_times_the_iterations_it_reports(tools):
    """It frees in rounds of 256: 1000 asked runs 1024, and ns_per_op divides by 1024."""
    p = subprocess.run([tools["microbench"], "malloc256", "--iterations", "1000"], capture_output=True, text=True)
    r = parse_microbench(p.stdout)
    assert r.iterations == 1024 and r.ns_per_op == pytest.approx(r.total_ns / 1024, abs=1e-3)


def test_udpbatch_over_loopback(tools):
    """Loopback only: one short exchange, parsed as the notebook would."""
    recv = subprocess.Popen(recv_argv(tools["udpbatch"], "127.0.0.1", 8, 0.3, 0.1, 0, port=39300),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_bound(39300)
        send = subprocess.run(send_argv(tools["udpbatch"], "127.0.0.1", 8, 18, 0.3, 0.1, 0, port=39300),
                              capture_output=True, text=True, timeout=10)
        out, err = recv.communicate(timeout=10)
    finally:
        recv.kill()
    assert "udpbatch " in send.stdout and "udpbatch " in out, f"sender: {send.stderr!r}; receiver: {err!r}"
    s, r = parse_udpbatch(send.stdout), parse_udpbatch(out)
    assert s.batch == r.batch == 8 and r.size == 18 and s.packets > 0 and r.packets > 0
    assert s.calls * 8 >= s.packets


def _wait_bound(port: int, timeout: float = 5.0) -> None:
    """Until a UDP socket is bound to the port on this machine (/proc/net/udp, hex port)."""
    import time
    deadline = time.monotonic() + timeout
    needle = f":{port:04X} "
    while needle not in open("/proc/net/udp").read():
        assert time.monotonic() < deadline, f"nothing bound to UDP port {port}"
        time.sleep(0.02)


def test_xdp_program_builds_here_into_an_object_ip_link_loads():
    """The source compiles (clang, `make install`), and the object has its program in the section
    knobs/xdp.py attaches and the licence section."""
    path = build.ensure("xdp_pass")
    sections = subprocess.run(["llvm-objdump", "-h", path], capture_output=True, text=True)
    if sections.returncode != 0:  # llvm-objdump ships with clang's LLVM; the object is checked anyway
        sections = subprocess.run(["objdump", "-h", path], capture_output=True, text=True)
    assert "xdp.frags" in sections.stdout and "license" in sections.stdout


def _zcflow_pair(path: str, send_mode: str, recv_mode: str, port: int) -> tuple[str, str]:
    """One short zcflow exchange over loopback: (sender's output, receiver's output)."""
    server = subprocess.Popen([path, "-s", "-B", "127.0.0.1", "-p", str(port), "-m", recv_mode, "-t", "1", "-O", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        needle = f":{port:04X} "
        import time
        deadline = time.monotonic() + 5
        while needle not in open("/proc/net/tcp").read():
            assert time.monotonic() < deadline, f"zcflow server not listening on {port}"
            time.sleep(0.02)
        client = subprocess.run([path, "-c", "127.0.0.1", "-p", str(port), "-m", send_mode, "-t", "1", "-O", "0"],
                                capture_output=True, text=True, timeout=15)
        out, err = server.communicate(timeout=15)
    finally:
        server.kill()
    assert client.returncode == 0 and server.returncode == 0, f"sender: {client.stderr!r}; receiver: {err!r}"
    return client.stdout, out


@pytest.mark.parametrize("send_mode, recv_mode", [("copy", "copy"), ("sendfile", "copy"), ("zerocopy", "mmap")])
def test_zcflow_moves_data_in_each_mode_over_loopback(tools, send_mode, recv_mode):
    """Loopback only, 1 s each. MSG_ZEROCOPY through loopback is always copied (the kernel's
    skb_copy_ubufs on local delivery, flagged to the sender): whole new pages, which the receiver maps."""
    out, back = _zcflow_pair(tools["zcflow"], send_mode, recv_mode, 39400 + len(send_mode) + len(recv_mode))
    s, r = parse_zcflow(out), parse_zcflow(back)
    assert (s.mode, r.mode) == (send_mode, recv_mode) and s.bytes > 0 and r.bytes > 0
    assert s.bytes_total == r.bytes_total  # every byte sent was received
    if send_mode == "zerocopy":
        assert s.zc_completed == s.zc_sends > 0 and s.zc_copied == s.zc_completed
        assert r.mapped_total > 0


@pytest.mark.parametrize("args", [[], ["-c", "127.0.0.1", "-p", "9", "-m", "copy"],  # no -t
                                  ["-c", "127.0.0.1", "-p", "9", "-m", "splice", "-t", "1"],
                                  ["-s", "-B", "127.0.0.1", "-p", "9", "-l", "1000"],
                                  ["-c", "127.0.0.1", "-p", "9", "-m", "copy", "-t", "1", "-l", "12288"]])  # 8 MB ring
def test_zcflow_argument_errors(tools, args):
    p = subprocess.run([tools["zcflow"], *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "usage: zcflow" in p.stderr
