"""Hosts on this machine: LocalHost runs commands here, NetnsHost inside a network namespace
(``ip netns exec``) as a host of its own."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterator, Sequence

from .base import (STREAM_CHUNK, STREAM_PIPE, Host, HostError, Proc, ProcessTag, Result, check_argv, child_env,
                   scratch_dir, scratch_prefix)


def _chunks(stream) -> Iterator[bytes]:
    while chunk := stream.read(STREAM_CHUNK):
        yield chunk


class LocalHost(Host):
    """Commands run on this machine, in the namespace hostnet itself runs in."""

    def __init__(self, name: str = "local", prefix: Sequence[str] = (),
                 tag: ProcessTag | None = None):
        self.name = name
        self._prefix = list(prefix)
        self.tag = tag

    def full_argv(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs: the host's prefix (e.g. ip netns exec NAME) + the checked argv."""
        return self._prefix + check_argv(argv)

    def run(self, argv, *, check=True, timeout=120, input=None) -> Result:
        full = self.full_argv(argv)
        try:
            cp = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input,
                                stdin=None if input is not None else subprocess.DEVNULL, env=child_env())
        except FileNotFoundError as exc:
            raise HostError(f"{self.name}: {full[0]} is not installed") from exc
        except subprocess.TimeoutExpired as exc:
            raise HostError(f"{self.name}: {' '.join(full)} timed out after {timeout} s") from exc
        res = Result(tuple(full), cp.returncode, cp.stdout, cp.stderr)
        return res.checked(self.name) if check else res

    def start(self, argv) -> Proc:
        full = self.full_argv(argv)
        fd_out, out = tempfile.mkstemp(prefix=scratch_prefix("out"), dir=scratch_dir())
        fd_err, err = tempfile.mkstemp(prefix=scratch_prefix("err"), dir=scratch_dir())
        try:
            popen = subprocess.Popen(full, stdout=fd_out, stderr=fd_err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=self.tag.env() if self.tag else child_env())
        except FileNotFoundError as exc:
            raise HostError(f"{self.name}: {full[0]} is not installed") from exc
        finally:
            os.close(fd_out)
            os.close(fd_err)
        return Proc(full, popen, Path(out), Path(err))

    def stream(self, argv, sink, *, check=True, timeout=300):
        full = self.full_argv(argv)
        fd_err, err = tempfile.mkstemp(prefix=scratch_prefix("err"), dir=scratch_dir())
        try:
            popen = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=fd_err, stdin=subprocess.DEVNULL,
                                     env=child_env())
        except FileNotFoundError as exc:
            Path(err).unlink(missing_ok=True)
            raise HostError(f"{self.name}: {full[0]} is not installed") from exc
        finally:
            os.close(fd_err)
        try:
            fcntl.fcntl(popen.stdout.fileno(), fcntl.F_SETPIPE_SZ, STREAM_PIPE)
        except OSError:  # not Linux, or a lower limit: a smaller pipe only costs overlap
            pass
        expired = threading.Event()

        def expire():
            expired.set()
            popen.kill()
        timer = threading.Timer(timeout, expire) if timeout else None
        if timer:
            timer.start()
        try:
            value = sink(_chunks(popen.stdout))
            popen.stdout.close()  # a sink that stopped early: the writer ends on SIGPIPE
            rc = popen.wait()
        except BaseException:
            popen.kill()
            popen.wait()
            raise
        finally:
            if timer:
                timer.cancel()
            stderr = Path(err).read_text(errors="replace")
            Path(err).unlink(missing_ok=True)
        if expired.is_set():
            raise HostError(f"{self.name}: {' '.join(full)} timed out after {timeout} s")
        res = Result(tuple(full), rc, "", stderr)
        return (res.checked(self.name) if check else res), value

    def read_text(self, path: str) -> str:
        if self._prefix:
            return self.run(["cat", path]).stdout
        try:
            return Path(path).read_text()
        except OSError as exc:
            raise HostError(f"{self.name}: cannot read {path}: {exc.strerror}") from exc

    def write_text(self, path: str, text: str) -> None:
        if self._prefix:
            self.run(["tee", path], input=text)
            return
        try:
            Path(path).write_text(text)
        except OSError as exc:
            raise HostError(f"{self.name}: cannot write {path}: {exc.strerror}") from exc

    def scratch(self) -> str:
        return str(scratch_dir())

    def which(self, tool: str) -> str | None:
        if self._prefix:
            res = self.run(["sh", "-c", 'command -v "$1"', "sh", tool], check=False)
            return res.stdout.strip() or None
        return shutil.which(tool)


class NetnsHost(LocalHost):
    """A network namespace on this machine, seen as a host of its own.

    ``ip netns exec`` also remounts /sys for the namespace, so sysfs paths of its
    interfaces (rps_cpus, ...) and /proc/net are the namespace's own.
    """

    def __init__(self, netns: str, name: str | None = None, tag: ProcessTag | None = None):
        super().__init__(name or netns, prefix=["ip", "netns", "exec", netns], tag=tag)
        self.netns = netns

    def describe(self) -> dict:
        return {**super().describe(), "netns": self.netns}


def netns_exists(netns: str) -> bool:
    return Path("/run/netns", netns).exists()
