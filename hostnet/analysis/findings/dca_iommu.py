"""§3.8-3.9's findings (notebook 10): F15 (DDIO), F16 (the IOMMU) and F27 (DDIO's breakdown), on
the clean runs of each (DDIO, IOMMU) point; not testable, with the host's reason, where the
hardware lacks the knob."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import verdicts
from ..metrics import breakdown_metric
from ...taxonomy import CATEGORIES

NO_DDIO_NEEDS = "an Intel host with DDIO (IIO LLC ways MSR)"


def runs(tidy: pd.DataFrame, ddio: str, iommu: str, metric: str, side: str, category: str = "") -> pd.Series:
    rows = tidy[(tidy.ddio == ddio) & (tidy.iommu == iommu) & (tidy.metric == metric) & (tidy.side == side)
                & (tidy.category.fillna("") == category)]
    return rows.set_index("run_id").value.astype(float).sort_index()


def points(tidy: pd.DataFrame) -> set[tuple[str, str]]:
    return set() if tidy.empty else set(zip(tidy.ddio, tidy.iommu, strict=True))


def ddio_reasons(records: dict[str, dict]) -> str:
    """Why DDIO could not be set, host by host, from the campaigns' capability records."""
    reasons = [c["ddio"]["detail"] or f"{h}: DDIO {c['ddio']['value']}" for r in records.values()
               for h, c in r["capabilities"].items() if "ddio" in c]
    return "; ".join(dict.fromkeys(reasons))


def _ddio_pair(tidy: pd.DataFrame) -> bool:
    return {("ddio-on", "off"), ("ddio-minimal", "off")} <= points(tidy)


def f15(tidy: pd.DataFrame, no_ddio: str) -> verdicts.Judgement:
    """DDIO down to one way lowers tpc against the host's own mask."""
    if not _ddio_pair(tidy):
        return verdicts.not_testable("DDIO not settable — " + no_ddio, NO_DDIO_NEEDS)
    d = verdicts.difference(runs(tidy, "ddio-minimal", "off", "tpc_gbps", "both"),
                            runs(tidy, "ddio-on", "off", "tpc_gbps", "both"))
    return verdicts.direction(d, want="<", what="tpc DDIO one way → own mask (DDIO not fully off)", unit="Gbit/s",
                              fmt=".2f")


def f16(tidy: pd.DataFrame, bases: Sequence[str], no_pair: str) -> verdicts.Judgement:
    """The IOMMU on lowers tpc and raises memory management on both sides (the paper), at the
    Default point: the first of `bases` (DDIO states) recorded with the IOMMU off and on."""
    base = next((b for b in bases if {(b, "off"), (b, "on")} <= points(tidy)), "")
    if not base:
        return verdicts.not_testable(no_pair, "hosts with the IOMMU on and off")
    metric = breakdown_metric(tidy)
    parts = [verdicts.direction(verdicts.difference(runs(tidy, base, "off", "tpc_gbps", "both"),
                                                    runs(tidy, base, "on", "tpc_gbps", "both")),
                                want=">", what="tpc IOMMU off → on", unit="Gbit/s", fmt=".2f")]
    parts += [verdicts.direction(verdicts.difference(runs(tidy, base, "off", metric, side, "mm"),
                                                     runs(tidy, base, "on", metric, side, "mm")),
                                 want="<", what=f"{side} mm share IOMMU off → on", unit="%")
              for side in ("sender", "receiver")]
    return verdicts.combine(parts)


def f27(tidy: pd.DataFrame, no_ddio: str) -> verdicts.Judgement:
    """With DDIO down to one way, the category that led with the host's own mask still leads."""
    if not _ddio_pair(tidy):
        return verdicts.not_testable("DDIO not settable — " + no_ddio, NO_DDIO_NEEDS)
    metric, off, parts = breakdown_metric(tidy), tidy[tidy.iommu == "off"], []
    for side in ("sender", "receiver"):
        on = verdicts.shares_by_run(off[off.ddio == "ddio-on"], metric, side, CATEGORIES)
        low = verdicts.shares_by_run(off[off.ddio == "ddio-minimal"], metric, side, CATEGORIES)
        if on and low:
            top = max(on, key=lambda c: sum(on[c]) / len(on[c]))
            parts.append(verdicts.largest(low, top, what=f"{side}, DDIO one way (largest with its own mask: {top})"))
    return verdicts.combine(parts) if parts else verdicts.Judgement(
        verdicts.INCONCLUSIVE, "no profiles of the DDIO points", "profiled runs")
