"""Building hostnet's C tools and XDP program on a host: a compiler found there, each source
compiled under its hashed name (this machine's builds in native/build/, a remote host's in a
fresh private directory)."""
from __future__ import annotations

import os
from pathlib import Path

from . import BPF_PROGRAMS, BUILD_DIR, SOURCE_DIR, TOOLS, NativeBuildError, binary_name, source
from ..hosts import Host, HostError, LocalHost

# -fno-builtin-*: the compiler must not elide the malloc/free pairs microbench measures
CFLAGS = ["-O2", "-Wall", "-Wextra", "-fno-builtin-malloc", "-fno-builtin-free"]
REMOTE_TEMPLATE = "/tmp/hostnet-native.XXXXXXXX"  # mktemp -d template on a remote host


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
