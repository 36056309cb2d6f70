"""hostnet's small C tools (udpbatch, microbench, zcflow, bigtcp) and its XDP program (xdp_pass, a BPF object):
built from the sources in this package.

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
TOOLS = ("udpbatch", "microbench", "zcflow", "bigtcp")
BPF_PROGRAMS = ("xdp_pass",)  # compiled with clang -target bpf into an object `ip link` loads
# -fno-builtin-*: the compiler must not elide the malloc/free pairs microbench measures
CFLAGS = ["-O2", "-Wall", "-Wextra", "-fno-builtin-malloc", "-fno-builtin-free"]
REMOTE_TEMPLATE = "/tmp/hostnet-native.XXXXXXXX"  # mktemp -d template on a remote host


class NativeBuildError(RuntimeError):
    pass


def source(tool: str) -> str:
    if tool not in TOOLS + BPF_PROGRAMS:
        raise NativeBuildError(f"unknown native tool {tool!r}; one of {', '.join(TOOLS + BPF_PROGRAMS)}")
    return (SOURCE_DIR / f"{tool}.c").read_text()


def binary_name(tool: str) -> str:
    suffix = ".o" if tool in BPF_PROGRAMS else ""
    return f"{tool}-{hashlib.sha256(source(tool).encode()).hexdigest()[:10]}{suffix}"


def compiler(host: Host, bpf: bool = False) -> str:
    """C tools: $CC (on the controller), else cc, else gcc. BPF programs: $CLANG, else clang.
    The first one the host has."""
    var, names, package = ("CLANG", ["clang"], "clang") if bpf else ("CC", ["cc", "gcc"], "gcc and libc6-dev")
    wanted = [os.environ[var]] if os.environ.get(var) else names
    for cc in wanted:
        if host.which(cc):
            return cc
    what = "hostnet's XDP program (knobs/xdp.py)" if bpf else "hostnet's native tools"
    kind = "BPF" if bpf else "C"
    raise NativeBuildError(f"{host.name}: no {kind} compiler ({' or '.join(wanted)} not found) to build {what}; "
                           f"install {package} (Debian: `make install` does)")


def compile_argv(cc: str, src: str, out: str, bpf: bool = False) -> list[str]:
    if bpf:
        return [cc, "-O2", "-target", "bpf", "-c", src, "-o", out]
    return [cc, *CFLAGS, "-o", out, src]


def ensure(tool: str, host: Host | None = None) -> str:
    """Path of the built tool on host (this machine by default), building it if needed."""
    name = binary_name(tool)
    bpf = tool in BPF_PROGRAMS
    if host is None or isinstance(host, LocalHost):  # namespaces share this machine's files
        path = BUILD_DIR / name
        if not path.exists():
            builder = LocalHost("controller")
            BUILD_DIR.mkdir(exist_ok=True)
            tmp = BUILD_DIR / f".{name}.{os.getpid()}"
            _compile(builder, compiler(builder, bpf), str(SOURCE_DIR / f"{tool}.c"), str(tmp), bpf)
            os.replace(tmp, path)  # concurrent builders: each renames a complete binary
        return str(path)
    cc = compiler(host, bpf)
    # A fresh private directory each time: nothing found there can predate this build.
    build_dir = host.run(["mktemp", "-d", REMOTE_TEMPLATE]).stdout.strip()
    if not build_dir.startswith(REMOTE_TEMPLATE.rstrip("X")):
        raise NativeBuildError(f"{host.name}: mktemp -d gave {build_dir!r}, not a directory under /tmp")
    path = f"{build_dir}/{name}"
    host.write_text(f"{path}.c", source(tool))
    _compile(host, cc, f"{path}.c", path, bpf)
    return path


def _compile(host: Host, cc: str, src: str, out: str, bpf: bool = False) -> None:
    try:
        host.run(compile_argv(cc, src, out, bpf), timeout=120)
    except HostError as exc:
        raise NativeBuildError(f"building {Path(src).name} failed: {exc}") from exc


def build_all() -> list[str]:
    return [ensure(t) for t in TOOLS + BPF_PROGRAMS]
