"""SshHost against a real sshd running in a namespace of the embedded testbed (no mocks)."""
import os
import time

import pytest

from conftest import gather, live_ready
from hostnet import testbed
from hostnet.hosts import HostError
from hostnet.hosts.ssh import SshHost
from hostnet.hosts.sshd import proxy_command

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


@pytest.fixture(scope="module")
def sshbed(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    old = os.environ.get("HOSTNET_STATE_DIR")
    os.environ["HOSTNET_STATE_DIR"] = str(state)
    try:
        with testbed.embedded(f"ss{os.getpid() % 10000}", ssh=True) as tb:
            yield tb
    finally:
        if old is None:
            os.environ.pop("HOSTNET_STATE_DIR", None)
        else:
            os.environ["HOSTNET_STATE_DIR"] = old


def test_run_sees_the_namespace(sshbed):
    out = sshbed.receiver.host.run(["ip", "-br", "addr", "show", "dev", sshbed.receiver.iface]).stdout
    assert sshbed.receiver.ip in out


def test_hostile_strings_arrive_literally(sshbed):
    hostile = ["a b", "it's", ";", "$(id)", "`id`", '"q"', "x && rm -rf /tmp/nothing", "*"]
    out = sshbed.receiver.host.run(["printf", "%s\\n", *hostile]).stdout
    assert out.splitlines() == hostile


def test_sudo_path_runs_through_sudo(sshbed):
    tb_host = sshbed.receiver.host
    sudo_host = SshHost(tb_host.address, user="root", key_filename=tb_host.key_filename,
                        known_hosts=tb_host.known_hosts, proxy_command=tb_host.proxy_command, sudo=True)
    try:
        assert sudo_host.run(["id", "-u"]).stdout.strip() == "0"
        assert sudo_host.run(["printf", "%s", "$(id)"]).stdout == "$(id)"
    finally:
        sudo_host.close()


def test_file_transfer_over_sftp(sshbed):
    host = sshbed.receiver.host
    path = f"/tmp/hostnet-sftp-{os.getpid()}"
    try:
        host.write_text(path, "line 1\nünïcode\n")
        assert host.read_text(path) == "line 1\nünïcode\n"
        assert host.run(["cat", path]).stdout == "line 1\nünïcode\n"
    finally:
        host.run(["rm", "-f", path])
    with pytest.raises(HostError, match="cannot read"):
        host.read_text(path)


def test_stream_delivers_big_output_in_chunks_and_the_exit_status(sshbed):
    host = sshbed.receiver.host
    sizes = []
    res, out = host.stream(["seq", "1", "1000000"], lambda chunks: gather(chunks, sizes))
    assert out.decode().split() == [str(i) for i in range(1, 1000001)] and res.ok and len(sizes) > 1
    hostile = ["a b", "it's", "$(id)", "*"]
    assert host.stream(["printf", "%s\\n", *hostile], b"".join)[1].decode().splitlines() == hostile
    res, out = host.stream(["sh", "-c", "echo out; echo err >&2; exit 3"], b"".join, check=False)
    assert (res.returncode, res.stderr, out) == (3, "err\n", b"out\n")


def test_background_process_is_stopped_and_reaped(sshbed):
    host = sshbed.sender.host
    proc = host.start(["sleep", "60"])
    assert proc.poll() is None
    assert host.run(["kill", "-0", str(proc.pid)], check=False).returncode == 0
    proc.stop()
    assert proc.poll() is not None  # gone (at most a zombie waiting for init to reap it)
    state = host.run(["sh", "-c", 'cat "/proc/$1/status" 2>/dev/null | grep ^State || echo gone', "sh",
                      str(proc.pid)]).stdout
    assert "gone" in state or "Z" in state
    proc.close()
    echo = host.start(["sh", "-c", "echo out; echo err >&2"])
    echo.wait(10)
    assert echo.stdout() == "out\n" and echo.stderr() == "err\n"
    echo.close()


def test_ssh_connection_interface_is_found(sshbed, tmp_path):
    h = sshbed.receiver.host
    guarded = SshHost(h.address, key_filename=h.key_filename, known_hosts=h.known_hosts,
                      proxy_command=h.proxy_command)
    try:
        assert guarded.connection_interfaces() == [sshbed.receiver.iface]
    finally:
        guarded.close()
    assert h.connection_interfaces() == []  # the embedded testbed's own namespaces opt out


def test_unknown_host_key_is_refused(sshbed, tmp_path):
    h = sshbed.receiver.host
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    stranger = SshHost(h.address, key_filename=h.key_filename, known_hosts=str(empty),
                       proxy_command=h.proxy_command, connect_timeout=5)
    with pytest.raises(HostError, match="host key unknown"):
        stranger.run(["true"])


def test_unreachable_host_fails_within_its_timeout(sshbed):
    h = sshbed.receiver.host
    # 198.18.0.99 is inside the testbed's own subnet and namespace: nothing answers there.
    ghost = SshHost("198.18.0.99", key_filename=h.key_filename, known_hosts=h.known_hosts,
                    proxy_command=proxy_command(sshbed.sender.host.proxy_command.split()[3]), connect_timeout=3)
    t = time.monotonic()
    with pytest.raises(HostError, match="198.18.0.99"):
        ghost.run(["true"])
    assert time.monotonic() - t < 15


def test_missing_tool_is_one_clear_line(sshbed):
    with pytest.raises(HostError, match="no-such-tool-xyz is not installed"):
        sshbed.receiver.host.run(["no-such-tool-xyz"])


def test_marked_remote_processes_are_found_and_stopped(sshbed):
    """What `hostnet restore --file` does on real servers after the controller died."""
    from hostnet.hosts import ProcessTag
    host = sshbed.receiver.host
    proc = host.start(["sleep", "60"])
    found = ProcessTag(host.tag.tag).kill_on(host)
    assert proc.pid in found
    deadline = time.monotonic() + 5
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is not None
