"""What `hostnet run` prints of each run it made: throughput, CPU, tpc, the top categories, foreign
load and steal, read from the run directory; and a caution where tick-based CPU accounting may
have read a partly loaded side low."""
from __future__ import annotations

from pathlib import Path

from .. import store
from . import flags, metrics

PARTLY_LOADED_PCT = 90.0


def cpu_accounting_note(manifest: dict, busy_pct: dict[str, float]) -> str:
    """A warning when a side was partly loaded and its utilisation came from tick-sampled busy
    fields on a tick-accounted kernel: it may read low, and tpc high (capabilities.cpu_accounting).
    Runs that kept their /proc/stat snapshot times use wall minus idle instead, which has no such bias."""
    if "wall-minus-idle" in manifest.get("cpu_util_method", {}).values():
        return ""
    ticks = sorted({v.get("cpu_accounting", "") for v in manifest.get("versions", {}).values()
                    if v.get("cpu_accounting", "").startswith("tick")})
    partly = [s for s, pct in busy_pct.items() if pct < PARTLY_LOADED_PCT]
    if not ticks or not partly:
        return ""
    return (f"{' and '.join(partly)} CPU below {PARTLY_LOADED_PCT:.0f} % with {ticks[0]} CPU accounting: "
            "bursts between ticks are not counted, so utilisation may read low and tpc high")


def text(runs: list[Path]) -> str:
    """What `hostnet run` prints of its runs, one block each (from their run directories)."""
    out: list[str] = []
    say = out.append
    if not runs:
        return "no run succeeded"
    for run in runs:
        m = store.load_manifest(run)
        say(f"\n{m['config_label']} (repetition {m['repetition']}): status {m['status']}"
              + (f"  [FLAGGED: {flags.flagged(m)}]" if m["status"] == "ok" and flags.flagged(m) else ""))
        if m["status"] != "ok":
            say(f"  error: {m.get('error')}")
            say(f"  run directory: {run}")
            continue
        t = store.read_tidy(run)

        def v(metric, side, t=t):
            return float(t[(t.metric == metric) & (t.side == side)].value.iloc[0])
        say(f"  throughput        {v('throughput_gbps', 'both'):7.2f} Gbit/s  ({m['cores']})")
        flows = t[t.metric == "flow_throughput_gbps"]
        if len(flows) > 1:
            say("  per flow          " + ", ".join(f"#{r.flow} {r.value:.2f}" for r in flows.itertuples()))
        rpc = t[t.metric == "transactions_per_s"]
        if len(rpc):
            p99 = t[t.metric == "flow_latency_p99_usec"].value
            say(f"  RPCs              {rpc.value.iloc[0]:9.0f} /s ({m['workload']['tool']}, "
                  f"{m['workload']['size_bytes']} B), p99 latency {p99.max():.0f} us (worst flow)")
        say(f"  CPU sender        {v('cpu_util_pct', 'sender'):7.1f} %   receiver "
              f"{v('cpu_util_pct', 'receiver'):6.1f} %  (bottleneck: {m['bottleneck']})")
        say(f"  throughput/core   {v('tpc_gbps', 'both'):7.2f} Gbit/s")
        note = cpu_accounting_note(m, {s: v("cpu_util_pct", s) for s in ("sender", "receiver")})
        if note:
            say(f"  caution           {note}")
        for side in ("sender", "receiver"):
            top = metrics.top_categories(t, m["config"]["name"], side, 3)
            say(f"  top {side:<9}    " + ", ".join(f"{c} {p:.1f}%" for c, p in top))
        say(f"  foreign load      {m['load'][next(iter(m['load']))]['foreign_cpu_pct']:7.1f} % of a core")
        if "steal_pct" in m:  # the hypervisor's: neither the stack's CPU nor idle
            say("  steal             " + ", ".join(f"{s} {p:.1f} %" for s, p in m["steal_pct"].items()))
        say(f"  run directory: {run}")
    say("\nnote: without a hardware PMU perf samples on cpu-clock; the top categories attribute samples taken "
          "where interrupts come back on through their call chains (docs/measurement.md).")
    return "\n".join(out)
