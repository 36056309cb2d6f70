"""hostnet's small C tools (udpbatch, microbench, zcflow, bigtcp) and its XDP program (xdp_pass, a BPF object):
built from the sources in this package.

`make install` builds them; build.ensure() builds on demand, on the host that will run them, and
names the missing compiler when there is none. A binary's name carries its source's hash,
so an edited source is rebuilt and a stale binary is never run. On a remote host every
ensure() builds afresh in a new private directory (mktemp -d: mode 0700, its user's own), so a
binary someone else left under /tmp is never trusted and run (perhaps under sudo).

This module names the tools and reads their sources, and reaches no host (what a stored run
recorded is read offline: derive/workloads.py); building them is build.py's.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
BUILD_DIR = SOURCE_DIR / "build"
TOOLS = ("udpbatch", "microbench", "zcflow", "bigtcp")
BPF_PROGRAMS = ("xdp_pass",)  # compiled with clang -target bpf into an object `ip link` loads


class NativeBuildError(RuntimeError):
    pass


def source(tool: str) -> str:
    if tool not in TOOLS + BPF_PROGRAMS:
        raise NativeBuildError(f"unknown native tool {tool!r}; one of {', '.join(TOOLS + BPF_PROGRAMS)}")
    return (SOURCE_DIR / f"{tool}.c").read_text()


def binary_name(tool: str) -> str:
    suffix = ".o" if tool in BPF_PROGRAMS else ""
    return f"{tool}-{hashlib.sha256(source(tool).encode()).hexdigest()[:10]}{suffix}"
