"""hostnet's small C tools (udpbatch, microbench): built from the sources in this package.

`make install` builds them; ensure() builds on demand, on the host that will run them, and
names the missing compiler when there is none. A binary's name carries its source's hash,
so an edited source is rebuilt and a stale binary is never run. On a remote host every
ensure() builds afresh in a new private directory (mktemp -d: mode 0700, its user's own), so a
binary someone else left under /tmp is never trusted and run (perhaps under sudo).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..hosts import Host, HostError, LocalHost

SOURCE_DIR = Path(__file__).resolve().parent
BUILD_DIR = SOURCE_DIR / "build"
TOOLS = ("udpbatch", "microbench")
# -fno-builtin-*: the compiler must not elide the malloc/free pairs microbench measures
CFLAGS = ["-O2", "-Wall", "-Wextra", "-fno-builtin-malloc", "-fno-builtin-free"]
REMOTE_TEMPLATE = "/tmp/hostnet-native.XXXXXXXX"  # mktemp -d template on a remote host


class NativeBuildError(RuntimeError):
    pass


def source(tool: str) -> str:
    if tool not in TOOLS:
        raise NativeBuildError(f"unknown native tool {tool!r}; one of {', '.join(TOOLS)}")
    return (SOURCE_DIR / f"{tool}.c").read_text()


def binary_name(tool: str) -> str:
    return f"{tool}-{hashlib.sha256(source(tool).encode()).hexdigest()[:10]}"


def compiler(host: Host) -> str:
    """$CC (on the controller), else cc, else gcc: the first one the host has."""
    wanted = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc"]
    for cc in wanted:
        if host.which(cc):
            return cc
    raise NativeBuildError(f"{host.name}: no C compiler ({' or '.join(wanted)} not found) to build hostnet's "
                           f"native tools; install gcc and libc6-dev (Debian: `make install` does)")


def compile_argv(cc: str, src: str, out: str) -> list[str]:
    return [cc, *CFLAGS, "-o", out, src]


def ensure(tool: str, host: Host | None = None) -> str:
    """Path of the built tool on host (this machine by default), building it if needed."""
    name = binary_name(tool)
    if host is None or isinstance(host, LocalHost):  # namespaces share this machine's files
        path = BUILD_DIR / name
        if not path.exists():
            builder = LocalHost("controller")
            BUILD_DIR.mkdir(exist_ok=True)
            tmp = BUILD_DIR / f".{name}.{os.getpid()}"
            _compile(builder, compiler(builder), str(SOURCE_DIR / f"{tool}.c"), str(tmp))
            os.replace(tmp, path)  # concurrent builders: each renames a complete binary
        return str(path)
    cc = compiler(host)
    # A fresh private directory each time: nothing found there can predate this build.
    build_dir = host.run(["mktemp", "-d", REMOTE_TEMPLATE]).stdout.strip()
    if not build_dir.startswith(REMOTE_TEMPLATE.rstrip("X")):
        raise NativeBuildError(f"{host.name}: mktemp -d gave {build_dir!r}, not a directory under /tmp")
    path = f"{build_dir}/{name}"
    host.write_text(f"{path}.c", source(tool))
    _compile(host, cc, f"{path}.c", path)
    return path


def _compile(host: Host, cc: str, src: str, out: str) -> None:
    try:
        host.run(compile_argv(cc, src, out), timeout=120)
    except HostError as exc:
        raise NativeBuildError(f"building {Path(src).name} failed: {exc}") from exc


def build_all() -> list[str]:
    return [ensure(t) for t in TOOLS]
