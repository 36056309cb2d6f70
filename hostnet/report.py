"""figures/index.html: a table of contents, every finding's verdict across notebooks, and per notebook
its figures, summary, verdict table and testbed, from each notebook's figures/<nb>.meta.json; and
docs/results.md, the same metadata as Markdown (results_markdown, a pure function of those files)."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from . import __version__, project
from .verdicts import ACCOUNTING_COLUMNS, NOT_TESTABLE, STEADINESS_COLUMNS, VOCABULARY, is_extension


_CSS = """body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1100px;margin:2em auto;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}.figs img{max-width:520px;margin:6px;border:1px solid #eee}
.reproduced{color:#1a7f37;font-weight:bold}.reproduced-in-direction{color:#4d7c0f;font-weight:bold}.not-reproduced{color:#b42318;font-weight:bold}
.not-testable-here{color:#777}.inconclusive{color:#9a6700;font-weight:bold}.not-covered{color:#aaa}.depends-on-the-testbed{color:#6b21a8;font-weight:bold}
.meta{color:#555;font-size:.9em}nav ol{columns:2}table.summary{display:block;overflow-x:auto;max-width:100%}"""


def verdict_class(v: str) -> str:
    """The CSS class that colours a verdict: its words joined by '-'."""
    return v.replace(" ", "-")


def _anchor(notebook: str) -> str:
    return Path(notebook).stem


def _e(text) -> str:
    return html.escape(str(text))


def finding_summary(metas: list[dict], findings: pd.DataFrame) -> pd.DataFrame:
    """One row per finding: each notebook's verdict on it, and the overall verdict.

    Overall: the verdicts of the notebooks that could test it (a notebook that says "not testable
    here" because another notebook covers the finding does not dilute them); "not covered" when no
    notebook mentions the finding yet.
    """
    rows = []
    for f in findings.itertuples():
        seen = [(m["notebook"], v["verdict"]) for m in metas for v in m["verdicts"] if v["id"] == f.id]
        tested = sorted({v for _, v in seen if v != NOT_TESTABLE})
        overall = " / ".join(tested) if tested else (NOT_TESTABLE if seen else "not covered")
        rows.append({"id": f.id, "section": f.section, "claim": f.claim, "overall": overall, "by notebook": seen})
    return pd.DataFrame(rows)


def _summary_html(summary: pd.DataFrame) -> str:
    rows = []
    for r in summary.itertuples():
        cls = verdict_class(r.overall) if " / " not in r.overall else "inconclusive"
        by_nb = "<br>".join(f"<a href='#{_anchor(nb)}'>{_e(_anchor(nb))}</a>: "
                            f"<span class='{verdict_class(v)}'>{_e(v)}</span>" for nb, v in r[5]) or "–"
        rows.append(f"<tr><td>{_e(r.id)}</td><td>{_e(r.section)}</td><td>{_e(r.claim)}</td>"
                    f"<td class='{cls}'>{_e(r.overall)}</td><td>{by_nb}</td></tr>")
    counts = summary.overall.value_counts()
    tally = ", ".join(f"{n} {_e(v)}" for v, n in counts.items())
    return (f"<h2 id='findings'>Findings: paper says / this testbed shows</h2><p class='meta'>{tally}.</p>"
            "<table class='findings'><tr><th>finding</th><th>§</th><th>paper says</th><th>verdict</th>"
            f"<th>by notebook</th></tr>{''.join(rows)}</table>")


def _seconds(values: list) -> str:
    """How long points measured: "5 s", or "2-5 s" for a notebook joining campaigns."""
    lo, hi = min(values), max(values)
    return f"{lo:g} s" if lo == hi else f"{lo:g}-{hi:g} s"


def _section_html(m: dict) -> str:
    q = m["quality"]
    parts = [f"<h2 id='{_e(_anchor(m['notebook']))}'>{_e(m['title'])}</h2><p class='meta'>Notebook "
             f"<code>{_e(m['notebook'])}</code>; campaign <code>{_e(m['campaign'])}</code>; testbed: "
             f"<span class='testbed'>{_e(m['testbed'])}</span>; {q['ok']}/{q['runs']} runs ok"
             + (f" (points measured {_seconds(q['point_seconds'])})" if q.get("point_seconds") else "") + ", "
             + (f"{q['damaged']} with stored files changed or unreadable, " if q.get("damaged") else "") +
             f"{q['contaminated']} flagged for foreign load"
             + (f", {q['settings_moved']} for a host-wide setting that moved" if q.get("settings_moved") else "")
             + ".</p>"]
    parts.append("<div class='figs'>" + "".join(
        f"<img src='{_e(stem)}.svg' alt='{_e(stem)}'>" for stem in m["figures"]) + "</div>")
    if m.get("summary"):
        parts.append(pd.DataFrame(m["summary"]).to_html(index=False, float_format=lambda x: f"{x:.2f}",
                                                        na_rep="–", classes="summary"))
    extra = extra_columns(m["verdicts"])
    rows = "".join(
        f"<tr><td>{_e(v['id'])}</td><td>{_e(v['paper says'])}</td><td>{_e(v['this run shows'])}</td>"
        f"<td class='{verdict_class(v['verdict'])}'>{_e(v['verdict'])}</td>"
        + "".join(f"<td>{_e(v.get(c) or '')}</td>" for c in extra) + "</tr>" for v in m["verdicts"])
    parts.append("<table class='verdicts'><tr><th>finding</th><th>paper says</th><th>this run shows</th>"
                 "<th>verdict</th>" + "".join(f"<th>{_e(c)}</th>" for c in extra) + f"</tr>{rows}</table>")
    return "\n".join(parts)


def extra_columns(records: list[dict]) -> list[str]:
    """The verdict table's columns beyond the four every table has (each accounting's verdict, the
    ambiguous line's effect, unsteady runs), in their order, where the records have them."""
    extra = [*ACCOUNTING_COLUMNS, *STEADINESS_COLUMNS]
    return [c for c in extra if any(c in r for r in records)]


def recorded(metas: list[dict]) -> str:
    """When the data were recorded, from the campaign ids (they start with their date, YYYYMMDD):
    the report says the data's time, not the clock's, so a replay rewrites it byte for byte."""
    days = sorted({m.group(1) for meta in metas if (m := re.match(r"(\d{8})-", str(meta.get("campaign", ""))))})
    if not days:
        return ""
    first, last = (f"{d[:4]}-{d[4:6]}-{d[6:]}" for d in (days[0], days[-1]))
    return f"Data recorded {first}" + (f" to {last}" if last != first else "") + ". "


def build(figures_dir, reference_dir=None) -> Path:
    """figures_dir/index.html; reference_dir: the paper's findings (default: shipped in the package)."""
    figures_dir = Path(figures_dir)
    reference_dir = reference_dir or project.reference_dir()
    metas = [json.loads(p.read_text()) for p in sorted(figures_dir.glob("*.meta.json"))]
    toc = "".join(f"<li><a href='#{_e(_anchor(m['notebook']))}'>{_e(m['title'])}</a></li>" for m in metas)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>hostnet report</title>"
             f"<style>{_CSS}</style></head><body><h1>hostnet: where the host spends its CPU moving data over TCP</h1>"
             f"<p class='meta'>{recorded(metas)}Built by hostnet "
             f"{__version__}. Each section comes from one notebook; verdicts compare that testbed's data with "
             f"the paper's findings.</p>"
             f"<nav><h2>Contents</h2><ol><li><a href='#findings'>Findings: every verdict</a></li>{toc}</ol></nav>"]
    findings_csv = Path(reference_dir) / "findings.csv"
    if findings_csv.exists():
        parts.append(_summary_html(finding_summary(metas, pd.read_csv(findings_csv))))
    parts.extend(_section_html(m) for m in metas)
    if not metas:
        parts.append("<p>No notebook has written its figures yet: run <code>make figures</code>.</p>")
    parts.append("</body></html>")
    out = figures_dir / "index.html"
    out.write_text("\n".join(parts))
    return out


# --- docs/results.md: the same metadata as Markdown, committed next to the code ---------------------

RESULTS_HEADER = """# Results on the embedded testbed

<!-- Generated by `hostnet figures` (hostnet.report.results_markdown). Do not edit by hand. -->

This file is generated by `hostnet figures` from the campaigns in `data/runs/`, through the
`figures/*.meta.json` files the notebooks write. Do not edit it by hand: change the data or the
code and run `make figures` (no root) again. [`figures/index.html`]({href}/index.html) has the
same verdicts with the figures inline. Why a verdict can differ on this testbed from the paper's
100G servers: [docs/embedded-testbed.md](embedded-testbed.md)."""

# Verdict kinds in the order they are counted; any other kind follows, sorted.
VERDICT_ORDER = VOCABULARY


def md_cell(value) -> str:
    """A Markdown table cell: `|` escaped, line breaks folded, floats to 2 decimals, missing as –."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, float):
        value = f"{value:.2f}"
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|") or "–"


def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _verdict_counts(metas: list[dict]) -> str:
    counts: dict[str, int] = {}
    extensions = 0
    for m in metas:
        for v in m.get("verdicts", []):
            if is_extension(v["id"]):  # judged beyond where the paper states it: not the paper's count
                extensions += 1
                continue
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    kinds = [k for k in VERDICT_ORDER if k in counts] + sorted(set(counts) - set(VERDICT_ORDER))
    text = ", ".join(f"{counts[k]} {k}" for k in kinds) or "none"
    return text + (f" (and {extensions} extension{'s' if extensions > 1 else ''}, not counted)" if extensions else "")


def _results_section(m: dict, figures_href: str) -> str:
    q = m.get("quality", {})
    parts = [f"## {md_cell(m['title'])}",
             f"Notebook `notebooks/{m['notebook']}`; campaign `data/runs/{m['campaign']}`.\n"
             f"Testbed: {md_cell(m['testbed'])}.\n"
             f"Runs: {q.get('runs', 0)}, ok {q.get('ok', 0)}, failed {q.get('failed', 0)}"
             + (f"; points measured {_seconds(q['point_seconds'])}" if q.get("point_seconds") else "")
             + (f" (of them {q['damaged']} with stored files changed or unreadable)" if q.get("damaged") else "")
             + ", "
             f"flagged for foreign load {q.get('contaminated', 0)} "
             f"(more than {q.get('foreign_load_limit_pct', 10.0):g} % of a core used by other processes)"
             + (f", for a host-wide setting that moved {q['settings_moved']}" if q.get("settings_moved") else "")
             + ".",
             md_table(["finding", "paper says", "this run shows", "verdict", *extra_columns(m["verdicts"])],
                      [[v["id"], v["paper says"], v["this run shows"], v["verdict"],
                        *(v.get(c) for c in extra_columns(m["verdicts"]))] for v in m["verdicts"]])]
    summary = m.get("summary") or []
    if summary:
        columns = list(dict.fromkeys(k for row in summary for k in row))
        parts.append("Summary:\n\n" + md_table(columns, [[row.get(c) for c in columns] for row in summary]))
    parts.append("Figures: " + ", ".join(f"[{stem}]({figures_href}/{stem}.svg)" for stem in m["figures"]) + ".")
    return "\n\n".join(parts)


def results_markdown(figures_dir, figures_href: str = "../figures") -> str:
    """docs/results.md from figures_dir/*.meta.json: a pure function of those files.

    Per notebook (sorted by notebook file name): title, campaign, testbed, run quality, the verdict
    table, the summary table and links to its figures (figures_href/<stem>.svg, relative to docs/).
    Nothing but the data goes in (no generation time), so the same metadata gives the same text."""
    metas = sorted((json.loads(p.read_text()) for p in Path(figures_dir).glob("*.meta.json")),
                   key=lambda m: m["notebook"])
    n_verdicts = sum(not is_extension(v["id"]) for m in metas for v in m.get("verdicts", []))
    parts = [RESULTS_HEADER.format(href=figures_href),
             f"{len(metas)} notebooks, {n_verdicts} verdicts: {_verdict_counts(metas)}. A finding that "
             "several notebooks check is counted once per notebook. Each verdict is judged under raw and "
             "NIC-equivalent accounting (docs/verdicts.md, docs/embedded-testbed.md: the testbed ledger); "
             "where they differ both are given."]
    by_finding: dict[str, list[str]] = {}
    for m in metas:
        for v in m.get("verdicts", []):
            both = (f" (raw: {v['raw']}; NIC-equivalent: {v['NIC-equivalent']})"
                    if v.get("raw") and v.get("NIC-equivalent") not in (None, v["raw"], "(no ledger: raw)") else "")
            by_finding.setdefault(v["id"], []).append(f"{Path(m['notebook']).stem[:2]}: {v['verdict']}{both}")
    if by_finding:
        parts.append("## Findings\n\n" + md_table(
            ["finding", "verdict by notebook"], [[f, "; ".join(by_finding[f])] for f in sorted(by_finding)]))
    parts.extend(_results_section(m, figures_href) for m in metas)
    return "\n\n".join(parts) + "\n"


def write_results(figures_dir, out) -> Path:
    """Write results_markdown(figures_dir) to `out` (docs/results.md)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(results_markdown(figures_dir))
    return out
