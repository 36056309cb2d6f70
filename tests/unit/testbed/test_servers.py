"""testbed.yaml for real servers (hostnet.testbed.servers): the example, validation naming the file
and key, unreadable and invalid YAML; the journal kept on each server too, and `hostnet restore
--file` from either copy. No connection is made."""
import json
import re
from types import SimpleNamespace
from pathlib import Path

import pytest
import yaml

from conftest import REPO, FakeHost
from hostnet import cli
from hostnet.knobs import KNOBS, Journal
from hostnet.knobs.journal_file import HOST_DIR
from hostnet.knobs.sysctl import sysctl_path
from hostnet.testbed import servers

EXAMPLE = REPO / "testbeds" / "example-two-servers.yaml"


def write(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "testbed.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def valid() -> dict:
    doc = yaml.safe_load(EXAMPLE.read_text())
    for i, h in enumerate(doc["hosts"].values()):
        h["address"] = f"lab-host-{i}"  # a name: never resolved by these tests
    return doc


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A HOME of the test's own: the developer's ~/.ssh/config must not shape these testbeds."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    return tmp_path / "home"


def test_example_mirrors_the_paper_and_refuses_its_placeholders():
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert doc["roles"] == {"senders": ["sender1"], "receivers": ["receiver1"]}
    assert doc["hosts"]["sender1"]["cpus"]["numa_nodes"] == 4
    with pytest.raises(servers.TestbedFileError, match="hosts.sender1.address 192.0.2.11 is a documentation"):
        servers.load(EXAMPLE)


def test_from_yaml_builds_ssh_endpoints(tmp_path):
    tb = servers.from_yaml(write(tmp_path, valid()))
    assert tb.kind == "servers" and list(tb.machines) == ["sender1", "receiver1"]
    assert tb.sender.host.describe()["kind"] == "SshHost" and tb.sender.iface == "ens1f0np0"
    assert tb.sender.host.tool_paths["iperf3"] == "/usr/bin/iperf3"
    assert tb.receiver.cpus == [0, 1, 2, 3, 4, 5] and not tb.sender.host.insecure
    # flows pick an address by IP version; a host without an IPv6 one is refused by name
    assert tb.receiver.address(4) == "198.18.100.2" and tb.receiver.address(6) == "2001:2:0:100::2"
    assert tb.receiver.address() == "198.18.100.2"  # a point naming no version: data_ip, whichever it is
    doc = valid()
    doc["hosts"]["receiver1"].update(data_ip="2001:db8:0:0::0:2", data_ip6="2001:2:0:100:0:0:0:2")
    v6 = servers.from_yaml(write(tmp_path, doc)).receiver
    # written as ss and ip print them, so a listener on it is found; an IPv6 data_ip is the IPv6 address
    assert (v6.address(), v6.address(6), v6.ip6) == ("2001:db8::2", "2001:db8::2", "2001:2:0:100::2")
    with pytest.raises(servers.TestbedError, match=r"has no IPv4 data address \(testbed.yaml: data_ip\)"):
        v6.address(4)
    doc = valid()
    del doc["hosts"]["receiver1"]["data_ip6"]
    with pytest.raises(servers.TestbedError, match=r"receiver \(receiver1\) has no IPv6 data address \(testbed.yaml: "
                                                   r"data_ip6\)"):
        servers.from_yaml(write(tmp_path, doc)).receiver.address(6)


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.pop("roles"), r": roles is missing"),
    (lambda d: d["hosts"]["sender1"].pop("data_ip"), r"hosts\.sender1\.data_ip is missing"),
    (lambda d: d["hosts"]["sender1"].update(data_ip="not-an-ip"), r"hosts\.sender1\.data_ip: 'not-an-ip' is not an IP"),
    (lambda d: d["hosts"]["sender1"].update(data_ip6="198.18.0.1"), r"hosts\.sender1\.data_ip6: '198.18.0.1' is not"),
    (lambda d: d["hosts"]["sender1"].update(data_ip6="fe80::1"), r"hosts\.sender1\.data_ip6 fe80::1 is link-local"),
    (lambda d: d["hosts"]["sender1"].update(data_iface="eth0; reboot"), r"data_iface: .* is not an interface name"),
    (lambda d: d["hosts"]["sender1"]["cpus"].update(app_cpus=[]), r"app_cpus: \[\] is not a non-empty list"),
    (lambda d: d["hosts"]["sender1"]["cpus"].update(app_cpus=[0, -1]), r"app_cpus\.1: -1 is not a CPU number"),
    (lambda d: d["hosts"]["sender1"].update(colour="blue"), r"hosts\.sender1\.colour is not a known key"),
    (lambda d: d["roles"].update(receivers=["nobody"]), r"roles\.receivers names 'nobody'"),
    (lambda d: d.update(name="Bad Name"), r"name: 'Bad Name' is not a testbed name"),
    # issue 19: each of these failed open or with a traceback
    (lambda d: d["ssh"].update(insecure_accept_unknown_keys="false"),
     r"ssh\.insecure_accept_unknown_keys: 'false' is not true or false"),
    (lambda d: d["hosts"].update({"../x": d["hosts"].pop("sender1")}), r"hosts: '\.\./x' is not a host name"),
    (lambda d: d.update(ssh=[]), r"ssh: \[\] is not a mapping of SSH settings"),
    (lambda d: d["hosts"]["sender1"].update(port="ssh"), r"hosts\.sender1\.port: 'ssh' is not a port number"),
    (lambda d: d["hosts"]["sender1"].update(port=0), r"hosts\.sender1\.port: 0 is not a port number"),
    (lambda d: d["hosts"]["sender1"].update(tools={"iperf3": 3}), r"tools\.iperf3: 3 is not a path"),
    (lambda d: d["hosts"]["sender1"].update(tools=["iperf3"]), r"tools: \['iperf3'\] is not a mapping"),
    (lambda d: d["hosts"].update(sender1=None), r"hosts\.sender1: None is not a mapping of host settings"),
    (lambda d: d["roles"].update(senders="sender1"), r"roles\.senders: 'sender1' is not a non-empty list"),
    (lambda d: d["ssh"].update(connect_timeout_s=0), r"ssh\.connect_timeout_s: 0 is not a whole number of seconds"),
    # #33: fabric's int() made 0.5 a 0, and 0 means no connect timeout at all
    (lambda d: d["ssh"].update(connect_timeout_s=0.5), r"ssh\.connect_timeout_s: 0\.5 is not a whole number of sec"),
    (lambda d: d.update(extra=1), r"extra is not a known key \(known: hosts, name, rehearsal, roles, ssh\)"),
    (lambda d: d["hosts"]["sender1"].update(proxy_jump="gw; reboot"),
     r"hosts\.sender1\.proxy_jump: 'gw; reboot' is not a jump host list"),
    (lambda d: d["hosts"]["sender1"].update(proxy_jump=["gw"]), r"proxy_jump: \['gw'\] is not a jump host list"),
    (lambda d: d["ssh"].update(config=True), r"ssh\.config: True is not an ssh_config file path, or false"),
])
def test_validation_names_file_and_key(tmp_path, mutate, msg):
    doc = valid()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(servers.TestbedFileError, match=msg) as exc:
        servers.load(path)
    assert str(path) in str(exc.value)


def test_every_problem_is_named_and_a_list_is_no_testbed(tmp_path):
    doc = valid()
    doc["hosts"]["sender1"].update(port="ssh", user="root; reboot")
    with pytest.raises(servers.TestbedFileError) as exc:
        servers.load(write(tmp_path, doc))
    assert "hosts.sender1.port" in str(exc.value) and "hosts.sender1.user" in str(exc.value)
    with pytest.raises(servers.TestbedFileError, match=r"\(top level\): \['a'\] is not a mapping"):
        servers.load(write(tmp_path, ["a"]))


def test_host_key_opt_out_only_from_a_yaml_boolean(tmp_path):
    doc = valid()
    doc["ssh"]["insecure_accept_unknown_keys"] = True
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.insecure is True
    doc["ssh"] = None  # an empty ssh: section means the defaults
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.insecure is False


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(servers.TestbedFileError, match="cannot read"):
        servers.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [unclosed")
    with pytest.raises(servers.TestbedFileError, match="not valid YAML") as exc:
        servers.load(bad)
    assert f'in "{bad}", line 1' in str(exc.value)  # the file itself, not "<unicode string>"


def test_hostile_or_damaged_testbed_files_end_in_one_line_naming_the_file(tmp_path):
    """Issue 33: each of these was accepted with a key silently dropped, or ran into a MemoryError,
    a RecursionError or an 18 MB message."""
    text = yaml.safe_dump(valid())
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
    cases = [
        (text + "ssh: {insecure_accept_unknown_keys: true}\n",
         r"line \d+: key 'ssh' appears twice in one mapping \(first on line \d+\)"),
        (text.replace("name: ", "name: \"lab\\n\"\nold_name: ", 1), r"name: 'lab\\n' is not a testbed name"),
        (bomb, r"expands to more than 100,000 values"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", r"line 1: nested deeper than 32 levels"),
        ("# " + "x" * (2 << 20) + "\n", r"larger than 1024 KB"),
    ]
    for i, (body, msg) in enumerate(cases):
        path = tmp_path / f"t{i}.yaml"
        path.write_text(body)
        with pytest.raises(servers.TestbedFileError, match=msg) as exc:
            servers.load(path)
        assert str(exc.value).startswith(f"{path}: ") and len(str(exc.value)) < 400, i
        assert "\n" not in str(exc.value) or "old_name" in body, i  # that one also names the unknown key
    raw = tmp_path / "latin1.yaml"
    raw.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(servers.TestbedFileError, match=rf"^{raw}: line 1: not UTF-8 text \(byte 0xe9\)$"):
        servers.load(raw)
    doc = valid()
    doc["ssh"]["config"] = "/dev/zero"
    with pytest.raises(servers.TestbedFileError, match=r"ssh\.config: /dev/zero: not a regular file"):
        servers.from_yaml(write(tmp_path, doc))


# --- the journal on the servers themselves ----------------------------------------------------
class Server(FakeHost):
    """A server whose own files (its journal copy) live in `disk`; commands answered as sh would."""

    def __init__(self, name, rmem):
        super().__init__(name, files={sysctl_path(RMEM): f"{rmem}\n"},
                         handlers={"sh": self._sh, "rm": self._rm})
        self.disk: dict[str, str] = {}
        self.scripts: list[str] = []

    def describe(self):
        return {"name": self.name, "kind": "SshHost", "address": f"{self.name}.lab", "user": "root", "port": 22,
                "key_filename": None, "known_hosts": None, "proxy_command": None, "sudo": False,
                "insecure_accept_unknown_keys": False}

    def _sh(self, argv, host):
        script, args = argv[2], argv[4:]
        self.scripts.append(script)
        if ">>" in script:  # the append: directory, file, line
            self.disk[args[1]] = self.disk.get(args[1], "") + args[2] + "\n"
        elif "cat" in script:  # the read: exit 3 when absent
            return (0, self.disk[args[0]], "") if args[0] in self.disk else (3, "", "")
        return 0, "", ""  # ProcessTag.kill_on's search: nothing of ours runs

    def _rm(self, argv, host):
        self.disk.pop(argv[-1], None)
        return 0, "", ""


RMEM = "net.ipv4.tcp_rmem"


@pytest.fixture
def lab(state_dir, tmp_path, monkeypatch):
    """A servers testbed named lab-100g whose session changed tcp_rmem on both hosts, then died."""
    from hostnet.knobs.journal_lock import release
    from hostnet.testbed import Endpoint, Testbed
    hosts = {n: Server(n, "4096 131072 6291456") for n in ("alpha", "beta")}
    path = state_dir / "lab-100g.journal"

    def from_yaml(_):
        eps = {"sender": Endpoint("sender", hosts["alpha"], "ens1", "198.18.1.1", [0], "alpha"),
               "receiver": Endpoint("receiver", hosts["beta"], "ens1", "198.18.1.2", [0], "beta")}
        return Testbed("lab-100g", "servers", eps, dict(hosts), Journal(path, on_hosts=True))
    monkeypatch.setattr(servers, "from_yaml", from_yaml)
    tb = from_yaml(None)
    for h in hosts.values():
        tb.journal.set(h, KNOBS["sysctl"], RMEM, "4096 131072 1048576")
    release(path)  # the session died
    return hosts, path, tmp_path / "testbed.yaml"


def test_each_host_keeps_its_own_lines_root_only_and_synced(lab):
    hosts, path, _ = lab
    copy = f"{HOST_DIR}/lab-100g.journal"
    for name, h in hosts.items():
        lines = [json.loads(line) for line in h.disk[copy].splitlines()]
        assert [(e["host"]["name"], e["prior"]) for e in lines] == [(name, "4096 131072 6291456")]
        append = next(s for s in h.scripts if ">>" in s)
        assert all(w in append for w in ("umask 077", 'chmod 700 "$1"', 'chmod 600 "$2"', 'sync "$2" "$1"'))
    assert len(Journal(path).entries()) == 2  # and the controller's copy has both


@pytest.mark.parametrize("controller_copy", [True, False])
def test_restore_file_works_from_either_copy_and_says_which(lab, capsys, controller_copy):
    hosts, path, yaml_path = lab
    if not controller_copy:
        path.unlink()  # the controller's /run was a tmpfs, and it rebooted
    assert cli.main(["restore", "--file", str(yaml_path)]) == 0
    out = capsys.readouterr().out
    assert ("the controller's journal" in out) == controller_copy
    assert "alpha's own copy" in out and "beta's own copy" in out
    for h in hosts.values():
        assert h.files[sysctl_path(RMEM)] == "4096 131072 6291456\n" and h.disk == {}
    assert not path.exists()


def test_restore_file_with_no_journal_anywhere_warns_and_fails(lab, capsys):
    hosts, path, yaml_path = lab
    path.unlink()
    for h in hosts.values():
        h.disk.clear()
    assert cli.main(["restore", "--file", str(yaml_path)]) == 1
    err = capsys.readouterr().err
    assert "warning: no journal" in err and HOST_DIR in err


SSH_CONFIG = """
Host lab-host-*
    User alice
    Port 2200
    ProxyJump gw

Host gw
    HostName 203.0.113.50
    User bob
"""


def test_hosts_are_resolved_through_the_named_ssh_config_and_the_yaml_wins(tmp_path):
    (tmp_path / "lab.ssh_config").write_text(SSH_CONFIG)
    doc = valid()
    doc["ssh"]["config"] = "lab.ssh_config"  # relative to the testbed.yaml
    doc["hosts"]["receiver1"].update(user="root", proxy_jump="none")
    tb = servers.from_yaml(write(tmp_path, doc))
    s, r = tb.sender.host, tb.receiver.host
    assert (s.user, s.port, s.proxy_jump.address, s.proxy_jump.user) == ("root", 2200, "203.0.113.50", "bob")
    assert (r.user, r.port, r.proxy_jump) == ("root", 2200, None)
    doc["hosts"]["sender1"].pop("user")
    s = servers.from_yaml(write(tmp_path, doc)).sender.host
    assert s.user == "alice" and s.sudo  # the file's User, through sudo


def test_proxy_jump_in_the_yaml_is_one_shared_jump_host(tmp_path):
    doc = valid()
    for h in doc["hosts"].values():
        h["proxy_jump"] = "admin@203.0.113.60:2022"
    tb = servers.from_yaml(write(tmp_path, doc))
    jump = tb.sender.host.proxy_jump
    assert jump is tb.receiver.host.proxy_jump
    assert (jump.address, jump.user, jump.port, jump.known_hosts) == ("203.0.113.60", "admin", 2022,
                                                                      tb.sender.host.known_hosts)


def test_the_users_ssh_config_applies_unless_the_yaml_turns_it_off(tmp_path, home):
    (home / ".ssh" / "config").write_text(SSH_CONFIG)
    doc = valid()
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.proxy_jump.address == "203.0.113.50"
    doc["ssh"]["config"] = False
    assert servers.from_yaml(write(tmp_path, doc)).sender.host.proxy_jump is None


def test_a_named_ssh_config_must_exist_and_be_usable(tmp_path):
    doc = valid()
    doc["ssh"]["config"] = str(tmp_path / "nope")
    with pytest.raises(servers.TestbedFileError, match=r"ssh\.config .*nope does not exist"):
        servers.from_yaml(write(tmp_path, doc))
    (tmp_path / "exec.conf").write_text("Match exec true\n    User x\n")
    doc["ssh"]["config"] = str(tmp_path / "exec.conf")
    with pytest.raises(servers.TestbedFileError, match=r"ssh\.config: .*exec\.conf line 1: 'Match exec'"):
        servers.from_yaml(write(tmp_path, doc))
    (tmp_path / "loop.conf").write_text("Host lab-host-0\n    ProxyJump lab-host-0\n")
    doc["ssh"]["config"] = str(tmp_path / "loop.conf")
    with pytest.raises(servers.TestbedFileError, match=r"hosts\.sender1: .*ProxyJump loop"):
        servers.from_yaml(write(tmp_path, doc))


def test_testbed_check_names_a_host_that_does_not_answer_and_exits_non_zero(tmp_path, capsys):
    """Issue 33: an unreachable host (there: a rejected host key) was `reachable ✗ no` with rc 0.
    Loopback port 1 has nothing listening: the connection is refused at once, nothing is sent."""
    doc = valid()
    for h in doc["hosts"].values():
        h.update(address="127.0.0.1", port=1)
    doc["ssh"].update(config=False, connect_timeout_s=5)
    rc = cli.main(["testbed", "check", str(write(tmp_path, doc))])
    out, err = capsys.readouterr()
    assert rc == 1 and "reachable" in out
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("hostnet: ") and " is not reachable: " in line for line in lines)
    assert {line.split()[1] for line in lines} == {"sender1", "receiver1"}


def test_restore_file_removes_what_the_dead_session_left_in_each_hosts_tmp(lab, state_dir, capsys):
    """#33: SSH runs left /tmp/hostnet-<hex>.out/.err on the hosts. Their names now begin with the
    testbed's files_prefix, and `hostnet restore --file` removes those after stopping its processes."""
    from hostnet.hosts import ProcessTag
    from hostnet.hosts.base import remote_temp_prefix
    hosts, _, yaml_path = lab
    prefix = ProcessTag(f"{state_dir}/lab-100g").files_prefix
    assert re.fullmatch(r"hostnet-[0-9a-f]{12}", prefix)
    assert remote_temp_prefix(SimpleNamespace(tag=ProcessTag(f"{state_dir}/lab-100g")), "out") == prefix + "-out-"
    assert cli.main(["restore", "--file", str(yaml_path)]) == 0
    for h in hosts.values():
        assert ["sh", "-c", 'rm -rf -- /tmp/"$1"-*', "sh", prefix] in h.commands
