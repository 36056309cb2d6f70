"""Receive -> start-of-copy latency and post-GRO skb sizes with bpftrace (the paper's Fig. 3(f)).

Stock kernel, tracepoints only (no kprobes/fentry needed): an skb is timestamped when the stack
receives it on a data interface (net:netif_receive_skb, after GRO) and the latency is taken when
the application copies it out (skb:skb_copy_datagram_iovec, filtered on the workload's command).
Data coalesced into an earlier skb is copied with it and counted once, at that skb's arrival; the
coalesced skb's timestamp is never used, so the timestamp map is cleared every second (keeping it
within bpftrace's 4096 keys and its exit fast): an skb in flight at that instant loses its sample.
`sample_every` > 1 timestamps about 1 in N skbs to keep the probe's own cost down.
"""
from __future__ import annotations

import re
import signal
import time

from ..hosts import Host, HostError
from ..knobs import KNOBS, Journal

TRACEFS = "/sys/kernel/tracing"
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")


def script(ifaces: list[str], comm: str, sample_every: int = 1) -> str:
    """The bpftrace program. Names are validated, so the text holds no injected code."""
    for name in [*ifaces, comm]:
        if not _NAME.fullmatch(name):
            raise ValueError(f"not an interface or command name: {name!r}")
    if sample_every < 1:
        raise ValueError("sample_every must be >= 1")
    match = " || ".join(f'str(args->name) == "{i}"' for i in ifaces)
    sample = "" if sample_every == 1 else f" && (nsecs % {int(sample_every)}) == 0"
    return f"""tracepoint:net:netif_receive_skb /({match}){sample}/ {{
  @skb_len = hist(args->len); @ts[args->skbaddr] = nsecs;
}}
tracepoint:skb:skb_copy_datagram_iovec /@ts[args->skbaddr] && comm == "{comm}"/ {{
  $ns = nsecs - @ts[args->skbaddr];
  @lat_us = hist($ns / 1000); @lat_fine_us = lhist($ns / 1000, 0, 1000, 1);
  @lat_coarse_us = lhist($ns / 1000, 0, 100000, 100); @lat_stats = stats($ns);
  delete(@ts[args->skbaddr]);
}}
interval:s:1 {{ clear(@ts); }}
END {{ clear(@ts); }}
"""


class LatencyProbe:
    name = "latency"
    pids: list[int] = []

    def __init__(self, ifaces: list[str], comm: str, journal: Journal, sample_every: int = 1):
        self.program = script(ifaces, comm, sample_every)
        self.journal, self.sample_every = journal, sample_every

    def start(self, host: Host) -> None:
        if not host.which("bpftrace"):
            raise HostError(f"{host.name}: bpftrace is missing (Debian: bpftrace); run `make install`")
        # tracepoints need tracefs; mount it through the journal, so it is unmounted afterwards
        if KNOBS["mount"].read(host, TRACEFS) != "mounted":
            self.journal.set(host, KNOBS["mount"], TRACEFS, "mounted")
        self._dir = host.run(["mktemp", "-d", "-t", "hostnet-bt-XXXXXX"]).stdout.strip()
        host.write_text(f"{self._dir}/latency.bt", self.program)
        self._proc = host.start(["bpftrace", f"{self._dir}/latency.bt"])
        self.pids = [self._proc.pid]
        deadline = time.monotonic() + 20
        while "Attaching" not in self._proc.stdout() and time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise HostError(f"{host.name}: bpftrace exited at start: {self._proc.stderr().strip()[-300:]}")
            time.sleep(0.1)
        time.sleep(0.3)  # "Attaching N probes" is printed just before they are live

    def stop(self, host: Host) -> dict[str, str]:
        try:
            self._proc.stop(signal.SIGINT, grace=30)  # bpftrace prints its maps on SIGINT
            return {"bpftrace_latency.txt": self._proc.stdout(), "bpftrace.stderr.txt": self._proc.stderr(),
                    "bpftrace_latency.bt": self.program}
        finally:
            self._proc.close()
            host.run(["rm", "-rf", "--", self._dir], check=False)
