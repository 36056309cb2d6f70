"""ssh_config resolution (hostnet.hosts.ssh_config) on temporary ssh_config files: aliases, User,
Port, IdentityFile, ProxyJump chains and ProxyCommand, the testbed.yaml's values overriding the
file's, Include followed, Match exec refused, jump hosts shared and rebuilt from describe()."""
import pytest

from hostnet.hosts import SshOptions, host_from_description
from hostnet.hosts import ssh_config
from hostnet.hosts.ssh_config import SshConfigError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    for key in ("id_lab", "id_bastion"):
        (tmp_path / ".ssh" / key).write_text("not a real key\n")
    return tmp_path


def write(home, text, name="config"):
    path = home / ".ssh" / name
    path.write_text(text)
    return path


LAB = """
Host alpha
    HostName 10.1.0.11
    User alice
    Port 2222
    IdentityFile ~/.ssh/id_lab
    ProxyJump bastion

Host bastion
    HostName gw.example.org
    User bob
    IdentityFile ~/.ssh/id_bastion

Host beta
    HostName 10.1.0.12
    ProxyJump carol@bastion:2022,inner
"""


def test_an_alias_resolves_to_its_host_user_port_key_and_jump(home):
    cfg = ssh_config.load(write(home, LAB))
    host = ssh_config.build("alpha", "alpha", cfg)
    assert (host.address, host.user, host.port, host.key_filename) == ("10.1.0.11", "alice", 2222,
                                                                       str(home / ".ssh" / "id_lab"))
    jump = host.proxy_jump
    assert (jump.address, jump.user, jump.port, jump.key_filename) == ("gw.example.org", "bob", 22,
                                                                       str(home / ".ssh" / "id_bastion"))
    assert jump.proxy_jump is None and jump.proxy_command is None and host.proxy_command is None
    assert host.sudo  # alice is not root: commands go through sudo on alpha (the jump host runs none)


def test_the_testbed_yaml_overrides_the_file(home, tmp_path):
    cfg = ssh_config.load(write(home, LAB))
    key = tmp_path / "other_key"
    host = ssh_config.build("alpha", "alpha", cfg, user="root", port=22, proxy_jump="none",
                            options=SshOptions(key_filename=str(key), known_hosts=str(tmp_path / "kh")))
    assert (host.address, host.user, host.port, host.key_filename) == ("10.1.0.11", "root", 22, str(key))
    assert host.proxy_jump is None and host.known_hosts == str(tmp_path / "kh")
    direct = ssh_config.build("alpha", "alpha", cfg, proxy_jump="admin@192.0.2.7:2200")
    assert (direct.proxy_jump.address, direct.proxy_jump.user, direct.proxy_jump.port) == ("192.0.2.7", "admin", 2200)


def test_a_jump_chain_goes_through_each_hop_in_order(home):
    cfg = ssh_config.load(write(home, LAB + "\nHost inner\n    HostName 10.1.0.1\n"))
    host = ssh_config.build("beta", "beta", cfg, user="root")
    inner = host.proxy_jump
    outer = inner.proxy_jump
    # ssh -J carol@bastion:2022,inner: bastion first (the hop string's user and port over the file's),
    # then inner through it, then beta through inner; hops log in as the local user unless told
    assert (outer.address, outer.user, outer.port) == ("gw.example.org", "carol", 2022)
    assert (inner.address, inner.user, inner.port) == ("10.1.0.1", ssh_config.local_user(), 22)
    assert outer.proxy_jump is None and host.address == "10.1.0.12"


def test_without_a_file_the_name_is_the_address_and_the_defaults_apply(home):
    assert ssh_config.load(home / ".ssh" / "absent") is None
    host = ssh_config.build("alpha", "192.0.2.5", None)
    assert (host.address, host.user, host.port, host.key_filename, host.proxy_jump) == ("192.0.2.5", "root", 22,
                                                                                         None, None)
    assert host.known_hosts == str(home / ".ssh" / "known_hosts")


def test_proxy_command_and_known_hosts_from_the_file(home):
    cfg = ssh_config.load(write(home, "Host lab\n    HostName 10.2.0.1\n    ProxyCommand nc -X connect %h %p\n"
                                      "    UserKnownHostsFile ~/.ssh/lab_known_hosts\n"))
    host = ssh_config.build("lab", "lab", cfg)
    assert host.proxy_command == "nc -X connect 10.2.0.1 22" and host.proxy_jump is None
    assert host.known_hosts == str(home / ".ssh" / "lab_known_hosts")
    assert ssh_config.build("lab", "lab", cfg, proxy_jump="none").proxy_command is None


def test_jump_hosts_are_shared_by_the_hosts_behind_them(home):
    cfg = ssh_config.load(write(home, LAB + "\nHost gamma\n    HostName 10.1.0.13\n    ProxyJump bastion\n"))
    jumps = {}
    a = ssh_config.build("alpha", "alpha", cfg, jumps=jumps)
    c = ssh_config.build("gamma", "gamma", cfg, jumps=jumps)
    assert a.proxy_jump is c.proxy_jump and len(jumps) == 1
    assert not a.proxy_jump.guard_connection_interface  # it forwards only; nothing runs there


def test_describe_keeps_the_jump_and_a_restore_rebuilds_it(home):
    cfg = ssh_config.load(write(home, LAB))
    host = ssh_config.build("alpha", "alpha", cfg)
    desc = host.describe()
    assert desc["proxy_jump"]["address"] == "gw.example.org"
    again = host_from_description(desc)
    assert again.describe() == desc and again.proxy_jump.user == "bob"


def test_include_is_followed(home):
    (home / ".ssh" / "config.d").mkdir()
    write(home, "Host lab2\n    HostName 10.3.0.2\n    User dana\n", "config.d/lab.conf")
    cfg = ssh_config.load(write(home, "Include config.d/*.conf\n\nHost *\n    Port 2200\n"))
    host = ssh_config.build("lab2", "lab2", cfg)
    assert (host.address, host.user, host.port) == ("10.3.0.2", "dana", 2200)


def test_match_exec_is_refused_with_file_and_line(home):
    path = write(home, "Host a\n    User x\nMatch exec \"test -e /tmp/flag\"\n    User y\n")
    with pytest.raises(SshConfigError, match=r"config line 3: 'Match exec'"):
        ssh_config.load(path)


@pytest.mark.parametrize("line", [
    "Match ex''ec \"touch {flag}\"",  # issue 33: quoting and escapes hid exec from a word check
    "Match e\\xec \"touch {flag}\"",
    "Match !EXEC \"touch {flag}\"",
    "Match host a exec \"touch {flag}\"",
    "Match=exec \"touch {flag}\"",
    "  match all \"exec\" \"touch {flag}\"",
])
def test_match_exec_is_refused_however_it_is_spelt_and_nothing_runs(home, tmp_path, line):
    flag = tmp_path / "ran"
    path = write(home, "Host a\n    User x\n" + line.format(flag=flag) + "\n    User y\n")
    with pytest.raises(SshConfigError, match=r"config line 3: 'Match exec'"):
        ssh_config.build("a", "a", ssh_config.load(path))
    assert not flag.exists()


def test_a_match_without_exec_is_read_and_odd_files_are_one_line_errors(home):
    cfg = ssh_config.load(write(home, "Match host execution-box\n    User z\n"))
    assert ssh_config.resolve(cfg, "execution-box").user == "z"
    with pytest.raises(SshConfigError, match=r"^/dev/zero: not a regular file$"):
        ssh_config.load("/dev/zero")
    with pytest.raises(SshConfigError, match=r"config line 1: Match criteria unreadable \(No closing quotation\)"):
        ssh_config.load(write(home, "Match host \"a\n"))
    with pytest.raises(SshConfigError, match=r"config: line 1: not UTF-8 text \(byte 0xff\)"):
        (home / ".ssh" / "config").write_bytes(b"Host \xff\n")
        ssh_config.load(home / ".ssh" / "config")


def test_an_include_loop_is_an_error(home):
    path = write(home, "Include ~/.ssh/config\n")
    with pytest.raises(SshConfigError, match="Include nested deeper"):
        ssh_config.load(path)


@pytest.mark.parametrize("spec, hops", [
    ("bastion", [("bastion", None, None)]),
    ("carol@gw:2022", [("gw", "carol", 2022)]),
    ("a,b@c:23", [("a", None, None), ("c", "b", 23)]),
    ("ssh://u@[2001:db8::1]:2200", [("2001:db8::1", "u", 2200)]),
])
def test_parse_jump(spec, hops):
    assert [(h.host, h.user, h.port) for h in ssh_config.parse_jump(spec)] == hops


@pytest.mark.parametrize("spec", ["a b", "u@", "host:99999", "a,,b"])
def test_parse_jump_refuses_what_ssh_would(spec):
    with pytest.raises(SshConfigError, match="is not \\[user@\\]host\\[:port\\]"):
        ssh_config.parse_jump(spec)


def test_a_jump_loop_is_an_error(home):
    cfg = ssh_config.load(write(home, "Host loop\n    ProxyJump loop\n"))
    with pytest.raises(SshConfigError, match="ProxyJump loop"):
        ssh_config.build("loop", "loop", cfg)


def test_the_sudo_password_is_out_of_the_environment_while_a_config_is_read(home, monkeypatch):
    """#33: a `Match exec` that ran during from_yaml saw HOSTNET_SUDO_PASSWORD. Exec is refused; and
    whatever paramiko runs while it parses or looks up a host sees no password either."""
    import os

    import paramiko

    from hostnet.hosts.base import SUDO_PASSWORD_VAR
    monkeypatch.setenv(SUDO_PASSWORD_VAR, "hunter2")
    seen = []
    real_from_text, real_lookup = paramiko.SSHConfig.from_text, paramiko.SSHConfig.lookup
    monkeypatch.setattr(paramiko.SSHConfig, "from_text", classmethod(
        lambda cls, text: (seen.append(os.environ.get(SUDO_PASSWORD_VAR)), real_from_text(text))[1]))
    monkeypatch.setattr(paramiko.SSHConfig, "lookup",
                        lambda self, name: (seen.append(os.environ.get(SUDO_PASSWORD_VAR)), real_lookup(self, name))[1])
    config = ssh_config.load(write(home, "Host a\n    User x\n"))
    assert ssh_config.resolve(config, "a").user == "x"
    assert seen == [None, None] and os.environ[SUDO_PASSWORD_VAR] == "hunter2"  # back for SshHost
