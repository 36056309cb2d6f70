"""What each host of a testbed can do, detected rather than assumed.

`detect(host, iface)` -> {capability: Capability}. Experiments call `require()` before any host
is touched, so a point that needs something a host lacks is refused with one line naming both.
Detection only reads (commands and files); it never changes the host.
"""
from __future__ import annotations

import ipaddress
import re
import time
from dataclasses import dataclass

from ..hosts import Host, HostError
from ..knobs import KNOBS, DdioWays, Iommu, KnobError
from ..knobs.ethtool import parse_features
from ..knobs.nic import parse_ethtool_sections
from ..parsers.ip_addr import addresses
from .base import TestbedError

TOOLS = {"iperf3": ["iperf3", "--version"], "perf": ["perf", "--version"], "ethtool": ["ethtool", "--version"],
         "nft": ["nft", "--version"], "sockperf": ["sockperf", "--version"], "netperf": ["netperf", "-V"],
         "bpftrace": ["bpftrace", "--version"], "sshd": ["sshd", "-V"]}
# Kernel config, wherever the distribution keeps it (a fixed script: nothing interpolated).
KCONFIG_ARGV = ["sh", "-c", "zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r) 2>/dev/null; true"]


@dataclass(frozen=True)
class Capability:
    ok: bool | None      # None: informational (a version, a number)
    value: str
    detail: str = ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def parse_kconfig(text: str, option: str) -> str:
    """'y', 'm', or 'n' for CONFIG_<option>."""
    m = re.search(rf"^CONFIG_{option}=(\w+)$", text, re.M)
    return m.group(1) if m else "n"


def cpu_accounting(kconfig: str) -> Capability:
    """How the kernel accounts CPU time in /proc/stat (what hostnet's and mpstat's utilisation read).

    Tick-based accounting charges each whole tick to whatever runs when it fires, so work done in
    bursts between idle periods (a paced or RPC workload) can be missed: bench/ measured 1-3 % in
    /proc/stat where a SCHED_IDLE spinner lost 19-23 % of a CPU (5 Gbit/s paced flow, this VM).
    At saturation the two agree. Precise accounting (VIRT_CPU_ACCOUNTING_GEN) has no such bias."""
    if not kconfig:
        return Capability(None, "unknown", "kernel config not readable")
    hz = parse_kconfig(kconfig, "HZ")
    irq = parse_kconfig(kconfig, "IRQ_TIME_ACCOUNTING") == "y"
    if parse_kconfig(kconfig, "VIRT_CPU_ACCOUNTING_GEN") == "y":
        return Capability(True, "precise", "context-switch time accounting")
    if parse_kconfig(kconfig, "TICK_CPU_ACCOUNTING") == "y":
        return Capability(False, f"tick (HZ={hz})", "the busy fields of partly loaded CPUs read low (bursts "
                          f"between ticks are missed; hostnet uses wall minus idle, mpstat/sar do not)"
                          f"{'' if irq else '; no IRQ time accounting'}")
    return Capability(None, "other", "neither TICK_CPU_ACCOUNTING nor VIRT_CPU_ACCOUNTING_GEN")


def parse_perf_stat_supported(text: str) -> bool:
    """`perf stat -x, -e cycles true` stderr: '<not supported>' when there is no hardware PMU."""
    return "<not supported>" not in text and "cycles" in text


def detect(host: Host, iface: str | None = None) -> dict[str, Capability]:
    caps: dict[str, Capability] = {}
    try:
        host.run(["true"])  # connect first, so the clock reading below is one round trip
        t0 = time.time()
        remote = float(host.run(["date", "+%s.%N"]).stdout.strip())
        t1 = time.time()
    except (HostError, ValueError) as exc:
        return {"reachable": Capability(False, "no", str(exc))}
    caps["reachable"] = Capability(True, "yes", f"round trip {1000 * (t1 - t0):.0f} ms")
    caps["clock_offset_ms"] = Capability(None, f"{1000 * (remote - (t0 + t1) / 2):+.1f}",
                                         "remote clock minus local, at the midpoint of the round trip")
    caps["kernel"] = Capability(None, host.run(["uname", "-r"]).stdout.strip())
    caps["cpus"] = Capability(None, host.run(["nproc"]).stdout.strip())
    nodes = host.run(["sh", "-c", "ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l"]).stdout.strip()
    caps["numa_nodes"] = Capability(None, nodes or "1")
    for tool, argv in TOOLS.items():
        if host.which(tool) or (tool == "sshd" and host.run(["test", "-x", "/usr/sbin/sshd"], check=False).ok):
            res = host.run(["/usr/sbin/sshd" if tool == "sshd" else argv[0], *argv[1:]], check=False)
            # a tool that is there but cannot run is not there (the NIC rehearsal's guests: nft
            # without nf_tables printed its netlink error as its version, and was ticked)
            ok = res.returncode == 0
            caps[f"tool:{tool}"] = Capability(ok, _first_line(res.stdout or res.stderr) or "present",
                                              "" if ok else f"{' '.join(argv)} exited {res.returncode}")
        else:
            caps[f"tool:{tool}"] = Capability(False, "missing")
    if caps["tool:perf"].ok:
        res = host.run(["perf", "stat", "-x,", "-e", "cycles", "true"], check=False)
        hw = parse_perf_stat_supported(res.stderr)
        caps["hw_perf_counters"] = Capability(hw, "yes" if hw else "no",
                                              "" if hw else "no PMU: perf samples on cpu-clock; no cache-miss counts")
    kconfig = host.run(KCONFIG_ARGV, check=False).stdout
    cc = host.read_text("/proc/sys/net/ipv4/tcp_available_congestion_control").split()
    caps["congestion_control"] = Capability(None, " ".join(cc))
    # Without a readable kernel config an option is "unknown", never "n" (a custom kernel without
    # /boot/config-*: the NIC rehearsal's guests said "dctcp n" and "kprobes n" of a config unread).
    unread = "" if kconfig else "kernel config not readable"
    dctcp = parse_kconfig(kconfig, "TCP_CONG_DCTCP") if kconfig else "unknown"
    caps["dctcp"] = Capability("dctcp" in cc or dctcp in ("y", "m"), "yes" if "dctcp" in cc else dctcp,
                               "" if "dctcp" in cc else unread)
    netem = parse_kconfig(kconfig, "NET_SCH_NETEM") if kconfig else "unknown"
    caps["netem"] = Capability(netem in ("y", "m"), netem, unread)
    kprobes = parse_kconfig(kconfig, "KPROBES") if kconfig else "unknown"
    caps["kprobes"] = Capability(kprobes == "y", kprobes, unread)
    caps["cpu_accounting"] = cpu_accounting(kconfig)
    caps["nftables"] = caps["tool:nft"]
    ddio_ok, why = DdioWays().available(host)
    caps["ddio"] = Capability(ddio_ok, "yes" if ddio_ok else "no", why)
    caps["iommu"] = Capability(None, Iommu().read(host))
    if iface:
        feats = host.run(["ethtool", "-k", iface], check=False)
        on, fixed = parse_features(feats.stdout).get("ntuple-filters", (False, True))
        caps["ntuple_arfs"] = Capability(not fixed, "on" if on else ("fixed off" if fixed else "off"),
                                         "aRFS needs ntuple filters" if fixed else "")
        rings = host.run(["ethtool", "-g", iface], check=False)
        mx = parse_ethtool_sections(rings.stdout).get("max", {}) if rings.returncode == 0 else {}
        caps["ring_max"] = Capability(bool(mx), f"rx {mx.get('rx')} tx {mx.get('tx')}" if mx else "unsupported",
                                      (rings.stderr or "").strip())
    return caps


class MissingCapability(RuntimeError):
    pass


def require(caps_by_host: dict[str, dict[str, Capability]], needs: dict[str, list[str]]) -> None:
    """needs: {host: [capability, ...]}. One line naming every host and what it lacks."""
    missing = []
    for host, names in needs.items():
        for name in names:
            cap = caps_by_host.get(host, {}).get(name)
            if cap is None or cap.ok is False:
                missing.append(f"{host} lacks {name}" + (f" ({cap.detail or cap.value})" if cap else ""))
    if missing:
        raise MissingCapability("; ".join(missing))


def table(caps_by_host: dict[str, dict[str, Capability]]) -> str:
    """A plain-text table: one row per capability, one column per host."""
    hosts = list(caps_by_host)
    names = list(dict.fromkeys(n for caps in caps_by_host.values() for n in caps))

    def cell(c: Capability | None) -> str:
        if c is None:
            return "-"
        mark = "" if c.ok is None else ("✓ " if c.ok else "✗ ")
        return (mark + c.value)[:48]
    widths = [max(len("capability"), *(len(n) for n in names))] + [
        max(len(h), *(len(cell(caps_by_host[h].get(n))) for n in names)) for h in hosts]
    lines = ["  ".join(x.ljust(w) for x, w in zip(["capability", *hosts], widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for n in names:
        row = [n, *(cell(caps_by_host[h].get(n)) for h in hosts)]
        lines.append("  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def point_requirements(tb, cfg, ip_version: int | None = None) -> list[str]:
    """Problems that make a config impossible on this testbed (empty: it can run); ip_version:
    the data addresses its flows use, each endpoint's data_ip when None (a point that names a
    version needs an address of it on every endpoint)."""
    problems = address_problems(tb, ip_version) if ip_version is not None else []
    for ep in tb.senders:
        cc = ep.host.read_text("/proc/sys/net/ipv4/tcp_available_congestion_control").split()
        if cfg.congestion_control not in cc:
            problems.append(f"{ep.host.name} lacks congestion control {cfg.congestion_control} "
                            f"(available: {' '.join(cc)})")
    if cfg.loss_rate is not None:  # loss injection is an nftables table on each receiver
        problems += [f"{ep.host.name} lacks nft for loss injection (Debian: nftables)"
                     for ep in tb.receivers if not ep.host.which("nft")]
    if cfg.big_tcp_bytes is not None:  # BIG TCP: the IPv4 limits (Linux 6.3) up to the driver's tso_max_size
        problems += big_tcp_problems(tb, cfg.big_tcp_bytes, ip_version)
    if cfg.rx_ring is not None:
        problems += ring_problems(tb, cfg.rx_ring)
    if cfg.ddio is not None:  # grid.ddio: each receiving machine's IIO way mask (grid.ddio "host" sets none)
        problems += [f"ddio {cfg.ddio}: {why} (grid.ddio: host runs at the host's own DDIO)"
                     for ok, why in (KNOBS["ddio_ways"].available(h)
                                     for h in {ep.machine: ep.host for ep in tb.receivers}.values()) if not ok]
    if cfg.arfs and tb.kind != "embedded":  # the embedded testbed stands in RFS for aRFS
        for ep in tb.receivers:
            feats = parse_features(ep.host.run(["ethtool", "-k", ep.iface], check=False).stdout)
            if feats.get("ntuple-filters", (False, True))[1]:
                problems.append(f"{ep.host.name} lacks ntuple filters on {ep.iface} (aRFS)")
    return problems


# F08 on the embedded testbed, said the same way by the sweep's refusal and the sections' verdicts
NO_RINGS = "veth has no NIC rings (ethtool -G unsupported)"


def ring_problems(tb, size: int) -> list[str]:
    """What keeps each receiver's NIC from `size` rx descriptors (F08's sweep): veth has no rings;
    a driver that cannot report them, or whose maximum is below (virtio-net's 256), says so before
    any setting is written."""
    if tb.kind == "embedded":
        return [f"rx_ring: {NO_RINGS}; the ring sweep (F08) needs a NIC"]
    problems = []
    for ep in tb.receivers:
        try:
            top = KNOBS["ring.rx"].limit(ep.host, ep.iface)
        except KnobError as exc:
            problems.append(str(exc))
            continue
        if top is not None and size > top:
            problems.append(f"{ep.host.name}: {ep.iface} allows at most {top} rx descriptors, not {size}")
    return problems


def big_tcp_problems(tb, size: int, ip_version: int | None = None) -> list[str]:
    """What keeps a sender or receiver from BIG TCP packets of `size` bytes: a kernel without the
    IPv4 limits, or a driver whose tso_max_size is below it (bigtcp show, read only). IPv6 alone
    needs only the generic limits (Linux 5.19), but hostnet's knobs set the generic and the IPv4
    limit as one pair (knobs/link.py: only the pair restores exactly), so both families need 6.3."""
    problems = []
    why = ("IPv4 BIG TCP needs Linux 6.3" if ip_version != 6 else
           "IPv6 BIG TCP came in 5.19, but hostnet sets the generic and IPv4 limits as one pair: Linux 6.3")
    pairs = [*((e, "gso_ipv4_max_size") for e in tb.senders), *((e, "gro_ipv4_max_size") for e in tb.receivers)]
    for ep, attr in pairs:
        try:
            sizes = KNOBS["link.gso_limits"].sizes(ep.host, ep.iface)
        except (KnobError, HostError) as exc:
            problems.append(f"{ep.host.name}: cannot read {ep.iface}'s GSO/GRO limits for BIG TCP ({exc})")
            continue
        if sizes[attr] is None:
            problems.append(f"{ep.host.name}: {ep.iface} has no {attr} ({why})")
        elif sizes["tso_max_size"] is not None and size > sizes["tso_max_size"]:
            problems.append(f"{ep.host.name}: {ep.iface} takes packets up to tso_max_size {sizes['tso_max_size']}, "
                            f"not {size} (the driver's limit)")
    return problems


def address_problems(tb, ip_version: int) -> list[str]:
    """Endpoints without a usable data address of this IP version: none given (testbed.yaml's
    data_ip6), or the one given is not on the data interface (a typo sends flows nowhere)."""
    problems = []
    for ep in tb.endpoints.values():
        try:
            want = str(ipaddress.ip_address(ep.address(ip_version)))  # the short form ip prints
        except TestbedError as exc:
            problems.append(str(exc))
            continue
        family = f"-{ip_version}"
        res = ep.host.run(["ip", "-j", family, "addr", "show", "dev", ep.iface], check=False)
        if want not in addresses(res.stdout, f"{ep.host.name}: ip -j {family} addr show dev {ep.iface}"):
            problems.append(f"{ep.host.name}: {ep.iface} does not have {want} (or it is still tentative)")
    return problems


def zerocopy_receive_problems(tb) -> list[str]:
    """Servers: a receiving NIC whose header-data split is off keeps headers and payload in one
    buffer, so TCP_ZEROCOPY_RECEIVE maps nothing: named, with the command that turns it on. A driver
    that does not say ("n/a", or no such line in `ethtool -g`) is not refused: the mapped fraction
    every point reports tells. The embedded testbed has no NIC (its pages are docs/beyond-2021.md's)."""
    if tb.kind == "embedded":
        return []
    problems = []
    for ep in tb.receivers:
        text = ep.host.run(["ethtool", "-g", ep.iface], check=False).stdout
        if parse_ethtool_sections(text).get("current", {}).get("tcp data split") == "off":
            problems.append(f"{ep.host.name}: {ep.iface} has header-data split off (ethtool -g: TCP data split: "
                            f"off), so TCP_ZEROCOPY_RECEIVE maps nothing; turn it on: ethtool -G {ep.iface} "
                            "tcp-data-split on")
    return problems
