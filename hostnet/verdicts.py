"""'Paper says / this run shows': each finding checked against a run's tidy data."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .analysis import breakdown_metric, summarize
from .taxonomy import CATEGORIES

REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "not reproduced", "not testable here"
INCONCLUSIVE = "inconclusive"
# Medians closer than this are not called a difference: veth runs on a shared VM vary more.
NOISE_PCT = 5.0


def step_sign(a: float | None, b: float | None) -> str:
    """'<' when b is clearly above a, '>' when clearly below, '≈' within NOISE_PCT of a, '?' when
    either is missing (a missing value is no evidence either way)."""
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return "?"
    if abs(b - a) <= abs(a) * NOISE_PCT / 100:
        return "≈"
    return "<" if b > a else ">"


def verdict_of_signs(signs) -> str:
    """Reproduced when every step goes the paper's way, not reproduced when one goes against it."""
    if all(sign == "<" for sign in signs):
        return REPRODUCED
    return NOT_REPRODUCED if any(sign == ">" for sign in signs) else INCONCLUSIVE


def load_findings(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "findings.csv")


def _median(s: pd.DataFrame, config: str, metric: str, side: str, category: str = "") -> float | None:
    m = s[(s.config == config) & (s.metric == metric) & (s.side == side) & (s.category == category)]
    return float(m["median"].iloc[0]) if len(m) else None


def _argmax_category(s: pd.DataFrame, config: str, side: str, exclude=(),
                     metric: str = "breakdown_pct") -> tuple[str, float] | None:
    m = s[(s.config == config) & (s.metric == metric) & (s.side == side)
          & s.category.isin([c for c in CATEGORIES if c not in exclude])]
    if m.empty:
        return None
    top = m.sort_values("median", ascending=False).iloc[0]
    return str(top.category), float(top["median"])


def single_flow(tidy: pd.DataFrame, findings: pd.DataFrame) -> pd.DataFrame:
    """Verdicts for F01-F08 from a single-flow campaign."""
    s = summarize(tidy)
    s["category"] = s["category"].fillna("")
    tpc = {c: _median(s, c, "tpc_gbps", "both") for c in s.config.unique()}
    rows = []

    def add(fid, shows, verdict):
        f = findings[findings.id == fid].iloc[0]
        rows.append({"id": fid, "paper says": f.claim, "this run shows": shows, "verdict": verdict})

    ladder = [c for c in ("no-opts", "tsogro", "tsogro+jumbo", "all-opts") if tpc.get(c) is not None]
    if "all-opts" in tpc:
        add("F01", f"all-opts tpc {tpc['all-opts']:.1f} Gbit/s on veth (paper ~42 on 100G NICs; "
                   "absolute values depend on the host)", NOT_TESTABLE)
    if len(ladder) == 4:
        vals = [tpc[c] for c in ladder]
        signs = [step_sign(a, b) for a, b in zip(vals, vals[1:], strict=False)]
        shows = f"{ladder[0]} {vals[0]:.2f}" + "".join(
            f" {sign} {c} {v:.2f}" for sign, c, v in zip(signs, ladder[1:], vals[1:], strict=True))
        add("F02", shows + f" Gbit/s (medians; ≈ means within {NOISE_PCT:.0f}%)", verdict_of_signs(signs))
    if tpc.get("tsogro") is not None and tpc.get("tsogro+jumbo") is not None:
        sign = step_sign(tpc["tsogro"], tpc["tsogro+jumbo"])
        add("F03", f"tsogro {tpc['tsogro']:.2f} {sign} tsogro+jumbo {tpc['tsogro+jumbo']:.2f} Gbit/s",
            verdict_of_signs([sign]))
    steps = [c for c in s.config.unique() if _median(s, c, "cpu_util_pct", "receiver") is not None]
    if steps:
        signs = {c: step_sign(_median(s, c, "cpu_util_pct", "sender"), _median(s, c, "cpu_util_pct", "receiver"))
                 for c in steps}
        shows = ", ".join(f"{c}: sender {_median(s, c, 'cpu_util_pct', 'sender'):.0f}% {signs[c]} receiver "
                          f"{_median(s, c, 'cpu_util_pct', 'receiver'):.0f}%" for c in steps)
        add("F04", shows, verdict_of_signs(list(signs.values())))
    metric = breakdown_metric(tidy)
    for fid, cfg, want in (("F05", "all-opts", "data_copy"), ("F06", "no-opts", "tcp/ip")):
        tops = {side: _argmax_category(s, cfg, side, metric=metric) for side in ("sender", "receiver")}
        if not all(tops.values()):
            continue
        if metric == "breakdown_attributed_pct":
            shows = "; ".join(f"{side}: largest {t[0]} {t[1]:.0f}%" for side, t in tops.items())
            shows += " (samples where IRQs come back on attributed through the call chain)"
            add(fid, shows, REPRODUCED if all(t[0] == want for t in tops.values()) else NOT_REPRODUCED)
        else:  # leaf-only: cpu-clock bills IRQs-off time to 'etc'; judge among the stack's own layers
            tops_ex = {side: _argmax_category(s, cfg, side, exclude=("etc",)) for side in tops}
            shows = "; ".join(f"{side}: largest {t[0]} {t[1]:.0f}% (excluding etc: {tops_ex[side][0]} "
                              f"{tops_ex[side][1]:.0f}%)" for side, t in tops.items())
            add(fid, shows, REPRODUCED if all(t[0] == want for t in tops_ex.values()) else NOT_REPRODUCED)
    for fid, why in (("F07", "needs the Rx-buffer sweep and the eBPF latency probe (notebook 02)"),
                     ("F08", "veth has no NIC rings (ethtool -G unsupported)")):
        add(fid, why, NOT_TESTABLE)
    return pd.DataFrame(rows)
