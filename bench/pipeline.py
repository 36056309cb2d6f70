"""One timed analysis of a perf.data, in its own process so its peak memory is its own.

python -m bench.pipeline MODE PERF_DATA KERNEL  -> one JSON line on stdout.
  ours             what a run does (report_files: perf report in the background while perf
                   script streams through the folding), then the leaf breakdown and the
                   call-chain attribution per CPU (the category tables)
  ours-sequential  the same from the earlier path (report_files_sequential: perf report, then
                   perf script held whole and folded line by line), for comparison
  perf-report      `perf report` alone, with hostnet's arguments
  perf-script      `perf script` alone, with hostnet's arguments, its output counted and dropped
  text-ours        bench 9: PERF_DATA is a perf script text; `hostnet breakdown`'s path on it
  text-collapse    bench 9: the collapser alone on that text
  script-collapse  what a user would otherwise run: `perf script | stackcollapse-perf.pl`
                   (FlameGraph's script, or inferno-collapse-perf, its Rust port with the same
                   output, where that is what is installed: collapser()), folded stacks to
                   /dev/null
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

from hostnet.analysis import metrics
from hostnet import taxonomy
from hostnet.analysis.attribution import breakdown_from_stacks
from hostnet.hosts import LocalHost
from hostnet.parsers.perf_report import PERF_REPORT_ARGS, parse_perf_report
from hostnet.parsers.perf_script import parse_folded
from hostnet.probes.perf import SCRIPT_ARGS, report_files, report_files_sequential

COMMS = ["iperf3"]


class TimingHost(LocalHost):
    """Records how long each command took, by its subcommand (perf report, perf script); a
    streamed command's time includes its sink (the folding), a background one's is its wait."""

    def __init__(self):
        super().__init__("bench")
        self.times: dict[str, float] = {}

    def _timed(self, key, fn, *args, **kw):
        t0 = time.monotonic()
        try:
            return fn(*args, **kw)
        finally:
            self.times[key] = self.times.get(key, 0.0) + time.monotonic() - t0

    def run(self, argv, **kw):
        return self._timed(" ".join(argv[:2]), super().run, argv, **kw)

    def stream(self, argv, sink, **kw):
        return self._timed(" ".join(argv[:2]) + " + fold", super().stream, argv, sink, **kw)

    def start(self, argv):
        proc = super().start(argv)
        wait = proc.wait
        proc.wait = lambda *a, **kw: self._timed(" ".join(argv[:2]) + " wait", wait, *a, **kw)
        return proc


def ours(data: str, kernel: str, sequential: bool = False) -> dict:
    host = TimingHost()
    t0 = time.monotonic()
    files = (report_files_sequential if sequential else report_files)(host, data)
    t1 = time.monotonic()
    tax = taxonomy.load(taxonomy.series_for(kernel))
    rows = parse_perf_report(files["perf_report.txt"])
    cpus = sorted({r.cpu for r in rows})
    tables = {cpu: metrics.breakdown(rows, {cpu}, tax, COMMS)["pct"] for cpu in cpus}
    stacks = list(parse_folded(files["perf_folded.txt"]))
    attributed = {cpu: breakdown_from_stacks([s for s in stacks if s[0].cpu == cpu], {cpu}, tax, COMMS)["pct"]
                  for cpu in cpus}
    t2 = time.monotonic()
    stages = {k.replace(" ", "_") + "_s": v for k, v in host.times.items()}
    # sequential: the folding after perf script; streamed: starting perf report, writing the folded text
    stages["fold_python_s" if sequential else "rest_s"] = t1 - t0 - sum(host.times.values())
    stages["classify_s"] = t2 - t1
    return {"wall_s": t2 - t0, "stages": stages, "samples": sum(n for _, n in stacks),
            "categories": len(tables) and len(next(iter(tables.values()))), "attributed_cpus": len(attributed)}


def perf_report(data: str) -> dict:
    host = TimingHost()
    t0 = time.monotonic()
    out = host.run(["perf", *PERF_REPORT_ARGS, "-i", data], timeout=900)
    return {"wall_s": time.monotonic() - t0, "report_bytes": len(out.stdout)}


def perf_script(data: str) -> dict:
    t0 = time.monotonic()
    _, size = LocalHost("bench").stream(["perf", *SCRIPT_ARGS, "-i", data], lambda chunks: sum(map(len, chunks)),
                                        timeout=900)
    return {"wall_s": time.monotonic() - t0, "script_bytes": size}


# A fixed script: the perf.data and the collapser arrive as positional arguments. pipefail: a
# failing perf script fails the pipeline instead of timing an empty one.
_PIPELINE_SH = 'set -o pipefail; perf script -i "$1" | "$2" > /dev/null'


def collapser() -> tuple[str, str] | None:
    """(name, path) of the stack collapser a user would pipe perf script into: FlameGraph's
    stackcollapse-perf.pl ($FLAMEGRAPH_DIR or PATH), else inferno-collapse-perf (PATH or
    ~/.cargo/bin); None when neither is installed."""
    flamegraph = os.environ.get("FLAMEGRAPH_DIR")
    candidates = [("stackcollapse-perf.pl", str(Path(flamegraph) / "stackcollapse-perf.pl") if flamegraph else None),
                  ("stackcollapse-perf.pl", shutil.which("stackcollapse-perf.pl")),
                  ("inferno-collapse-perf", shutil.which("inferno-collapse-perf")),
                  ("inferno-collapse-perf", str(Path.home() / ".cargo" / "bin" / "inferno-collapse-perf"))]
    return next(((name, path) for name, path in candidates if path and os.access(path, os.X_OK)), None)


def script_collapse(data: str) -> dict:
    found = collapser()
    if found is None:
        return {"unsupported": "neither stackcollapse-perf.pl (FlameGraph; set FLAMEGRAPH_DIR) nor "
                               "inferno-collapse-perf (cargo install inferno) is installed"}
    bash = shutil.which("bash") or "bash"
    t0 = time.monotonic()
    LocalHost("bench").run([bash, "-c", _PIPELINE_SH, "bash", data, found[1]], timeout=1800)
    return {"wall_s": time.monotonic() - t0, "collapser": found[0]}


def text_ours(text: str, kernel: str) -> dict:
    """`hostnet breakdown TEXT`'s path (bench 9): the text read, broken down per CPU set."""
    from hostnet.analysis import profiles
    t0 = time.monotonic()
    profile, results, _, _ = profiles.analyse(text, series=taxonomy.series_for(kernel))
    return {"wall_s": time.monotonic() - t0, "samples": sum(profile.stacks.values()), "sets": len(results)}


def text_collapse(text: str) -> dict:
    """The collapser alone on the same text (bench 9), its folded stacks to /dev/null."""
    found = collapser()
    if found is None:
        return {"unsupported": "neither stackcollapse-perf.pl (FlameGraph; set FLAMEGRAPH_DIR) nor "
                               "inferno-collapse-perf (cargo install inferno) is installed"}
    t0 = time.monotonic()
    LocalHost("bench").run(["sh", "-c", '"$1" "$2" > /dev/null', "sh", found[1], text], timeout=1800)
    return {"wall_s": time.monotonic() - t0, "collapser": found[0]}


def main(argv: list[str]) -> int:
    mode, data, kernel = argv
    out = {"ours": lambda: ours(data, kernel), "ours-sequential": lambda: ours(data, kernel, sequential=True),
           "perf-report": lambda: perf_report(data), "perf-script": lambda: perf_script(data),
           "script-collapse": lambda: script_collapse(data), "text-ours": lambda: text_ours(data, kernel),
           "text-collapse": lambda: text_collapse(data)}[mode]()
    out["maxrss_python_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["maxrss_children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
