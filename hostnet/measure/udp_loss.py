"""UDP end-host loss (Marian et al., DSN 2010), live: a UdpRate point's CPU placement (recorded in
the manifest) and knob settings (RPS to the receive-processing CPU, the socket-buffer ceiling),
and what a host must allow for them. Where the datagrams were lost is derive/udp_loss.py's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..knobs import KNOBS, cpu_mask
from ..knobs.setting import Place, Setting
from ..derive.workloads import UdpRate

if TYPE_CHECKING:
    from ..testbed import Testbed


def placement(tb: Testbed, workload: UdpRate) -> dict:
    """The workload's CPU placement on this testbed, and whether it is confounded.

    "different" is confounded when the application's CPU is lent from the sender's CPU set on
    the same machine: the receiving application then competes with the sending one.
    """
    p = workload.placement([(e.role, e.cpus) for e in tb.senders], [(e.role, e.cpus) for e in tb.receivers])
    snd, rcv = tb.senders[0], tb.receivers[0]
    p["placement"] = workload.app_cpu
    p["confounded"] = p["app_cpu_from"] == "sender" and snd.machine == rcv.machine
    if p["confounded"]:
        p["note"] = (f"the receiver has one CPU ({p['rx_cpu']}), so the application runs on CPU {p['app_cpu']}, "
                     "which the sender also uses: 'different CPU' is confounded with sharing the sender's core")
    return p


def settings(tb: Testbed, workload: UdpRate) -> list[Setting]:
    """Receive processing on the receive CPU alone (RPS, no RFS), and rmem_max = the buffer asked for.

    A NIC's IRQ affinity is not set here: on real servers steer the NIC queue's IRQ to the same
    CPU (docs/end-host-loss.md), so RPS does not add a hop.
    """
    p = placement(tb, workload)
    rcv = tb.receivers[0]
    at = Place.of_role(rcv.role)
    return [Setting(at, KNOBS["rps_cpus"], f"{rcv.iface}/rx-0", cpu_mask([p["rx_cpu"]])),
            Setting(at, KNOBS["rps_flow_cnt"], f"{rcv.iface}/rx-0", "0"),
            Setting(Place.of_machine(rcv.machine), KNOBS["sysctl"], "net.core.rmem_max",
                    str(workload.socket_buffer_kb * 1024))]


def requirements(tb: Testbed) -> list[str]:
    """What a UDP loss point needs that a host may lack, asked before any setting changes: the
    receiver's machine must let hostnet raise net.core.rmem_max (the socket buffer asked for). A
    network namespace cannot (the rehearsal of servers over SSH: init_net's sysctl, read-only there)."""
    rcv = tb.receivers[0]
    host = tb.machines[rcv.machine]
    if host.run(["test", "-w", "/proc/sys/net/core/rmem_max"], check=False).returncode != 0:
        return [f"{rcv.machine}: net.core.rmem_max is read-only here (a network namespace?); UDP loss points "
                f"size the receive buffer through it"]
    return []


def point_setup(tb: Testbed, workload: UdpRate) -> tuple[dict, list[Setting]]:
    """A UDP point's (placement, settings), which the runner applies after its config."""
    return placement(tb, workload), settings(tb, workload)
