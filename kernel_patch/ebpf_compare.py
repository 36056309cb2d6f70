#!/usr/bin/env python3
"""The stock-kernel side of kernel_patch/README.md's comparison: the boot test's 16 MiB TCP flow
over loopback (boot/rxload.c), measured by hostnet's own bpftrace latency probe on the running
kernel. Root. Usage: ebpf_compare.py OUTFILE (bpftrace's maps, with the kernel and load on top).
tracefs is mounted through the knob journal when needed and unmounted afterwards.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostnet.hosts import LocalHost  # noqa: E402
from hostnet.knobs import Journal  # noqa: E402
from hostnet.probes.latency import LatencyProbe  # noqa: E402

PORT, BYTES = 47001, 16 << 20


def main(out: str) -> int:
    host = LocalHost()
    with tempfile.TemporaryDirectory(prefix="hostnet-kp-") as tmp:
        rxload = f"{tmp}/rxload"
        host.run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-o", rxload,
                  str(Path(__file__).parent / "boot" / "rxload.c")])
        journal = Journal(Path(tmp) / "journal")
        probe = LatencyProbe(["lo"], "rxload", journal, 1)
        try:
            probe.prepare(host)
            probe.start(host)
            load = host.run([rxload, "tcp", str(PORT), str(BYTES)]).stdout.strip()
            files = probe.stop(host)
        finally:
            probe.abort()
            problems = journal.restore()
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
    kernel = host.run(["uname", "-r"]).stdout.strip()
    Path(out).write_text(f"# kernel {kernel}; {load}\n## maps when the window opened (SIGUSR1)\n"
                         f"{files['bpftrace_latency_open.txt']}\n## maps at the end\n{files['bpftrace_latency.txt']}")
    print(f"{load}\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
