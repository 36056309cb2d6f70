"""The Host seam: the only place in hostnet where a command runs.

Every command is an argv list (check_argv). Host is the interface; LocalHost and NetnsHost
(local.py) run commands on this machine, SshHost (ssh.py) on a server through fabric.
ProcessTag marks every process hostnet starts so a restore after a crash finds it.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

import platformdirs

T = TypeVar("T")
# Bytes handed to a stream's sink at a time, and the pipe that buffers the command's output
# meanwhile: the sink digests a chunk while the writer fills the pipe, so the two overlap
# instead of taking turns (a default 64 KB pipe stalls the writer within a millisecond).
STREAM_CHUNK = 1 << 18
STREAM_PIPE = 1 << 20  # Linux's default limit for unprivileged pipes (fs.pipe-max-size)
# How long a campaign waits for a host that stopped answering mid-point (a rebooting server, a
# flapping link, an sshd that died) before it stops, saying so (`--reconnect-wait`).
RECONNECT_WAIT_S = 120.0


# The sudo password of non-root SSH logins (hosts/ssh.py). Read by SshHost only, and kept out of
# the environment of every process hostnet starts here (child_env).
SUDO_PASSWORD_VAR = "HOSTNET_SUDO_PASSWORD"


def state_dir() -> Path:
    """This controller's journals, locks, testbed state and scratch files (HOSTNET_STATE_DIR)."""
    return Path(os.environ.get("HOSTNET_STATE_DIR", "/run/hostnet"))


def private_dir(path: Path) -> None:
    """Create a directory only its owner can enter (0700); tighten one this user owns already,
    unless others may write in it: a shared directory (/tmp, mode 1777) is refused, not changed
    (its sticky bit and its other users' access are not hostnet's to take away)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise HostError(f"{path}: not a directory of its own (a symlink?); hostnet keeps its journals "
                        f"and scratch files only in one (HOSTNET_STATE_DIR)")
    if st.st_mode & 0o022:
        raise HostError(f"{path}: writable by other users (mode {stat.S_IMODE(st.st_mode):o}); hostnet "
                        f"keeps its journals and scratch files only in a directory its owner alone can write: "
                        f"point HOSTNET_STATE_DIR at one (default /run/hostnet)")
    if st.st_uid == os.geteuid() and st.st_mode & 0o777 != 0o700:
        path.chmod(0o700)


def write_private(path: Path, data: bytes) -> None:
    """A file only its owner reads (0600), written whole: tmp, fsync, rename, never through a
    symlink. On a failure (a full disk) no .tmp is left and the OSError names the file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def scratch_dir() -> Path:
    """Where hostnet's temporary files on this machine go (tool output, perf.data, bpftrace
    programs): <state dir>/scratch, 0700, each entry named with the PID of the session that made
    it (scratch_prefix), so `hostnet restore` removes what a killed session left. A user who is not
    root and named no HOSTNET_STATE_DIR (reading a perf.data: `hostnet breakdown`) gets the scratch
    directory in their cache directory (~/.cache/hostnet/scratch): /run/hostnet is root's, and the
    journals and testbed state stay there, where root's `hostnet testbed status` and `restore` look."""
    if "HOSTNET_STATE_DIR" not in os.environ and os.geteuid() != 0:
        path = Path(platformdirs.user_cache_dir("hostnet")) / "scratch"
        private_dir(path.parent)
        private_dir(path)
        return path
    private_dir(state_dir())
    path = state_dir() / "scratch"
    private_dir(path)
    return path


def scratch_prefix(kind: str) -> str:
    return f"hostnet-{os.getpid()}-{kind}-"


def make_temp_dir(host: "Host", kind: str, where: str | None = None) -> str:
    """A private (mktemp: 0700) directory on host for a probe's files: in `where`, else in the
    host's scratch directory (this machine: scratch_dir()), else in the host's own /tmp, named
    after its testbed (remote_temp_prefix)."""
    where = where or host.scratch()
    args = ["-p", where, scratch_prefix(kind) + "XXXXXX"] if where else ["-p", "/tmp", remote_temp_prefix(host, kind)
                                                                         + "XXXXXX"]
    return host.run(["mktemp", "-d", *args]).stdout.strip()


def remote_temp_prefix(host: "Host", kind: str) -> str:
    """A remote host's temporary files begin with their testbed's files_prefix, so `hostnet
    restore --file` removes what a killed controller's session left there."""
    tag = getattr(host, "tag", None)
    return f"{tag.files_prefix if tag else 'hostnet'}-{kind}-"


def remove_dead_scratch() -> tuple[int, int]:
    """Remove the scratch entries of sessions that are no longer running: (entries, bytes)."""
    path = state_dir() / "scratch"
    if not path.is_dir() or path.is_symlink():
        return 0, 0
    count = size = 0
    for entry in path.iterdir():
        m = re.match(r"hostnet-([0-9]+)-", entry.name)
        if not m or _running(int(m.group(1))):
            continue
        files = [entry] if not entry.is_dir() or entry.is_symlink() else [p for p in entry.rglob("*") if p.is_file()]
        size += sum(p.lstat().st_size for p in files)
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        count += 1
    return count, size


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process hostnet starts: this one's, without the sudo password."""
    env = {k: v for k, v in os.environ.items() if k != SUDO_PASSWORD_VAR}
    return {**env, **(extra or {})}


class HostError(RuntimeError):
    """A command failed or a host cannot do what was asked."""


class HostUnreachable(HostError):
    """The host did not answer at all (an SSH link that dropped or cannot be opened): unlike a
    command that failed, nothing more can be done there until it answers again."""


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def checked(self, host_name: str) -> "Result":
        """Self, or one HostError line naming the host, the command and its last output line."""
        if not self.ok:
            lines = (self.stderr.strip() or self.stdout.strip()).splitlines()
            raise HostError(f"{host_name}: {' '.join(self.argv)} exited {self.returncode}: "
                            f"{lines[-1] if lines else 'no output'}")
        return self


def check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, (str, bytes)) or not argv:
        raise TypeError("commands are non-empty argv lists, never shell strings")
    return [str(a) for a in argv]


class Proc:
    """A background command: stop it, wait for it, read what it wrote."""

    def __init__(self, argv: list[str], popen: subprocess.Popen, out_path: Path, err_path: Path):
        self.argv = argv
        self._popen = popen
        self._out_path = out_path
        self._err_path = err_path

    @property
    def pid(self) -> int:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise HostError(f"{self.argv[0]} did not finish within {timeout} s") from exc

    def stop(self, sig: int = signal.SIGINT, grace: float = 5.0) -> int:
        """Signal the process group we created (by PID, never by name); escalate to SIGKILL."""
        if self._popen.poll() is None:
            for s, t in ((sig, grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self._popen.pid, s)
                except ProcessLookupError:
                    break
                try:
                    self._popen.wait(timeout=t)
                    break
                except subprocess.TimeoutExpired:
                    continue
        return self._popen.wait()

    def stdout(self) -> str:
        return self._out_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self._err_path.read_text(errors="replace")

    def close(self) -> None:
        self.stop()
        for p in (self._out_path, self._err_path):
            p.unlink(missing_ok=True)


class Host:
    """Interface every host implements; `name` appears in errors and manifests."""

    name: str = "host"

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float | None = 120,
            input: str | None = None) -> Result:
        raise NotImplementedError

    def start(self, argv: Sequence[str]) -> Proc:
        raise NotImplementedError

    def start_many(self, argvs: Sequence[Sequence[str]]) -> list[tuple[Proc, float]]:
        """Start several background commands as close together as the host allows; each with when
        it started (time.time() on this host's clock). This default starts them one by one;
        SshHost starts them all in one round trip."""
        out = []
        for argv in argvs:
            proc = self.start(argv)
            out.append((proc, time.time()))
        return out

    def stream(self, argv: Sequence[str], sink: Callable[[Iterable[bytes]], T], *, check: bool = True,
               timeout: float | None = 300) -> tuple[Result, T]:
        """Run a command whose stdout is too big to hold: `sink` consumes it as byte chunks while it
        runs (bounded memory) and its return value comes back with the Result (stdout "").
        This default holds the whole output; LocalHost and SshHost stream."""
        res = self.run(argv, check=check, timeout=timeout)
        return Result(res.argv, res.returncode, "", res.stderr), sink(iter([res.stdout.encode()]))

    def read_text(self, path: str) -> str:
        raise NotImplementedError

    def write_text(self, path: str, text: str) -> None:
        raise NotImplementedError

    def which(self, tool: str) -> str | None:
        raise NotImplementedError

    def scratch(self) -> str | None:
        """The directory for hostnet's temporary files on this host (None: the host's own /tmp)."""
        return None

    def describe(self) -> dict:
        return {"name": self.name, "kind": type(self).__name__}


def _running(pid: int) -> bool:
    """Exists and is not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def process_start_ticks(pid: int) -> int | None:
    """Start time of a process (clock ticks since boot): tells a PID apart from a reused one."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


class ProcessTag:
    """Marks every process hostnet starts for a testbed with an environment variable, so a
    later `hostnet restore` finds and stops them after the controller was killed (they run in
    their own sessions and outlive it). The mark is set at exec: no window where a started
    process is unknown, and PIDs reused by other processes are never matched."""

    VAR = "HOSTNET_OWNER"

    def __init__(self, tag: str):
        self.tag = tag
        self._needle = f"{self.VAR}={tag}".encode() + b"\0"

    def env(self) -> dict[str, str]:
        return child_env({self.VAR: self.tag})

    def running(self) -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if self._needle in (entry / "environ").read_bytes() and _running(int(entry.name)):
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids

    # Finds marked processes on any host through its shell (a fixed script; the tag is an argument).
    _FIND = ('for p in /proc/[0-9]*; do tr "\\0" "\\n" < "$p/environ" 2>/dev/null | grep -qxF "$1" '
             '&& echo "${p#/proc/}"; done; true')

    def kill_on(self, host: "Host") -> list[int]:
        """Stop marked processes on a (remote) host, e.g. after the controller died mid-run, and
        remove the temporary files they and their probes had there (files_prefix)."""
        pids = [int(p) for p in host.run(["sh", "-c", self._FIND, "sh", f"{self.VAR}={self.tag}"]).stdout.split()
                if p.isdigit()]
        if pids:
            host.run(["kill", "-KILL", *map(str, pids)], check=False)
        host.run(["sh", "-c", 'rm -rf -- /tmp/"$1"-*', "sh", self.files_prefix], check=False)
        return pids

    @property
    def files_prefix(self) -> str:
        """How this testbed's temporary files on a remote host begin (hex only: safe in a glob)."""
        return "hostnet-" + hashlib.sha256(self.tag.encode()).hexdigest()[:12]

    def kill_all(self, wait_s: float = 5.0) -> list[int]:
        killed = []
        for pid in self.running():
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while any(_running(pid) for pid in killed) and time.monotonic() < deadline:
            time.sleep(0.05)
        return killed


