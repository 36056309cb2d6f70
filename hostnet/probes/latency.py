"""Receive -> start-of-copy latency and post-GRO skb sizes with bpftrace (the paper's Fig. 3(f)).

Stock kernel, tracepoints only (no kprobes/fentry needed): an skb is timestamped when the stack
receives it on a data interface (net:netif_receive_skb, after GRO) and the latency is taken when
the application copies it out (skb:skb_copy_datagram_iovec, filtered on the workload's command).
Data coalesced into an earlier skb is copied with it and counted once, at that skb's arrival; the
coalesced skb is freed without being copied, so its timestamp is dropped when its head is freed
(kmem:kmem_cache_free), which keeps the map within bpftrace's 4096 keys. (Clearing the map from
userspace instead races with the program's own deletes and crashes bpftrace 0.17.)
`sample_every` > 1 timestamps about 1 in N skbs to keep the probe's own cost down.
"""
from __future__ import annotations

import re
import time

from ..hosts import Host, HostError
from ..hosts.base import make_temp_dir
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
tracepoint:kmem:kmem_cache_free /@ts[args->ptr]/ {{ delete(@ts[args->ptr]); }}
END {{ clear(@ts); }}
"""


class LatencyProbe:
    name = "latency"
    pids: list[int] = []

    def __init__(self, ifaces: list[str], comm: str, journal: Journal, sample_every: int = 1):
        self.program = script(ifaces, comm, sample_every)
        self.journal, self.sample_every = journal, sample_every

    def prepare(self, host: Host) -> None:
        """Compile and attach before the workload starts: bpftrace's start-up costs a core for
        about a second, which must not fall inside the measurement window."""
        if not host.which("bpftrace"):
            raise HostError(f"{host.name}: bpftrace is missing (Debian: bpftrace); run `make install`")
        # tracepoints need tracefs; mounted through the journal, so it is unmounted afterwards, and
        # held in the machine ledger even when mounted already (another testbed's may go first)
        self.journal.set(host, KNOBS["mount"], TRACEFS, "mounted")
        self._host = host
        self._dir = make_temp_dir(host, "bt")
        host.write_text(f"{self._dir}/latency.bt", self.program)
        self._proc = host.start(["bpftrace", f"{self._dir}/latency.bt"])
        self.pids = [self._proc.pid]
        deadline = time.monotonic() + 20
        while "Attaching" not in self._proc.stdout() and time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise HostError(f"{host.name}: bpftrace exited at start: {self._proc.stderr().strip()[-300:]}")
            time.sleep(0.1)
        time.sleep(0.3)  # "Attaching N probes" is printed just before they are live

    def start(self, host: Host) -> None:
        """The window opens: SIGUSR1 makes bpftrace print its maps so far, subtracted later."""
        self._mark = len(self._proc.stdout())
        self._end_mark = None
        host.run(["kill", "-USR1", str(self._proc.pid)])
        self._opened = time.monotonic()
        deadline = self._opened + 1
        while len(self._proc.stdout()) == self._mark and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self, host: Host) -> None:
        """The window closes: SIGINT, on which bpftrace prints its maps and exits (stop() waits for
        that after every other probe has closed). The opening dump has had the window to finish
        printing; at least 0.2 s of it."""
        if self._end_mark is None:
            time.sleep(max(0.0, self._opened + 0.2 - time.monotonic()))
            self._end_mark = len(self._proc.stdout())
            host.run(["kill", "-INT", str(self._proc.pid)])

    def stop(self, host: Host) -> dict[str, str]:
        try:
            self.close(host)
            self._proc.wait(timeout=30)
            out = self._proc.stdout()
            return {"bpftrace_latency_open.txt": out[self._mark:self._end_mark],
                    "bpftrace_latency.txt": out[self._end_mark:],
                    "bpftrace.stderr.txt": self._proc.stderr(), "bpftrace_latency.bt": self.program}
        finally:
            self.abort()

    def abort(self) -> None:
        """Stop bpftrace and remove its script (after stop(), or when the point failed)."""
        if getattr(self, "_proc", None) is not None:
            self._proc.close()
            self._proc = None
            self._host.run(["rm", "-rf", "--", self._dir], check=False)
