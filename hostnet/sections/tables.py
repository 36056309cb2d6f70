"""Tables as a notebook shows them: pandas Stylers people can read.

table_view: numbers to three significant figures (a median never printed to 6 decimals beside a
range to 1), a column X with its X_range shown as one "median (min–max)" column, missing values as
"–", text left-aligned and numbers right-aligned. verdict_view: one short line per finding (the
verdict, and the two accountings' when they differ) with its evidence folded per accounting in a
<details> element (shown in JupyterLab, nbconvert's HTML and GitHub). Both keep the DataFrame as it
is: the report metadata and the tests read the numbers, not the text.
"""
from __future__ import annotations

import html
import math
import numbers

import pandas as pd

from ..analysis import verdicts

RANGE = "_range"
LEFT = [{"selector": "th", "props": "text-align: left; vertical-align: bottom"},
        {"selector": "td", "props": "text-align: left; vertical-align: top"}]


def number(value) -> str:
    """Three significant figures, never scientific notation; integers as they are; missing as "–"."""
    if value is None or value is pd.NA:
        return "–"
    if isinstance(value, numbers.Integral):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    v = float(value)
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(v)))))
    return f"{v:,.{digits}f}" if abs(v) >= 10_000 else f"{v:.{digits}f}"


def table_view(df: pd.DataFrame, caption: str | None = None):
    """A summary table as people read it (module docstring); the index hidden."""
    shown = df.copy()
    for col in [c for c in df.columns if f"{c}{RANGE}" in df.columns]:
        shown[col] = [number(v) + (f" ({r})" if isinstance(r, str) and r else "")
                      for v, r in zip(df[col], df[f"{col}{RANGE}"], strict=True)]
        shown = shown.drop(columns=f"{col}{RANGE}")
    numeric = [c for c in shown.columns if pd.api.types.is_numeric_dtype(shown[c]) and
               not pd.api.types.is_bool_dtype(shown[c])]
    merged = [c for c in df.columns if f"{c}{RANGE}" in df.columns]
    styler = (shown.style.hide(axis="index").format(number, subset=numeric, na_rep="–")
              .set_table_styles(LEFT))
    if numeric or merged:
        styler = styler.set_properties(subset=[*numeric, *merged], **{"text-align": "right"})
    return styler.set_caption(caption) if caption else styler


SHORT = 200  # characters: evidence this short is shown as it is, not folded


def _evidence_html(shows: str) -> str:
    parts = verdicts.evidence(shows)
    if len(parts) == 1 and len(shows) <= SHORT:
        return html.escape(shows)
    body = "".join(f"<p><b>{html.escape(name)}</b>: {html.escape(text)}</p>" if name
                   else f"<p>{html.escape(text)}</p>" for name, text in parts)
    label = " · ".join(name for name, _ in parts if name) or "evidence"
    return f"<details><summary>{html.escape(label)}</summary>{body}</details>"


def verdict_line(row: dict) -> str:
    """The verdict, with the two accountings' when they differ."""
    def given(key):  # a table concatenated with one that lacks the column has NaN there
        value = row.get(key)
        return value if isinstance(value, str) and value else None
    raw, nic = given("raw"), given("NIC-equivalent")
    both = raw and nic and nic != raw and nic != "(no ledger: raw)"
    return (given("verdict") or "–") + (f" (raw: {raw}; NIC-equivalent: {nic})" if both else "")


NOTES = ("sensitivity", "unsteady runs", "steady runs only")


def verdict_view(verdict: pd.DataFrame, caption: str | None = None):
    """The verdict table as one short line per finding, the evidence folded (module docstring);
    sensitivity, unsteady runs and the steady-runs-only verdict in one notes column where said."""
    rows = []
    for row in verdict.to_dict(orient="records"):
        notes = [f"{k}: {row[k]}" for k in NOTES if isinstance(row.get(k), str) and row[k]]
        rows.append({"finding": row["id"], "paper says": row["paper says"], "verdict": verdict_line(row),
                     "this run shows": _evidence_html(row["this run shows"]), "notes": "; ".join(notes)})
    shown = pd.DataFrame(rows, columns=["finding", "paper says", "verdict", "this run shows", "notes"])
    # the evidence cell is HTML built here (escaped above); every other cell is escaped by the Styler
    styler = (shown.style.hide(axis="index").format(escape="html", subset=["finding", "paper says", "verdict", "notes"])
              .set_table_styles(LEFT))
    return styler.set_caption(caption) if caption else styler
