"""Shared helpers and fixtures for every test (tests import them as `from conftest import ...`).

Layout (the rule below is enforced at collection):
- unit/ mirrors hostnet/: a test of hostnet/X/Y.py is unit/X/test_Y.py, of hostnet/Y.py
  unit/test_Y.py, of a package's __init__.py unit/X/test_X.py. unit/ is a package (its folders
  have __init__.py), so modules of one name in two floors (base, counters, rx_prof, native) test in
  files of one name without a prefix; tests/ itself is not, so `from conftest import` works. Tests of what is not
  hostnet: test_bench.py (bench/), test_kernel_patch.py (kernel_patch/), test_scripts.py (shell
  scripts), test_layout.py (the code's shape), test_packaging.py (pyproject.toml, environment.yml,
  the dependency floors, LICENSE, CITATION.cff). No root, no testbed.
- live/: every test marked `live` (root, network namespaces), and only those; files are
  test_live_<what they exercise>.py with a module-level `pytestmark` that includes pytest.mark.live.
  They run only when asked for (`pytest --live` or HOSTNET_LIVE=1; `make test` does); otherwise
  each is skipped and the summary says how many.
- integration/: no root either, but each test starts a heavy program of its own: import-linter over
  the tree, a Jupyter kernel, pytest, a fresh Python importing the charts, hostnet's C tools compiled
  and run. test_<what it exercises>.py; make test-unit leaves them to make test.
- notebooks/: the notebooks themselves (papermill, nbval, conventions), the report in Chromium, and
  the wheel installed in a fresh venv, replaying a notebook of a copied checkout.
- fixtures/: captured tool output; fixtures/README.md says how each was captured.
Basenames are unique within each folder of tests/ and across live/, integration/ and notebooks/ (no
__init__.py there).
"""
import contextlib
import os
import shutil
import time
from pathlib import Path

import pytest

from hostnet.hosts import Host, HostError, Result
from hostnet.notebook import batch_kernel
from hostnet.probes.counters import _SNAPSHOT_SH as _COUNTERS_SH
from hostnet.probes.perf import CONTROL_SH as _PERF_CONTROL_SH

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent

# Live sections top a campaign up until its verdicts are decided (hostnet.measure.topup); the live tests
# check their sweeps, and the loop is tested on a fake runner (unit/test_topup.py): no top-up here,
# or a test's 1-repetition sweep would spend the default budget (30 runs) on it. Kernels papermill
# starts inherit it.
os.environ.setdefault("HOSTNET_TOP_UP_RUNS", "0")


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def gather(chunks, sizes: list | None = None) -> bytes:
    """A Host.stream sink: the whole output, noting each chunk's size in `sizes`."""
    out = b""
    for chunk in chunks:
        if sizes is not None:
            sizes.append(len(chunk))
        out += chunk
    return out


class FakeHost(Host):
    """A host whose files live in a dict and whose commands are recorded, not run."""

    def __init__(self, name="fake", files=None, handlers=None):
        self.name = name
        self.files = dict(files or {})
        self.handlers = handlers or {}
        self.commands: list[list[str]] = []

    def run(self, argv, *, check=True, timeout=120, input=None):
        argv = list(argv)
        self.commands.append(argv)
        handler = self.handlers.get(argv[0])
        if handler is None:
            raise HostError(f"{self.name}: {argv[0]} is not installed")
        rc, out, err = handler(argv, self)
        res = Result(tuple(argv), rc, out, err)
        if check and rc != 0:
            raise HostError(f"{self.name}: {' '.join(argv)} exited {rc}: {err.strip()}")
        return res

    def read_text(self, path):
        if path not in self.files:
            raise HostError(f"{self.name}: cannot read {path}: No such file")
        return self.files[path]

    def write_text(self, path, text):
        if path not in self.files:
            raise HostError(f"{self.name}: cannot write {path}: No such file")
        self.files[path] = text

    def which(self, tool):
        return f"/usr/bin/{tool}" if tool in self.handlers else None

    def describe(self):
        return {"name": self.name, "kind": "FakeHost"}


@pytest.fixture
def fake_host():
    return FakeHost()


class FakeRemote:
    """One server behind SshHost without a network: fabric.Connection replaced by a fake whose
    commands this object answers (files for `cat` and `printf >`, "ack" to perf's control
    commands, its clock to `date`, counter snapshots from its files, a PID for every background start (and a start
    time for start_many's), running for lifetime_s or until killed, a listening socket for `ss`).
    drop_after(seconds, when=pred): `seconds` after the first command matching pred the link
    drops: the command then running fails as paramiko's does (SSHException), open connections
    die, and reconnecting fails (OSError: no route) for the next `down_for` attempts (None: for
    ever), after which the server answers again."""

    def __init__(self, files: dict | None = None):
        self.files = dict(files or {})
        self.commands: list[list[str]] = []
        self.up, self.generation, self.refused = True, 0, 0
        self.down_for: int | None = None
        self._drop_when, self._drop_delay, self._drop_at = None, 0.0, None
        self._pid = 1000
        self.running: dict[int, float] = {}  # background processes: PID -> when they exit by themselves
        self.lifetime_s = 1.0

    def drop_after(self, seconds: float, when, down_for: int | None = None) -> None:
        self._drop_when, self._drop_delay, self.down_for = when, seconds, down_for

    def install(self, monkeypatch) -> None:
        import fabric
        remote = self

        class Channel:  # a streamed command (perf script): no output, exit 0
            def recv(self, n):
                return b""

            def recv_exit_status(self):
                return 0

            def shutdown_write(self):
                pass

            def close(self):
                pass

        class Client:
            def set_missing_host_key_policy(self, policy):
                pass

            def load_host_keys(self, path):
                pass

            def exec_command(self, command, timeout=None):
                from types import SimpleNamespace
                channel = Channel()
                return (SimpleNamespace(channel=channel, write=lambda text: None), SimpleNamespace(channel=channel),
                        SimpleNamespace(read=lambda: b""))

        class Connection:
            def __init__(self, host, **kwargs):
                from types import SimpleNamespace
                self.client, self.generation, self.is_connected = Client(), None, False
                self.transport = SimpleNamespace(channel_timeout=3600, set_keepalive=lambda s: None, sock=None)

            def open(self):
                remote.open_attempt()
                self.generation, self.is_connected = remote.generation, True

            def close(self):
                self.is_connected = False

            def run(self, command, **kwargs):
                return remote.answer(self, command)
        monkeypatch.setattr(fabric, "Connection", Connection)

    def open_attempt(self) -> None:
        if not self.up:
            self.refused += 1
            if self.down_for is None or self.refused <= self.down_for:
                raise OSError(113, "No route to host")
            self.up = True

    def answer(self, conn, command: str):
        import shlex
        from types import SimpleNamespace

        import paramiko
        now = time.monotonic()
        if self._drop_at is not None and now >= self._drop_at and self.up:
            self.up, self._drop_at = False, None
            self.generation += 1
        if not self.up or conn.generation != self.generation:
            conn.is_connected = False
            raise paramiko.SSHException("SSH session not active")
        argv = shlex.split(command)
        self.commands.append(argv)
        if self._drop_when is not None and self._drop_when(argv):
            self._drop_at, self._drop_when = now + self._drop_delay, None
        rc, out = 0, ""
        from hostnet.hosts import ProcessTag
        from hostnet.hosts.ssh import _START, _START_MANY
        if argv[:2] == ["sh", "-c"] and argv[2] == _START:  # a background start
            self._pid += 1
            self.running[self._pid] = now + self.lifetime_s
            out = f"{self._pid}\n"
        elif argv[:2] == ["bash", "-c"] and argv[2] == _START_MANY:  # many background starts
            for _ in range(1 + argv[5:].count(argv[4])):
                self._pid += 1
                self.running[self._pid] = now + self.lifetime_s
                out += f"{self._pid} {time.time():.6f}\n"
        elif argv[:2] == ["sh", "-c"] and argv[2].startswith("test -d"):  # running?
            rc = 0 if self.running.get(int(argv[4]), 0) > now else 1
        elif argv[0] == "kill" and argv[-1].startswith("-"):  # a process group
            self.running.pop(int(argv[-1][1:]), None)
        elif argv[:2] == ["kill", "-KILL"]:  # marked processes (ProcessTag.kill_on)
            for pid in argv[2:]:
                self.running.pop(int(pid), None)
        elif argv[:2] == ["sh", "-c"] and argv[2] == ProcessTag._FIND:  # the marked processes still running
            out = "".join(f"{pid}\n" for pid, until in self.running.items() if until > now)
        elif argv[:2] == ["sh", "-c"] and argv[2] == _PERF_CONTROL_SH:  # perf record --control
            out = "ack\n"
        elif argv[:2] == ["sh", "-c"] and argv[2] == _COUNTERS_SH:  # an endpoint's counter snapshot
            marker = argv[5]
            out = "".join(f"{marker} {name}\n{text}" for name, text in (
                ("ethtool_S", ""), ("snmp", self.files.get("/proc/net/snmp", "")),
                ("netstat", self.files.get("/proc/net/netstat", "")), ("link", "[]\n")))
        elif argv[:2] == ["sh", "-c"] and argv[2].startswith("printf"):
            self.files[argv[5]] = argv[4]
        elif argv[0] == "cat":
            out = self.files.get(argv[1], "")
        elif argv[0] == "ss":
            out = "LISTEN 0 5 *:5201 *:*\n"
        elif argv == ["date", "+%s.%N"]:  # perf's window on the server's clock (probes.perf.clock_offset_s)
            out = f"{time.time():.9f}\n"
        return SimpleNamespace(exited=rc, stdout=out, stderr="")


RECORDED_ONE_TO_ONE = "20261124-023336-one-to-one-embedded"


def busy_campaign(tmp_path, flagged_ns=None) -> str:
    """The recorded one-to-one campaign (manifests, tidy tables, sweep.json) as if a busy machine had
    flagged every run (or those of the n in flagged_ns) for foreign load, and nothing else."""
    import json
    import shutil
    src, dst = REPO / "data" / "runs" / RECORDED_ONE_TO_ONE, tmp_path / "runs" / "busy"
    dst.mkdir(parents=True)
    shutil.copy(src / "sweep.json", dst / "sweep.json")
    for run in src.iterdir():
        if not (run / "manifest.json").exists():
            continue
        (dst / run.name).mkdir()
        shutil.copy(run / "tidy.csv", dst / run.name / "tidy.csv")
        m = json.loads((run / "manifest.json").read_text())
        m["contaminated"] = flagged_ns is None or m["point"]["flows"] in flagged_ns
        load = 140.0 + m["repetition"] % 3 if m["contaminated"] else 0.5
        m["load"] = {"local": {"foreign_cpu_pct": load, "contaminated": m["contaminated"],
                               "top": [["stress-ng", load - 42], ["chrome", 31.0]] if m["contaminated"] else []}}
        (dst / run.name / "manifest.json").write_text(json.dumps(m))
    return "busy"


_HOLDER = """
import sys
from hostnet.knobs import Journal
Journal(sys.argv[1]).lock()
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def journal_held_elsewhere(path):
    """A second controller: another process holds the journal's lock for the block (yields its PID)."""
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout.readline().strip() == "holding"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(10)


class FakeMachine(FakeHost):
    """A host that keeps the state every knob reads and writes (sysfs and procfs files, ethtool
    features, rings, channels, coalescing and ntuple rules, MTU, gro_max_size, XDP, qdisc, nftables,
    MSRs, mounts, irqbalance, NAPI threads) and answers the commands the knobs run as the tools would, so a journal can
    be applied and restored against it and its whole state compared before and after."""

    def __init__(self, name="machine", ifaces=("eth1",), cpus=2):
        self.state = {
            "ifaces": {i: {"mtu": 1500, "features": {f: False for f in _features().values()},
                           "rings": {"rx": 512, "tx": 512}, "channels": {"rx": 0, "tx": 0, "other": 1, "combined": 4},
                           "rules": {}, "xdp": None, "qdisc": "mq", "gro_max_size": 65536,
                           "coalesce": {"rx-usecs": 3, "rx-frames": 0, "tx-usecs": 0, "tx-frames": 0,
                                        "adaptive-rx": "off", "adaptive-tx": "off"},
                           "limits": {"tso_max_size": 524280, "gso_max_size": 65536, "gso_ipv4_max_size": 65536,
                                      "gro_ipv4_max_size": 65536}} for i in ifaces},
            "nft": None, "msr": {c: 0x600 for c in range(cpus)}, "mounts": set(), "irqbalance": "active",
            "napi": {},  # iface -> {pid: cpu list}
        }
        files = {"/proc/cpuinfo": "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse\n", "/proc/cmdline": "ro\n",
                 "/proc/irq/30/smp_affinity_list": "0-1\n"}
        for i in ifaces:
            files[f"/sys/class/net/{i}/threaded"] = "0\n"
            for q in ("rx-0", "tx-0"):
                files[f"/sys/class/net/{i}/queues/{q}/{'xps_cpus' if q[0] == 't' else 'rps_cpus'}"] = "0\n"
            files[f"/sys/class/net/{i}/queues/rx-0/rps_flow_cnt"] = "0\n"
        tools = ("ethtool", "ip", "tc", "nft", "rdmsr", "wrmsr", "mount", "umount", "systemctl", "irqbalance",
                 "ps", "taskset", "ls")
        super().__init__(name, files=files, handlers={t: getattr(self, "_" + t) for t in tools})
        self.handlers[self.BIGTCP] = self._bigtcp

    BIGTCP = "/opt/hostnet/bigtcp"  # where tests' native.ensure says bigtcp was built

    def _bigtcp(self, argv, h):
        """hostnet's bigtcp: show/set the size limits, with the kernel's coupling (a GSO/GRO limit
        of 64 KB or less moves the IPv4 one with it)."""
        dev = self.state["ifaces"][argv[2]]
        limits = {**dev["limits"], "gro_max_size": dev["gro_max_size"]}
        if argv[1] == "show":
            return 0, "bigtcp dev=" + argv[2] + "".join(f" {k}={v}" for k, v in limits.items()) + "\n", ""
        for attr, value in zip(argv[3::2], argv[4::2], strict=True):  # generic limit first, as the kernel
            if int(value) > limits["tso_max_size"]:
                return 1, "", f"bigtcp: {argv[2]}: the kernel refused: Invalid argument"
            if attr == "gro_max_size":
                dev["gro_max_size"] = int(value)
            else:
                dev["limits"][attr] = int(value)
            if attr in ("gso_max_size", "gro_max_size") and int(value) <= 65536:
                dev["limits"][attr.replace("_max", "_ipv4_max")] = int(value)
        return 0, "", ""

    def snapshot(self) -> dict:
        import copy
        return copy.deepcopy({"state": self.state, "files": self.files})

    def read_text(self, path):
        if path == "/proc/mounts":
            return "".join(f"nodev {m} {'tracefs' if 'tracing' in m else 'debugfs'} rw 0 0\n"
                           for m in sorted(self.state["mounts"]))
        if path.startswith("/proc/") and path.endswith("/status") and path.split("/")[2].isdigit():
            pid = int(path.split("/")[2])
            for threads in self.state["napi"].values():
                if pid in threads:
                    return f"Name:\tnapi\nCpus_allowed_list:\t{threads[pid]}\n"
        return super().read_text(path)

    def write_text(self, path, text):
        if path.startswith("/proc/sys/"):  # the kernel prints multi-value sysctls tab-separated
            # (numbers: tcp_rmem, ip_local_port_range), lists of names space-separated
            sep = " " if path.endswith("congestion_control") else "\t"
            text = sep.join(text.split()) + "\n"
        super().write_text(path, text)
        if path.endswith("/threaded"):
            iface = path.split("/")[4]
            if text.strip() == "1":
                self.state["napi"].setdefault(iface, {8193: "0-1"})
            else:
                self.state["napi"].pop(iface, None)

    def _ethtool(self, argv, h):
        flag, iface = argv[1], argv[2]
        dev = self.state["ifaces"].get(iface)
        if dev is None:
            return 1, "", f"Cannot get device settings: No such device {iface}"
        if flag == "-k":
            return 0, f"Features for {iface}:\n" + "".join(f"{n}: {'on' if v else 'off'}\n"
                                                          for n, v in dev["features"].items()), ""
        if flag == "-K":
            dev["features"][_features()[argv[3]]] = argv[4] == "on"
            return 0, "", ""
        if flag in ("-g", "-l"):
            cur = dev["rings" if flag == "-g" else "channels"]
            rows = lambda d: "".join(f"{k.upper()}:\t{v}\n" for k, v in d.items())  # noqa: E731
            return 0, f"Pre-set maximums:\n{rows({k: 4096 for k in cur})}Current hardware settings:\n{rows(cur)}", ""
        if flag in ("-G", "-L"):
            dev["rings" if flag == "-G" else "channels"][argv[3]] = int(argv[4])
            return 0, "", ""
        if flag == "-c":
            c = dev["coalesce"]
            return 0, (f"Coalesce parameters for {iface}:\nAdaptive RX: {c['adaptive-rx']}  TX: {c['adaptive-tx']}\n"
                       + "".join(f"{k}: {v}\n" for k, v in c.items() if not k.startswith("adaptive"))), ""
        if flag == "-C":
            dev["coalesce"][argv[3]] = argv[4] if argv[3].startswith("adaptive") else int(argv[4])
            return 0, "", ""
        if flag == "-n":
            rule = dev["rules"].get(int(argv[4]))
            return (0, _rule_text(int(argv[4]), rule), "") if rule else (1, "", "rxclass: Cannot get RX class rule")
        if flag == "-N" and argv[3] == "delete":
            return (0, "", "") if dev["rules"].pop(int(argv[4]), None) else (1, "", "rmgr: Cannot delete RX class rule")
        if flag == "-N":
            loc = int(argv[-1])
            if loc in dev["rules"]:
                return 1, "", "rmgr: Cannot insert RX class rule: File exists"
            dev["rules"][loc] = dict(zip(argv[3:-2:2], argv[4:-2:2], strict=True))
            return 0, "", ""
        return 1, "", f"unknown ethtool call {argv}"

    def _ip(self, argv, h):
        import json as _json
        if argv[1:3] == ["-j", "-4"] or argv[1:3] == ["-j", "-6"]:
            return 0, "[]", ""  # no default route: no management interface here
        dev = self.state["ifaces"][argv[-1] if "show" in argv else argv[4]]
        if argv[1:5] == ["-j", "link", "show", "dev"]:
            return 0, _json.dumps([{"mtu": dev["mtu"]}]), ""
        if argv[1:6] == ["-d", "-j", "link", "show", "dev"]:
            xdp = {"mode": 1, "prog": {"name": "hostnet_pass", "id": 7}} if dev["xdp"] else None
            return 0, _json.dumps([{"mtu": dev["mtu"], "gro_max_size": dev["gro_max_size"],
                                    **({"xdp": xdp} if xdp else {})}]), ""
        if argv[5] == "mtu":
            dev["mtu"] = int(argv[6])
        elif argv[5] == "gro_max_size":
            dev["gro_max_size"] = int(argv[6])
            if int(argv[6]) <= 65536:  # the kernel moves the IPv4 limit with it
                dev["limits"]["gro_ipv4_max_size"] = int(argv[6])
        elif argv[5] == "xdpdrv":
            dev["xdp"] = None if argv[6] == "off" else "pass"
        return 0, "", ""

    def _tc(self, argv, h):
        import json as _json
        dev = self.state["ifaces"][argv[argv.index("dev") + 1]]
        if argv[1] == "-j":
            q = dev["qdisc"]
            return 0, _json.dumps([{"kind": "pfifo", "root": True, "options": {"limit": q[1]}} if isinstance(q, tuple)
                                   else {"kind": q, "root": True}]), ""
        dev["qdisc"] = ("pfifo", int(argv[-1])) if argv[2] == "replace" else "mq"
        return 0, "", ""

    def _nft(self, argv, h):
        import json as _json

        from hostnet.knobs.loss import SCALE
        if argv[1:3] == ["-f", "-"]:
            raise AssertionError("nft -f - takes the ruleset on stdin: FakeMachine.run keeps it")
        if argv[1] == "delete":
            self.state["nft"] = None
            return 0, "", ""
        if self.state["nft"] is None:
            return 1, "", "Error: No such file or directory"
        if argv[1] == "-j":
            threshold = round(self.state["nft"] * SCALE)
            rule = {"rule": {"expr": [{"match": {"left": {"numgen": {"mod": SCALE}}, "right": threshold}}]}}
            return 0, _json.dumps({"nftables": [rule]}), ""
        return 0, "table inet hostnet_loss {}", ""

    def run(self, argv, *, check=True, timeout=120, input=None):
        if list(argv[:3]) == ["nft", "-f", "-"]:
            import re as _re
            self.commands.append(list(argv))
            m = _re.search(r"< ([0-9]+)", input)
            from hostnet.knobs.loss import SCALE
            self.state["nft"] = int(m.group(1)) / SCALE
            from hostnet.hosts import Result
            return Result(tuple(argv), 0, "", "")
        return super().run(argv, check=check, timeout=timeout, input=input)

    def _rdmsr(self, argv, h):
        return 0, "".join(f"{v:x}\n" for _, v in sorted(self.state["msr"].items())), ""

    def _wrmsr(self, argv, h):
        self.state["msr"] = {c: int(argv[-1], 16) for c in self.state["msr"]}
        return 0, "", ""

    def _mount(self, argv, h):
        self.state["mounts"].add(argv[-1])
        return 0, "", ""

    def _umount(self, argv, h):
        if argv[-1] not in self.state["mounts"]:
            return 32, "", f"umount: {argv[-1]}: not mounted."
        self.state["mounts"].discard(argv[-1])
        return 0, "", ""

    def _systemctl(self, argv, h):
        if argv[1] == "is-active":
            return (0 if self.state["irqbalance"] == "active" else 3), self.state["irqbalance"] + "\n", ""
        self.state["irqbalance"] = "active" if argv[1] == "start" else "inactive"
        return 0, "", ""

    def _irqbalance(self, argv, h):
        return 0, "", ""

    def _ps(self, argv, h):
        return 0, "".join(f"{pid} napi/{i}-{pid}\n" for i, t in self.state["napi"].items() for pid in t), ""

    def _taskset(self, argv, h):
        for threads in self.state["napi"].values():
            if int(argv[-1]) in threads:
                threads[int(argv[-1])] = argv[-2]
        return 0, "", ""

    def _ls(self, argv, h):
        return 2, "", "ls: cannot access: No such file or directory"


def _features() -> dict:
    from hostnet.knobs.ethtool import FEATURES
    return FEATURES


def _rule_text(loc: int, rule: dict) -> str:
    """A rule as `ethtool -n IFACE rule LOC` prints it (masks inverted: 0 = matched)."""
    types = {"tcp4": "TCP over IPv4", "udp4": "UDP over IPv4"}
    ip = lambda k: f"{rule[k]} mask: 0.0.0.0" if k in rule else "0.0.0.0 mask: 255.255.255.255"  # noqa: E731
    port = lambda k: f"{rule[k]} mask: 0x0" if k in rule else "0 mask: 0xffff"  # noqa: E731
    action = "Drop" if rule["action"] == "-1" else f"Direct to queue {rule['action']}"
    return (f"Filter: {loc}\n\tRule Type: {types[rule['flow-type']]}\n\tSrc IP addr: {ip('src-ip')}\n"
            f"\tDest IP addr: {ip('dst-ip')}\n\tTOS: 0x0 mask: 0xff\n\tSrc port: {port('src-port')}\n"
            f"\tDest port: {port('dst-port')}\n\tAction: {action}\n\n")


LIVE_DIR = Path(__file__).parent / "live"


def live_rule_violations(items, live_dir: Path = LIVE_DIR) -> list[str]:
    """(node id, path, marked live) of collected tests -> one line per test that breaks the rule:
    a test under live/ must be marked live, and a test marked live must be under live/."""
    out = []
    for nodeid, path, marked in items:
        inside = Path(path).resolve().is_relative_to(Path(live_dir).resolve())
        if inside and not marked:
            out.append(f"{nodeid}: under {Path(live_dir).name}/ but not marked live")
        elif marked and not inside:
            out.append(f"{nodeid}: marked live but not under {Path(live_dir).name}/")
    return out


# Live tests change the host (namespaces, sysctls, an apt install, a kernel build): only on request.
LIVE_ENV = "HOSTNET_LIVE"
LIVE_OFF = f"live tests are opt-in: pytest --live or {LIVE_ENV}=1 (root; make test sets it)"


# As in hostnet's own processes: jsonschema without rfc3987_syntax's grammars, 2.7 s sooner per test
# process (a no-op once nbval's plugin has imported nbformat).
batch_kernel.skip_unused_imports()

# The notebooks (nbval) and what drives them whole (papermill, the browser, the wheel): marked
# `notebooks`.
NOTEBOOK_DIRS = ("notebooks", "tests/notebooks")


def pytest_addoption(parser):
    parser.addoption("--live", action="store_true",
                     help=f"also run the live tests (tests/live/: root, network namespaces, host settings, "
                          f"apt installs, a kernel build); the same as {LIVE_ENV}=1")


def live_requested(config) -> bool:
    return bool(config.getoption("--live")) or os.environ.get(LIVE_ENV, "") not in ("", "0")


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(config, items):
    bad = live_rule_violations((i.nodeid, i.path, i.get_closest_marker("live") is not None) for i in items)
    if bad:
        raise pytest.UsageError("tests/live/ holds the live tests, and only those:\n  " + "\n  ".join(bad))
    if not live_requested(config):
        for item in items:
            if item.get_closest_marker("live"):
                item.add_marker(pytest.mark.skip(reason=LIVE_OFF))
    for item in items:  # `-m 'not notebooks'`: all but the notebooks and what drives them whole
        if any(item.path.is_relative_to(REPO / d) for d in NOTEBOOK_DIRS):
            item.add_marker(pytest.mark.notebooks)


def live_ready() -> str | None:
    """Why live tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "live tests need root (network namespaces)"
    missing = [t for t in ("ip", "iperf3", "perf", "ethtool") if not shutil.which(t)]
    if missing:
        return f"missing {', '.join(missing)} (make install)"
    return None


@pytest.fixture(autouse=True)
def _own_machine_ledger(request, monkeypatch, tmp_path_factory):
    """Tests on fake hosts keep their own machine ledger (knobs/machine.py), not this machine's in
    /run/hostnet; live tests change this machine's settings and share its ledger, as hostnet does."""
    if request.node.get_closest_marker("live") is None:
        where = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames \
            else tmp_path_factory.mktemp("ledger")
        monkeypatch.setenv("HOSTNET_LEDGER_DIR", str(where))


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("HOSTNET_STATE_DIR", str(d))
    return d


_SUMMARY: list[str] = []


@pytest.fixture
def summary_line():
    """Lines a test wants shown at the end of the run (e.g. fault-injection counts)."""
    return _SUMMARY.append


def live_skipped(reports) -> int:
    """How many of these test reports were skipped because live tests were not asked for."""
    return sum(1 for r in reports if isinstance(r.longrepr, tuple) and LIVE_OFF in str(r.longrepr[2]))


def pytest_terminal_summary(terminalreporter):
    skipped = live_skipped(terminalreporter.stats.get("skipped", []))
    if skipped:
        terminalreporter.write_line(f"hostnet: {skipped} live tests skipped ({LIVE_OFF})", yellow=True)
    if _SUMMARY:
        terminalreporter.section("hostnet measurements")
        for line in _SUMMARY:
            terminalreporter.write_line(line)


@pytest.fixture
def built_report(tmp_path):
    """The report over the committed figures and their metadata (as `make figures` leaves them)."""
    from hostnet.notebook import report
    figs = tmp_path / "figures"
    shutil.copytree(REPO / "figures", figs, ignore=shutil.ignore_patterns("index.html"))
    return report.build(figs)


# --- the patched kernel's rx_prof output ------------------------------------------------------
RX_PROF_CONSOLE = "rx_prof_console.txt"  # serial console of kernel_patch/boot-test.sh (see fixtures/README.md)


def rx_prof_phase(name):
    """One phase's /proc/net/rx_prof text as the guest printed it."""
    lines = fixture_text(RX_PROF_CONSOLE).replace("\r", "").splitlines()
    start = lines.index(f"=== RXPROF phase {name}")
    end = lines.index("=== RXPROF end", start)
    return "\n".join(lines[start + 1:end]) + "\n"


def patched_kernel_host():
    """A host whose kernel has the whole rx_prof series (its file and sysctls) and bpftrace."""
    from hostnet.probes import kernel_source
    files = {kernel_source.RX_PROF_FILE: rx_prof_phase("start")}
    files.update({f"/proc/sys/net/core/{n}": "0\n" for n in kernel_source.RX_PROF_SYSCTLS})
    return FakeHost("patched", files=files, handlers={"bpftrace": lambda a, h: (0, "", "")})


# --- a fake real-server testbed, for the live paths of sections that need hardware -------------
class RecordingJournal:
    """Counts restores and keeps the last setting, instead of writing anything."""
    restored = 0

    def lock(self):
        """One controller per journal: nothing to hold here."""

    def restore(self):
        self.restored += 1
        return []

    def set(self, host, knob, key, value):
        self.last = (knob.name, key, value)


def servers_testbed(receiver_host):
    """A two-server testbed ("servers" kind) with a fake sender and the given receiver host."""
    from hostnet.testbed import Endpoint, Testbed
    eps = {"sender": Endpoint("sender", FakeHost("tx"), "enp1", "198.18.0.1", [0, 1], "tx"),
           "receiver": Endpoint("receiver", receiver_host, "enp37s0f1", "198.18.0.2", [12, 13], "rx")}
    return Testbed("yaml", "servers", eps, {"tx": eps["sender"].host, "rx": receiver_host}, RecordingJournal())


def capture_sweeps(monkeypatch, tmp_path, tb):
    """The sweeps a section's run_live would start, built and validated but not run."""
    from hostnet.measure import sweep
    from hostnet.testbed import servers
    specs = []

    def run_sweep(t, spec, *, runs_dir, campaign, progress=True, reconnect_wait_s=None):
        specs.append((t, spec))
        return {"campaign_dir": str(tmp_path)}

    monkeypatch.setattr(servers, "from_yaml", lambda path: tb)
    monkeypatch.setattr(sweep, "run_sweep", run_sweep)
    return specs


# --- headless Chromium with no network but loopback (the report, notebooks in JupyterLab, flame graphs)
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="Debian packages chromium and "
                                    "chromium-driver are not installed (make install adds them)")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# What a fetch off this machine logs under offline_chromium: its proxy is a closed loopback port.
BLOCKED = "net::ERR_PROXY_CONNECTION_FAILED"


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def offline_chromium(tmp_path, monkeypatch):
    """A factory of headless Chromium drivers that reach nothing but this machine: every request
    goes through a proxy on a closed loopback port (loopback itself bypasses proxies) and no name
    resolves; selenium-manager is told never to fetch a driver (both paths are given)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    monkeypatch.setenv("SE_OFFLINE", "true")
    drivers = []

    def start(window: str = "1200,2400"):
        profile = tmp_path / f"chromium-profile-{len(drivers)}"
        profile.mkdir()
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in BROWSER_FLAGS + [f"--window-size={window}", f"--user-data-dir={profile}",
                                     f"--proxy-server=http://127.0.0.1:{free_port()}",
                                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]:
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        drivers.append(webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts))
        return drivers[-1]
    yield start
    for d in drivers:
        d.quit()


def console_errors(driver) -> list[dict]:
    """The SEVERE browser-console entries since the last call (reading the log empties it)."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def fetch_is_blocked(driver, url: str = "https://cdn.jsdelivr.net/npm/vega@6") -> bool:
    """Whether a page's fetch of an outside URL fails at the blocking proxy (and not for another reason)."""
    driver.get_log("browser")
    outcome = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(() => done('fetched'), () => done('failed'))", url)
    if outcome != "failed":
        return False
    # The console's line for the failed request can reach the log after the promise has rejected
    # (CI saw it miss once on a page busy drawing widgets): read the log until it shows or 10 s pass.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(BLOCKED in e["message"] for e in console_errors(driver)):
            return True
        time.sleep(0.2)
    return False


def ink_share(png: bytes, box: tuple[float, float, float, float], css_width: float) -> float:
    """Share of the pixels inside `box` (x, y, width, height in the chart's CSS px; the screenshot
    may be drawn at another scale) that are ink: coloured or dark, not the white background or the
    light grey of grid lines. A plot area with no marks has almost none."""
    import io

    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    k = image.width / css_width
    x, y, w, h = (round(v * k) for v in box)
    crop = image.crop((x, y, x + w, y + h))
    raw = crop.tobytes()
    pixels = [raw[i:i + 3] for i in range(0, len(raw), 3)]
    ink = sum(1 for p in pixels if max(p) - min(p) > 40 or max(p) < 120)
    return ink / max(1, len(pixels))


def drawn_share(png: bytes) -> float:
    """Share of a screenshot's pixels that differ from its most common colour (the background)."""
    import io

    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = image.getcolors(image.width * image.height)
    return 1 - max(n for n, _ in counts) / (image.width * image.height)
