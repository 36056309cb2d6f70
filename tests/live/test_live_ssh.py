"""SshHost against a real sshd running in a namespace of the embedded testbed (no mocks)."""
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import gather, live_ready
from hostnet import testbed
from hostnet.hosts import HostError
from hostnet.hosts.ssh import SshHost, SshOptions
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
    sudo_host = SshHost(tb_host.address, user="root", proxy_command=tb_host.proxy_command,
                        options=SshOptions(key_filename=tb_host.key_filename, known_hosts=tb_host.known_hosts,
                                           sudo=True))
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
    # #33: the output files were 0644 on the host; now only the login user reads them
    modes = host.run(["stat", "-c", "%a", f"{echo._base}.out", f"{echo._base}.err"]).stdout.split()
    assert modes == ["600", "600"]
    many = host.start_many([["true"], ["true"]])
    assert host.run(["stat", "-c", "%a", f"{many[0][0]._base}.out"]).stdout.split() == ["600"]
    for proc, _ in many:
        proc.wait(10)
        proc.close()
    echo.close()


def test_ssh_connection_interface_is_found(sshbed, tmp_path):
    h = sshbed.receiver.host
    guarded = SshHost(h.address, proxy_command=h.proxy_command,
                      options=SshOptions(key_filename=h.key_filename, known_hosts=h.known_hosts))
    try:
        assert guarded.connection_interfaces() == [sshbed.receiver.iface]
    finally:
        guarded.close()
    assert h.connection_interfaces() == []  # the embedded testbed's own namespaces opt out


def test_unknown_host_key_is_refused(sshbed, tmp_path):
    h = sshbed.receiver.host
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    stranger = SshHost(h.address, proxy_command=h.proxy_command,
                       options=SshOptions(key_filename=h.key_filename, known_hosts=str(empty), connect_timeout=5))
    with pytest.raises(HostError, match="host key unknown"):
        stranger.run(["true"])


def test_unreachable_host_fails_within_its_timeout(sshbed):
    h = sshbed.receiver.host
    # 198.18.0.99 is inside the testbed's own subnet and namespace: nothing answers there.
    ghost = SshHost("198.18.0.99", proxy_command=proxy_command(sshbed.sender.host.proxy_command.split()[3]),
                    options=SshOptions(key_filename=h.key_filename, known_hosts=h.known_hosts, connect_timeout=3))
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


# --- a real non-root login that sudo asks a password of (issue 19) ----------------------------
SUDO_USER = "hostnet-sudo-live"
SUDOERS = Path("/etc/sudoers.d/hostnet-sudo-live")
SUDO_PW = "hostnet-live-pw"  # this throwaway account's only password; the account is removed after


def _sudoers(nopasswd: bool) -> None:
    rule = f"{SUDO_USER} ALL=(ALL:ALL) {'NOPASSWD: ' if nopasswd else ''}ALL\n"
    # timestamp_timeout=0: no cached ticket, so every command meets the prompt
    tmp = SUDOERS.with_suffix(".new")
    tmp.write_text(f"Defaults:{SUDO_USER} timestamp_timeout=0\n{rule}")
    tmp.chmod(0o440)
    subprocess.run(["visudo", "-c", "-q", "-f", str(tmp)], check=True)
    tmp.rename(SUDOERS)


@pytest.fixture(scope="module")
def sudo_login(sshbed):
    """SUDO_USER (password SUDO_PW, sudo with a password) logging in with the testbed's client key
    to an sshd of its own in the receiver's namespace (port 2222, keys it may read)."""
    for tool in ("sudo", "useradd", "userdel", "chpasswd", "visudo"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    h = sshbed.receiver.host
    keys = Path(h.key_filename).parent
    # sshd reads AuthorizedKeysFile as the logging-in user: pytest's tmp tree (0700, root's) is out of reach
    d = Path(tempfile.mkdtemp(prefix="hostnet-sudo-sshd-"))
    d.chmod(0o755)
    (d / "authorized_keys").write_text((keys / "client_ed25519.pub").read_text())
    (d / "authorized_keys").chmod(0o644)
    (d / "known_hosts").write_text("[{}]:2222 {}\n".format(h.address, " ".join(
        (keys / "host_ed25519.pub").read_text().split()[:2])))
    conf = d / "sshd.conf"
    conf.write_text("\n".join([
        f"ListenAddress {h.address}:2222", f"HostKey {keys / 'host_ed25519'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", ""]))
    subprocess.run(["userdel", SUDO_USER], capture_output=True)  # left by an earlier, killed run
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", SUDO_USER], check=True)
    sshd = None
    try:
        subprocess.run(["chpasswd"], input=f"{SUDO_USER}:{SUDO_PW}\n", text=True, check=True)
        _sudoers(nopasswd=False)
        netns = h.proxy_command.split()[3]
        sshd = subprocess.Popen(["ip", "netns", "exec", netns, "/usr/sbin/sshd", "-D", "-e", "-f", str(conf)],
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not subprocess.run(["ip", "netns", "exec", netns, "ss", "-Hltn", f"src {h.address}:2222"],
                                 capture_output=True, text=True).stdout.strip():
            assert time.monotonic() < deadline, "the test's sshd did not start listening"
            time.sleep(0.1)

        def login(**options):
            return SshHost(h.address, user=SUDO_USER, port=2222, proxy_command=h.proxy_command,
                           options=SshOptions(key_filename=h.key_filename, known_hosts=str(d / "known_hosts"),
                                              **options))
        yield login
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(10)
        SUDOERS.unlink(missing_ok=True)
        SUDOERS.with_suffix(".new").unlink(missing_ok=True)
        subprocess.run(["userdel", SUDO_USER], check=False)
        shutil.rmtree(d, ignore_errors=True)


RULES = "table inet hostnet_sudo_live {\n}\n"


def test_non_root_login_answers_sudos_prompt_and_the_input_arrives_intact(sudo_login, monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", SUDO_PW)
    host = sudo_login()
    try:
        assert host.sudo and host.run(["id", "-un"]).stdout.strip() == "root"
        assert host.run(["sh", "-c", "cat"], input=RULES).stdout == RULES  # the password is not in the input
        res = host.run(["sh", "-c", "echo err >&2"])
        assert res.stderr == "err\n"  # nothing of sudo's prompt
        _, out = host.stream(["id", "-un"], b"".join)
        assert out == b"root\n"
        assert host.read_text("/proc/sys/net/core/somaxconn").strip().isdigit()  # through cat under sudo
    finally:
        host.close()


def test_non_root_login_where_sudo_does_not_prompt(sudo_login, monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", SUDO_PW)
    _sudoers(nopasswd=True)
    host = sudo_login()
    try:
        assert host.run(["sh", "-c", "cat"], input=RULES).stdout == RULES
        assert host.run(["id", "-u"]).stdout.strip() == "0"
    finally:
        host.close()
        _sudoers(nopasswd=False)


def test_non_root_login_with_a_wrong_or_no_password_is_a_clear_error(sudo_login, monkeypatch):
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", "not-the-password")
    host = sudo_login()
    try:
        with pytest.raises(HostError, match="did not accept the password"):
            host.run(["sh", "-c", "cat"], input=RULES)
        monkeypatch.delenv("HOSTNET_SUDO_PASSWORD")
        with pytest.raises(HostError, match="sudo needs a password"):
            host.run(["true"], check=False)
    finally:
        host.close()


def test_non_root_login_session_interface_is_guarded(sudo_login, sshbed, monkeypatch, tmp_path):
    """sudo resets SSH_CONNECTION; the guard reads it in the login's own shell."""
    from hostnet.knobs import KNOBS, Journal, KnobError
    monkeypatch.setenv("HOSTNET_SUDO_PASSWORD", SUDO_PW)
    host = sudo_login(guard_connection_interface=True)
    try:
        assert host.connection_interfaces() == [sshbed.receiver.iface]
        j = Journal(tmp_path / "j")
        with pytest.raises(KnobError, match=f"refusing to change {sshbed.receiver.iface}"):
            j.set(host, KNOBS["mtu"], sshbed.receiver.iface, "1400")
        assert j.entries() == []
    finally:
        host.close()


def _ns_pids(netns: str, comm: str) -> list[int]:
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
    out = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                out.append(int(pid))
        except OSError:
            continue
    return out


@pytest.mark.parametrize("ending", ["reconnect-budget", "sigterm"])
def test_a_receiver_whose_sshd_dies_mid_point_never_hangs_the_run(ending, state_dir, tmp_path, summary_line):
    """Issue 45: kill -9 of the receiver's sshd during a point left `hostnet run` spinning at 98 % of a
    CPU for 12 minutes, deaf to SIGTERM, and `restore`/`testbed down` looping. Now the run exits once
    its reconnect wait is over (or at SIGTERM), `restore` names the host and keeps the journal, and
    `testbed down` leaves nothing behind. The sshds are processes this testbed started."""
    import sys
    from conftest import REPO
    from hostnet.hosts import ProcessTag
    name = f"sl{os.getpid() % 10000}{ending[0]}"
    env = {**os.environ, "HOSTNET_STATE_DIR": str(state_dir)}
    cli = [sys.executable, "-m", "hostnet.cli"]

    def hostnet(*args, timeout=120):
        return subprocess.run([*cli, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    up = hostnet("testbed", "up", "--ssh", "--name", name)
    assert up.returncode == 0, up.stderr
    snd, rcv = f"hostnet-{name}-snd", f"hostnet-{name}-rcv"
    wait_s = 5 if ending == "reconnect-budget" else 600
    try:
        run = subprocess.Popen([*cli, "run", "single-flow", "--testbed", name, "--duration", "4", "--warmup", "1",
                                "--repetitions", "2", "--reconnect-wait", str(wait_s), "--runs-dir", str(tmp_path),
                                "--quiet"], cwd=REPO, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # unbuffered: its lines arrive as it says them
        lines: list[str] = []
        reader = threading.Thread(target=lambda: [lines.append(line) for line in run.stdout], daemon=True)
        reader.start()
        deadline = time.monotonic() + 90
        while not _ns_pids(snd, "iperf3"):  # the first point's flow runs
            assert run.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        time.sleep(1.0)
        sshds = _ns_pids(rcv, "sshd")
        assert len(sshds) >= 2  # the listener and the controller's session
        for pid in sshds:
            os.kill(pid, 9)
        killed = time.monotonic()
        if ending == "sigterm":
            while not any("a host stopped answering" in line for line in lines):
                assert time.monotonic() - killed < 60, "".join(lines)
                time.sleep(0.1)
            run.send_signal(15)
            signalled = time.monotonic()
        budget = wait_s + 2 * 10 + 10 if ending == "reconnect-budget" else 30  # + two connect timeouts
        run.wait(timeout=budget)
        exited = time.monotonic()
        took = exited - killed
        reader.join(10)
        out = "".join(lines)
        assert run.returncode == 2, out
        assert "receiver@ssh" in out and "stay journaled" in out, out
        if ending == "reconnect-budget":
            assert f"no answer for {wait_s:g} s, sweep stopped" in out, out
        journal = state_dir / f"{name}.journal"
        restore = hostnet("restore", "--name", name, timeout=60)
        assert restore.returncode == 2 and "receiver@ssh" in restore.stderr and journal.exists(), restore.stderr
        down = hostnet("testbed", "down", "--name", name, timeout=60)
        assert down.returncode == 0, down.stderr
        assert not journal.exists() and list(state_dir.glob(f"{name}.journal.gone-*.note"))
        assert not [ns for ns in (snd, rcv) if Path("/run/netns", ns).exists()]
        assert not ProcessTag(f"{state_dir}/{name}").running() and not ProcessTag(f"{state_dir}/{name}/infra").running()
        after_term = f", {exited - signalled:.1f} s after SIGTERM" if ending == "sigterm" else ""
        summary_line(f"sshd killed mid-point: hostnet run exited {took:.1f} s later{after_term} "
                     f"(--reconnect-wait {wait_s}); restore named the host, testbed down left nothing")
    finally:
        if "run" in locals() and run.poll() is None:
            run.kill()
            run.wait()
        hostnet("testbed", "down", "--name", name)
