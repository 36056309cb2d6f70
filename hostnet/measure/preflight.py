"""Before a point touches a host: the tools each role and machine needs, present and their versions
recorded (preflight), and which RPC tool the endpoints have."""
from __future__ import annotations

import os

from .. import native
from ..native.build import compiler
from ..testbed import Testbed, capabilities


REQUIRED_TOOLS = {"roles": [], "machines": ["perf"]}  # plus each workload's own tool


class PreflightError(RuntimeError):
    pass


def preflight(tb: Testbed, tools: tuple[str, ...] = ("iperf3",), *,
              machine_tools=tuple(REQUIRED_TOOLS["machines"])) -> dict:
    """Refuse before any host is touched: root, tools present. Returns tool versions.
    machine_tools: what every machine must have (perf; the benches record a missing perf
    unsupported instead, and pass ())."""
    if tb.kind == "embedded" and os.geteuid() != 0:
        raise PreflightError("a live run on the embedded testbed needs root; run as root (sudo)")
    versions = {}
    built = [t for t in tools if t in native.TOOLS]  # hostnet's own: built on the host, not on its PATH
    tools = tuple(t for t in tools if t not in built)
    for ep in tb.endpoints.values():
        for tool in REQUIRED_TOOLS["roles"] + list(tools):
            if not ep.host.which(tool):
                raise PreflightError(f"{tool} is missing on {ep.host.name}; run `make install`")
        if built:
            try:
                compiler(ep.host)
            except native.NativeBuildError as exc:
                raise PreflightError(str(exc)) from None
    for name, host in tb.machines.items():
        for tool in machine_tools:
            if not host.which(tool):
                raise PreflightError(f"{tool} is missing on {name}; run `make install` (Debian: linux-perf)")
        versions[name] = {
            "perf": _version(host, ["perf", "--version"]),
            **{t: host.run([t, "-V" if t == "netperf" else "--version"], check=False).stdout.strip().splitlines()[:1]
               for t in tools},
            **{t: native.binary_name(t) for t in built},  # its source's hash names the build
            # the microbenchmarks' costs are the compiler's code too
            **({"cc": _version(host, [compiler(host), "--version"])} if "microbench" in built else {}),
            "kernel": host.run(["uname", "-r"]).stdout.strip(),
            # how /proc/stat is accounted: tick-based accounting reads partly loaded CPUs low
            "cpu_accounting": capabilities.cpu_accounting(
                host.run(capabilities.KCONFIG_ARGV, check=False).stdout).value,
        }
    return versions


def _version(host, argv: list[str]) -> str:
    """A tool's first line of --version, or "unsupported (why)" where it is missing or fails."""
    if not host.which(argv[0]):
        return "unsupported (not installed)"
    res = host.run(argv, check=False)
    lines = res.stdout.strip().splitlines()
    return lines[0] if res.ok and lines else f"unsupported (exit {res.returncode}: {res.stderr.strip()[-200:]})"


def rpc_tool(tb: Testbed, wanted: str = "auto") -> str:
    """netperf (the paper's tool) where every endpoint has it, else sockperf."""
    if wanted != "auto":
        return wanted
    return "netperf" if all(e.host.which("netperf") and e.host.which("netserver")
                            for e in tb.endpoints.values()) else "sockperf"
