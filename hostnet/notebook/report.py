"""figures/index.html: a table of contents, every finding's verdict across notebooks, and per notebook
its figures, summary, verdict table and testbed, from each notebook's figures/<nb>.meta.json; and
docs/results.md, the same metadata as Markdown (results_markdown, a pure function of those files).
The data is prepared here; the layout is in Jinja2 templates (hostnet/templates/: report.html.j2,
autoescaped, with report.css; results.md.j2, its cells escaped for Markdown by md_table)."""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jinja2
import pandas as pd

from .. import __version__, project
from ..analysis.verdicts import (ACCOUNTING_COLUMNS, NOT_TESTABLE, REHEARSAL, STEADINESS_COLUMNS, VOCABULARY, evidence,
                                 is_extension)
from ..sections.tables import SHORT




def verdict_class(v: str) -> str:
    """The CSS class that colours a verdict: its words joined by '-'."""
    return v.replace(" ", "-")


def _anchor(notebook: str) -> str:
    return Path(notebook).stem


@functools.cache
def _templates():
    env = jinja2.Environment(loader=jinja2.PackageLoader("hostnet", "templates"),
                             autoescape=jinja2.select_autoescape(["html.j2"], default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(verdict_class=verdict_class, md=md_cell, seconds=_seconds, evidence=evidence)
    env.globals.update(md_table=md_table, short=SHORT)
    return env


def finding_summary(metas: list[dict], findings: pd.DataFrame) -> pd.DataFrame:
    """One row per finding: each notebook's verdict on it, and the overall verdict.

    Overall: the verdicts of the notebooks that could test it (a notebook that says "not testable
    here" because another notebook covers the finding does not dilute them, nor does a rehearsal's,
    which judges nothing); "not covered" when no notebook mentions the finding yet.
    """
    rows = []
    for f in findings.itertuples():
        seen = [(m["notebook"], v["verdict"]) for m in metas for v in m["verdicts"] if v["id"] == f.id]
        tested = sorted({v for _, v in seen if v not in (NOT_TESTABLE, REHEARSAL)})
        overall = (" / ".join(tested) if tested else REHEARSAL if any(v == REHEARSAL for _, v in seen)
                   else NOT_TESTABLE if seen else "not covered")
        rows.append({"id": f.id, "section": f.section, "claim": f.claim, "overall": overall, "by notebook": seen})
    return pd.DataFrame(rows)


def _seconds(values: list) -> str:
    """How long points measured: "5 s", or "2-5 s" for a notebook joining campaigns."""
    lo, hi = min(values), max(values)
    return f"{lo:g} s" if lo == hi else f"{lo:g}-{hi:g} s"


def _section(m: dict) -> dict:
    """What the HTML template shows of one notebook's metadata."""
    summary = m.get("summary")
    return {**m, "anchor": _anchor(m["notebook"]), "extra": extra_columns(m["verdicts"]),
            "point_seconds": _seconds(m["quality"]["point_seconds"]) if m["quality"].get("point_seconds") else "",
            "summary_html": pd.DataFrame(summary).to_html(index=False, float_format=lambda x: f"{x:.2f}", na_rep="–",
                                                          classes="summary") if summary else ""}


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
    findings, tally = None, ""
    findings_csv = Path(reference_dir) / "findings.csv"
    if findings_csv.exists():
        summary = finding_summary(metas, pd.read_csv(findings_csv))
        findings = [{"id": r.id, "section": r.section, "claim": r.claim, "overall": r.overall,
                     "css": verdict_class(r.overall) if " / " not in r.overall else "inconclusive",
                     "by_notebook": [(_anchor(nb), v) for nb, v in r[5]]} for r in summary.itertuples()]
        summary["source"] = [SOURCES.get(src, src) for src in pd.read_csv(findings_csv).source]
        tally = "; ".join(f"{name} ({len(g)} findings): " + _count(list(g.overall))
                          for name, g in summary.groupby("source", sort=False))
    text = _templates().get_template("report.html.j2").render(
        css=(project.packaged("templates") / "report.css").read_text(), recorded=recorded(metas),
        version=__version__, metas=[_section(m) for m in metas], findings=findings, tally=tally)
    out = figures_dir / "index.html"
    out.write_text(text)
    return out


# --- docs/results.md: the same metadata as Markdown, committed next to the code ---------------------

# Verdict kinds in the order they are counted; any other kind follows, sorted.
VERDICT_ORDER = VOCABULARY


# What md_cell escapes: Markdown's own escapes and table cells (\\, |), links ([ ]), and HTML, which
# Markdown passes through raw (a <script> in a manifest field would run where the page is shown)
_MD_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]",
                             "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def md_cell(value) -> str:
    """Markdown text (a table cell, or a line): line breaks folded, floats to 2 decimals, missing as
    –, and every character that Markdown or HTML would read as markup escaped (_MD_ESCAPES)."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, float):
        value = f"{value:.2f}"
    text = " ".join(str(value).split())
    return text.translate(_MD_ESCAPES) or "–"


def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


# Who states a finding (findings.csv's source), in the order the tallies count them: the SIGCOMM
# paper's own claims apart from the companion studies' and from what kernel documentation expects.
SOURCES = {"paper": "the SIGCOMM 2021 paper", "brouer": "companion studies", "marian": "companion studies",
           "kernel": "kernel documentation"}


def source_of(reference_dir=None) -> dict[str, str]:
    """Finding id -> who states it (SOURCES' names), from findings.csv."""
    findings = pd.read_csv(Path(reference_dir or project.reference_dir()) / "findings.csv")
    return {f.id: SOURCES.get(f.source, f.source) for f in findings.itertuples()}


def _count(verdicts: list[str]) -> str:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    kinds = [k for k in VERDICT_ORDER if k in counts] + sorted(set(counts) - set(VERDICT_ORDER))
    return ", ".join(f"{counts[k]} {k}" for k in kinds) or "none"


def _verdict_counts(metas: list[dict], sources: dict[str, str]) -> str:
    """The verdicts counted per source (each in SOURCES' order), extensions left out."""
    by_source: dict[str, list[str]] = {name: [] for name in dict.fromkeys(SOURCES.values())}
    extensions = 0
    for m in metas:
        for v in m.get("verdicts", []):
            if is_extension(v["id"]):  # judged beyond where the paper states it: not the paper's count
                extensions += 1
                continue
            by_source.setdefault(sources.get(v["id"], "other"), []).append(v["verdict"])
    text = "; ".join(f"{name} ({len(vs)} verdicts): {_count(vs)}" for name, vs in by_source.items() if vs) or "none"
    return text + (f" (and {extensions} not counted: extensions beyond the paper's claim, or the same "
                   "experiment judged again)" if extensions else "")


def _results_section(m: dict) -> dict:
    """What the Markdown template shows of one notebook's metadata."""
    extra = extra_columns(m["verdicts"])
    summary = m.get("summary") or []
    columns = list(dict.fromkeys(k for row in summary for k in row))
    return {**m, "quality": m.get("quality", {}),
            "verdict_header": ["finding", "paper says", "verdict", *extra],
            "verdict_rows": [[v["id"], v["paper says"], v["verdict"], *(v.get(c) for c in extra)]
                             for v in m["verdicts"]],
            # the evidence apart, one row per finding and accounting (the accountings' shared part once)
            "evidence_rows": [[v["id"], name or "–", text] for v in m["verdicts"]
                              for name, text in evidence(v["this run shows"])],
            "summary_columns": columns, "summary_rows": [[row.get(c) for c in columns] for row in summary]}


def results_markdown(figures_dir, figures_href: str = "../figures", reference_dir=None) -> str:
    """docs/results.md from figures_dir/*.meta.json: a pure function of those files.

    Per notebook (sorted by notebook file name): title, campaign, testbed, run quality, the verdict
    table, the summary table and links to its figures (figures_href/<stem>.svg, relative to docs/).
    Nothing but the data goes in (no generation time), so the same metadata gives the same text."""
    metas = sorted((json.loads(p.read_text()) for p in Path(figures_dir).glob("*.meta.json")),
                   key=lambda m: m["notebook"])
    by_finding: dict[str, list[str]] = {}
    for m in metas:
        for v in m.get("verdicts", []):
            both = (f" (raw: {v['raw']}; NIC-equivalent: {v['NIC-equivalent']})"
                    if v.get("raw") and v.get("NIC-equivalent") not in (None, v["raw"], "(no ledger: raw)") else "")
            by_finding.setdefault(v["id"], []).append(f"{Path(m['notebook']).stem[:2]}: {v['verdict']}{both}")
    return _templates().get_template("results.md.j2").render(
        href=figures_href, metas=[_results_section(m) for m in metas],
        counts=_verdict_counts(metas, source_of(reference_dir)),
        n_verdicts=sum(not is_extension(v["id"]) for m in metas for v in m.get("verdicts", [])),
        findings=[[f, "; ".join(by_finding[f])] for f in sorted(by_finding)])


def write_results(figures_dir, out) -> Path:
    """Write results_markdown(figures_dir) to `out` (docs/results.md)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(results_markdown(figures_dir))
    return out
