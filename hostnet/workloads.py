"""Workloads -> tool invocations (argv lists). Pure: nothing here runs a command."""
from __future__ import annotations

from dataclasses import asdict, dataclass

IPERF3_PORT = 5201


@dataclass(frozen=True)
class LongFlow:
    """One bulk TCP flow sender -> receiver with iperf3, each end pinned to one CPU."""

    duration_s: int
    warmup_s: int = 2
    congestion_control: str = "cubic"
    port: int = IPERF3_PORT

    def __post_init__(self):
        # iperf3 takes whole seconds for -t and -O.
        if not float(self.duration_s).is_integer() or self.duration_s <= 0:
            raise ValueError(f"duration must be a whole number of seconds > 0, got {self.duration_s}")
        if not float(self.warmup_s).is_integer() or self.warmup_s < 0:
            raise ValueError(f"warm-up must be a whole number of seconds >= 0, got {self.warmup_s}")

    def describe(self) -> dict:
        return {"kind": "long_flow", "tool": "iperf3", **asdict(self)}

    def server_argv(self, bind_ip: str, cpu: int) -> list[str]:
        # -1: serve one test and exit, so nothing is left listening.
        return ["iperf3", "-s", "-1", "-B", bind_ip, "-p", str(self.port), "-A", str(cpu)]

    def client_argv(self, server_ip: str, cpu: int) -> list[str]:
        # iperf3 runs warm-up (-O, omitted from its results) and then -t seconds.
        return ["iperf3", "-c", server_ip, "-p", str(self.port), "-t", str(int(self.duration_s)),
                "-O", str(int(self.warmup_s)), "-A", str(cpu), "-C", self.congestion_control, "-J"]

    def total_s(self) -> float:
        return self.duration_s + self.warmup_s

