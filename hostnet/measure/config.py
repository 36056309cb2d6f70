"""StackConfig: the whole set of host knob values one measurement point needs.

A point's config is applied whole: every knob below is written for every point, so a
result never depends on what ran before. `None` means "the value the host had before
hostnet touched it" (the journal's prior), which is still written explicitly.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

from ..hosts import HostError, HostUnreachable
from ..knobs import KNOBS, KnobError, queue_irqs
from ..knobs.machine import is_global
from ..knobs.platform import RELATIVE_MASKS
from ..knobs.setting import SWITCH_PLACE, Place, Setting
from ..testbed import Testbed, steering

RFS_ENTRIES = 32768


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class StackConfig:
    name: str
    tso: bool = False          # sender: TSO and GSO together (the paper's "TSO")
    gro: bool = False          # receiver: GRO
    mtu: int = 1500            # both ends
    arfs: bool = False         # aRFS; on veth RFS is the software stand-in
    tcp_rmem: str | None = None  # receiver net.ipv4.tcp_rmem "min default max" (bytes)
    congestion_control: str = "cubic"  # the paper's default; this VM's default is bbr
    # receiver-side random drop (nftables, knobs/loss.py); None leaves the loss knob untouched,
    # so hosts without nft run every other experiment. A loss sweep sets it at every point, 0 too.
    loss_rate: float | None = None
    # BIG TCP: the GSO (sender) and GRO (receiver) packet size limit in bytes, IPv4 and IPv6 alike;
    # None leaves the hosts' limits untouched (most experiments); a BIG TCP sweep sets it at every
    # point, 65536 (the legacy limit) too. Needs TSO and GRO on.
    big_tcp_bytes: int | None = None
    # descriptors per rx ring of each receiver's NIC (ethtool -G rx; F08, Fig. 3(e)'s caption); None
    # leaves the rings as they are (every other experiment). Servers only: veth has no rings.
    rx_ring: int | None = None
    # the receivers' DDIO ways (Intel's DMA into the LLC, §3.8): "own-mask" (the host's own, DDIO
    # on) or "lowest-way" (its lowest way alone), knobs.platform.RELATIVE_MASKS; None leaves them
    # untouched (every other experiment, and hosts whose DDIO cannot be set). Servers only: a VM
    # cannot reach the MSR.
    ddio: str | None = None

    def describe(self) -> dict:
        """The manifest's record; rx_ring and ddio only where a point set them, so every run recorded
        before they existed describes its config as it always did."""
        d = asdict(self)
        for late in ("rx_ring", "ddio"):
            if d[late] is None:
                del d[late]
        return d

    def label(self, testbed_kind: str = "embedded", rx_steering: str = steering.RPS) -> str:
        """The name shown in figures, saying what the step really does on the testbed: on veth
        aRFS is RFS; with threaded NAPI, GSO stands in for TSO and a one-CPU receiver already
        runs NAPI on the application's core (so RFS adds nothing)."""
        if testbed_kind != "embedded":
            return self.name
        name = self.name
        if rx_steering == steering.NAPI_THREAD and self.tso:
            name = name.replace("tsogro", "gsogro")
        if self.arfs:
            rfs = "NAPI on the app core" if rx_steering == steering.NAPI_THREAD else "RFS for aRFS"
            name = name.replace("all-opts", f"all-opts ({rfs})").replace("+arfs", "+rfs")
        return name


LADDER = ("no-opts", "tsogro", "jumbo", "tsogro+jumbo", "all-opts")

CONFIGS: dict[str, StackConfig] = {c.name: c for c in (
    StackConfig("no-opts"),
    StackConfig("tsogro", tso=True, gro=True),
    StackConfig("jumbo", mtu=9000),
    StackConfig("tsogro+jumbo", tso=True, gro=True, mtu=9000),
    StackConfig("tsogro+arfs", tso=True, gro=True, arfs=True),
    StackConfig("jumbo+arfs", mtu=9000, arfs=True),
    StackConfig("all-opts", tso=True, gro=True, mtu=9000, arfs=True),
)}

GSO_LEGACY_MAX = 65536   # the GSO/GRO limit before BIG TCP
BIG_TCP_MAX = 524280     # the largest tso_max_size a driver reports (veth's)

CONGESTION_CONTROLS = ("cubic", "reno", "bbr", "dctcp", "vegas")  # vegas: the 2010 study (F28)


def get_config(name: str, **overrides) -> StackConfig:
    if name not in CONFIGS:
        raise ConfigError(f"unknown config {name!r}; choose one of: {', '.join(CONFIGS)}")
    cfg = replace(CONFIGS[name], **overrides) if overrides else CONFIGS[name]
    validate(cfg)
    return cfg


def validate(cfg: StackConfig) -> None:
    if cfg.mtu not in range(68, 65536):
        raise ConfigError(f"mtu {cfg.mtu} is out of range")
    if cfg.rx_ring is not None and cfg.rx_ring < 1:
        raise ConfigError(f"rx_ring {cfg.rx_ring}: a NIC ring holds at least one descriptor")
    if cfg.ddio is not None and cfg.ddio not in RELATIVE_MASKS:
        raise ConfigError(f"ddio {cfg.ddio!r}: one of {', '.join(RELATIVE_MASKS)}")
    if cfg.congestion_control not in CONGESTION_CONTROLS:
        raise ConfigError(f"congestion control {cfg.congestion_control!r}: one of {CONGESTION_CONTROLS}")
    if cfg.loss_rate is not None and not 0 <= cfg.loss_rate < 1:
        raise ConfigError(f"loss rate {cfg.loss_rate} is outside [0, 1)")
    if cfg.big_tcp_bytes is not None:
        if not GSO_LEGACY_MAX <= cfg.big_tcp_bytes <= BIG_TCP_MAX:
            raise ConfigError(f"big_tcp_bytes {cfg.big_tcp_bytes}: a packet size from {GSO_LEGACY_MAX} "
                              f"to {BIG_TCP_MAX}")
        if not (cfg.tso and cfg.gro):
            raise ConfigError(f"big_tcp_bytes needs TSO and GRO on (config {cfg.name} has them off)")
    if cfg.tcp_rmem is not None:
        parts = cfg.tcp_rmem.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts) or sorted(map(int, parts)) != list(map(int, parts)):
            raise ConfigError(f"tcp_rmem {cfg.tcp_rmem!r}: three increasing byte counts, e.g. '4096 131072 6291456'")


def settings(tb: Testbed, cfg: StackConfig, irqs: IrqPlan | None = None) -> list[Setting]:
    """Every knob a point sets, in the order they are written.

    Pure: no host touched. Every sender gets the sender-side settings, every receiver the
    receiver-side ones; a bridged embedded testbed's switch ports follow the MTU; the embedded
    testbed's receive steering (testbed/steering.py) decides how TSO and GRO are realised. `irqs`:
    what irq_plan read of the servers' NIC interrupts, placed by irq_settings.
    """
    onoff = {True: "on", False: "off"}
    mode = tb.rx_steering
    out: list[Setting] = []
    for s in tb.senders:
        at = Place.of_role(s.role)
        out += [Setting(at, KNOBS["offload.tso"], s.iface, onoff[steering.sends_tso(mode, cfg.tso)]),
                Setting(at, KNOBS["offload.gso"], s.iface, onoff[cfg.tso]),
                Setting(at, KNOBS["mtu"], s.iface, str(cfg.mtu))]
    # BIG TCP: each side's limit pair, generic and IPv4 ("N/N"), after anything else that moves them
    big = None if cfg.big_tcp_bytes is None else f"{cfg.big_tcp_bytes}/{cfg.big_tcp_bytes}"
    if big:
        out += [Setting(Place.of_role(s.role), KNOBS["link.gso_limits"], s.iface, big) for s in tb.senders]
    for r in tb.receivers:
        at = Place.of_role(r.role)
        gro, gro_max_size = steering.receive_gro(mode, cfg.gro)
        out.append(Setting(at, KNOBS["offload.gro"], r.iface, onoff[gro]))
        if mode == steering.NAPI_THREAD:  # merging nothing is how this path turns GRO "off"
            out.append(Setting(at, KNOBS["gro_max_size"], r.iface, gro_max_size))
        if big:
            out.append(Setting(at, KNOBS["link.gro_limits"], r.iface, big))
        out += [Setting(at, KNOBS["mtu"], r.iface, str(cfg.mtu)),
                Setting(at, KNOBS["sysctl"], "net.ipv4.tcp_rmem", cfg.tcp_rmem)]
        if cfg.loss_rate is not None:
            out.append(Setting(at, KNOBS["loss"], r.iface, format(cfg.loss_rate, "g")))
        if cfg.rx_ring is not None:
            out.append(Setting(at, KNOBS["ring.rx"], r.iface, str(cfg.rx_ring)))
    if cfg.ddio is not None:  # one mask per machine: the IIO's ways are the socket's, not an interface's
        out += [Setting(Place.of_machine(m), KNOBS["ddio_ways"], "llc_ways", cfg.ddio)
                for m in dict.fromkeys(r.machine for r in tb.receivers)]
    if tb.kind != "embedded":
        # aRFS on a NIC: ntuple filters, plus the RFS tables the driver fills from.
        for r in tb.receivers:
            at = Place.of_role(r.role)
            out += [Setting(at, KNOBS["offload.ntuple"], r.iface, onoff[cfg.arfs]),
                    Setting(at, KNOBS["rps_flow_cnt"], f"{r.iface}/rx-0", str(RFS_ENTRIES if cfg.arfs else 0)),
                    Setting(Place.of_machine(r.machine), KNOBS["sysctl"], "net.core.rps_sock_flow_entries",
                            str(RFS_ENTRIES) if cfg.arfs else None)]
        out += irq_settings(tb, cfg, irqs or IrqPlan({}))
    if tb.switch is not None:
        out += [Setting(SWITCH_PLACE, KNOBS["mtu"], port, str(cfg.mtu)) for port in tb.switch_ports]
    if tb.kind == "embedded":
        out += steering.settings(tb, RFS_ENTRIES if cfg.arfs else None)
    if tb.kind == "embedded":
        out += congestion_settings(tb, cfg)
    return out


def congestion_settings(tb: Testbed, cfg: StackConfig) -> list[Setting]:
    """The point's congestion control as each endpoint namespace's default, so every socket starts
    with it. Tools that choose it per socket do so after connect() (iperf3 3.12): the socket then
    connected under the namespace's default (bbr here), whose init asks for pacing, and a cubic flow
    stayed paced (a pacing-timer arm and a LAPIC reprogramming per burst: docs/embedded-testbed.md).
    A child namespace may only default to an allowed algorithm: added to the machine's list first.
    Embedded testbeds only: a server's own default is the machine's network configuration, and a
    namespace rehearsing a server cannot write the machine's list (docs/knobs.md)."""
    endpoints = (*tb.senders, *tb.receivers)
    return ([Setting(Place.of_machine(m), KNOBS["congestion_allowed"], "net.ipv4.tcp_allowed_congestion_control",
                     f"+{cfg.congestion_control}") for m in dict.fromkeys(e.machine for e in endpoints)]
            + [Setting(Place.of_role(e.role), KNOBS["congestion_control"], "net.ipv4.tcp_congestion_control",
                       cfg.congestion_control) for e in endpoints])


class IrqPlan(NamedTuple):
    """What irq_settings places: each server endpoint's NIC queue interrupts (for endpoints whose
    testbed.yaml names irq_cpus), and the machines whose irqbalance must be stopped first."""
    irqs: dict[str, list[int]]
    irqbalance: frozenset[str] = frozenset()


def irq_settings(tb: Testbed, cfg: StackConfig, plan: IrqPlan) -> list[Setting]:
    """Where a server's NIC interrupts go, for endpoints whose testbed.yaml names irq_cpus: without
    aRFS every queue's IRQ on irq_cpus (the paper's no-aRFS runs put them on the NIC-remote node);
    with aRFS queue i's IRQ on application CPU i mod n, so the queue aRFS picks for a flow is served
    on its application's core. irqbalance is stopped on those machines: it would move them back."""
    out = [Setting(Place.of_machine(m), KNOBS["irqbalance"], "service", "stopped") for m in sorted(plan.irqbalance)]
    for e in tb.endpoints.values():
        for i, irq in enumerate(plan.irqs.get(e.role, []) if e.irq_cpus else []):
            cpus = [e.cpus[i % len(e.cpus)]] if cfg.arfs else e.irq_cpus
            out.append(Setting(Place.of_role(e.role), KNOBS["irq_affinity"], str(irq), ",".join(map(str, cpus))))
    return out


def irq_plan(tb: Testbed) -> IrqPlan:
    """Read from the hosts what irq_settings needs: the NIC queue interrupts of each server endpoint
    naming irq_cpus (/sys/class/net/IFACE/device/msi_irqs; none on a virtual device), and where an
    irqbalance runs that hostnet must stop. One it cannot stop (no systemctl) is an error: the
    interrupts would not stay where the testbed.yaml puts them."""
    if tb.kind == "embedded":
        return IrqPlan({})
    irqs, balancers = {}, set()
    for e in tb.endpoints.values():
        if not e.irq_cpus:
            continue
        irqs[e.role] = queue_irqs(e.host, e.iface)
        if irqs[e.role] and e.host.which("irqbalance"):
            ok, why = KNOBS["irqbalance"].available(e.host)
            if not ok:
                raise KnobError(f"{e.role}: cpus.irq_cpus is set but {why}; irqbalance would move the interrupts")
            balancers.add(e.machine)
    return IrqPlan(irqs, frozenset(balancers))


def apply(tb: Testbed, cfg: StackConfig) -> dict:
    """Apply the whole config through the journal; returns what was written, for the manifest."""
    validate(cfg)
    return apply_settings(tb, settings(tb, cfg, irq_plan(tb)))


def apply_settings(tb: Testbed, planned: list[Setting]) -> dict:
    """Write the settings through the journal, all validated first; returns {label: value written}
    for the manifest's "applied"."""
    plan = [(tb.host_at(s.place), s) for s in planned]
    for _h, s in plan:  # every value is checked before anything is written
        if s.value is not None:
            s.knob.validate(s.key, s.value)
    # A setting the point leaves as it was (None) that the host does not have (a global sysctl seen
    # from a network namespace rehearsing a server) has no prior to journal: recorded as absent.
    absent = {s.label for host, s in plan if s.value is None and _absent(host, s.knob, s.key)}
    plan = [(host, s) for host, s in plan if s.label not in absent]
    # Every prior is on disk before the first write, so a crash mid-way loses nothing.
    priors = {s.label: tb.journal.record(host, s.knob, s.key) for host, s in plan}
    applied = {label: "absent" for label in sorted(absent)}
    # In the planned order, one after another: settings of two hosts are not independent (on the
    # embedded testbed a receiver's XDP program takes TSO from its veth peer, the sender).
    for host, s in plan:
        value = priors[s.label] if s.value is None else s.knob.resolve(host, s.key, s.value, priors[s.label])
        tb.journal.set(host, s.knob, s.key, value)
        applied[s.label] = value
    return applied


def _absent(host, knob, key: str) -> bool:
    """The host has no such setting (reading it fails, and not because the host went away)."""
    try:
        knob.read(host, key)
    except KnobError as exc:
        if isinstance(exc.__cause__, HostUnreachable):
            raise
        return True
    return False


def moved_globals(tb: Testbed, applied: dict) -> str:
    """The host-wide settings of a point that no longer read as applied ("" when none moved), read
    once its window has closed. The machine ledger keeps other hostnet testbeds from moving them;
    this catches anything else (an operator, another tool) that did during the window."""
    moved = []
    for name, value in applied.items():
        where, knob_name, key = (name.split("/", 2) + ["", ""])[:3]
        knob = KNOBS.get(knob_name)
        if knob is None or value == "absent" or not is_global(knob, key):
            continue
        try:
            now = knob.read(tb.host_at(Place.parse(where)), key)
        except (KnobError, HostError) as exc:
            if isinstance(exc, HostUnreachable) or isinstance(exc.__cause__, HostUnreachable):
                raise
            now = f"unreadable ({exc})"
        if knob.normalize(now) != knob.normalize(value):
            moved.append(f"{name} read {now!r} after the window, {value!r} applied")
    return "; ".join(moved)
