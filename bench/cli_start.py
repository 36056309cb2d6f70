"""Benchmark 8: how soon the CLI answers. `hostnet --help`, every subcommand's --help and refusals of
arguments it cannot use (an undeclared experiment, an unknown notebook, a file or run that is not
there), each timed as a whole process (python start, imports, the answer) from a subdirectory of the
checkout. Target: the slowest median <= 0.5 s on this machine (issue 44: 2.1-4.8 s before, when
every command imported pandas, jsonschema and fabric before reading its arguments)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .stats import summarize, verdict

TARGET = ("<=", 0.5)
HELP = ("testbed", "run", "sweep", "top-up", "receive-path", "breakdown", "flamegraph", "compare", "figures",
        "notebooks", "data", "restore", "rederive", "seal")
REFUSALS = (("sweep", "no-such-experiment"), ("top-up", "99-no-such-notebook", "x"),
            ("breakdown", "/nonexistent/perf.data"), ("flamegraph", "/nonexistent/run"),
            ("run", "no-such-experiment"))


def commands() -> list[tuple[str, ...]]:
    return [("--help",), *((name, "--help") for name in HELP), *REFUSALS]


def measure(repetitions: int, log, root: Path | None = None) -> list[dict]:
    """Each command `repetitions` times, in turn (a slow stretch of the machine spreads over all),
    after one untimed round that warms the page cache."""
    root = root or Path(__file__).resolve().parent.parent
    hostnet = [sys.executable, "-m", "hostnet.cli"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    rows = []
    for rep in range(-1, repetitions):
        for argv in commands():
            t0 = time.monotonic()
            done = subprocess.run([*hostnet, *argv], cwd=root / "docs", env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            if rep >= 0:
                said = (done.stderr or done.stdout).strip()
                rows.append({"command": " ".join(argv), "repetition": rep, "wall_s": wall, "rc": done.returncode,
                             "said": said.splitlines()[-1][:160] if said else "",
                             "traceback": "Traceback (most recent call last)" in done.stderr})
        if rep >= 0:
            log(f"  round {rep}: slowest {max(r['wall_s'] for r in rows if r['repetition'] == rep):.2f} s")
    return rows


def result(rows: list[dict]) -> dict:
    per = {}
    for r in rows:
        per.setdefault(r["command"], []).append(r["wall_s"])
    medians = {c: summarize(v).median for c, v in per.items()}
    slowest = max(medians, key=medians.get) if medians else ""
    value = medians.get(slowest, float("nan"))
    op, target = TARGET
    # a refusal that came out as a traceback is a failure whatever its time
    tracebacks = sorted({r["command"] for r in rows if r.get("traceback") or r["rc"] not in (0, 2)})
    return {"name": "cli_start", "title": "CLI start", "unit": "s",
            "metric": f"median seconds until `hostnet` answers --help or refuses an argument ({os.cpu_count()} cores)",
            "summary": summarize(medians.values()).as_dict(), "value": value, "op": op, "target": target,
            "verdict": "below target" if tracebacks else verdict(value, op, target), "rows": rows,
            "per_command": medians, "tracebacks": tracebacks,
            "figure": f"CLI start: slowest median {value:.2f} s ({slowest}) over {len(medians)} commands, "
                      f"median of medians {summarize(medians.values()).median:.2f} s"
                      + (f"; not a one-line refusal: {', '.join(tracebacks)}" if tracebacks else "")
                      + f"; target {op} {target} s"}
