"""figures/index.html: every notebook's figures, verdict table and testbed, from *.meta.json."""
from __future__ import annotations

import html
import json
import time
from pathlib import Path

import pandas as pd

from . import __version__

_CSS = """body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1100px;margin:2em auto;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}.figs img{max-width:520px;margin:6px;border:1px solid #eee}
.reproduced{color:#1a7f37;font-weight:bold}.not-reproduced{color:#b42318;font-weight:bold}
.not-testable-here{color:#777}.inconclusive{color:#9a6700;font-weight:bold}.meta{color:#555;font-size:.9em}"""


def _verdict_class(v: str) -> str:
    return v.replace(" ", "-")


def build(figures_dir) -> Path:
    figures_dir = Path(figures_dir)
    metas = [json.loads(p.read_text()) for p in sorted(figures_dir.glob("*.meta.json"))]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>hostnet report</title>"
             f"<style>{_CSS}</style></head><body><h1>hostnet: where the host spends its CPU moving data over TCP</h1>"
             f"<p class='meta'>Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by hostnet "
             f"{__version__}. Each section comes from one notebook; verdicts compare this testbed's data with "
             f"the paper's findings.</p>"]
    for m in metas:
        q = m["quality"]
        parts.append(f"<h2>{html.escape(m['title'])}</h2><p class='meta'>Notebook <code>{html.escape(m['notebook'])}"
                     f"</code>; campaign <code>{html.escape(m['campaign'])}</code>; {html.escape(m['testbed'])}; "
                     f"{q['ok']}/{q['runs']} runs ok, {q['contaminated']} flagged for foreign load.</p>")
        parts.append("<div class='figs'>" + "".join(
            f"<img src='{html.escape(stem)}.svg' alt='{html.escape(stem)}'>" for stem in m["figures"]) + "</div>")
        if m.get("summary"):
            parts.append(pd.DataFrame(m["summary"]).to_html(index=False, float_format=lambda x: f"{x:.2f}",
                                                            na_rep="–", classes="summary"))
        rows = "".join(
            f"<tr><td>{html.escape(v['id'])}</td><td>{html.escape(v['paper says'])}</td>"
            f"<td>{html.escape(v['this run shows'])}</td>"
            f"<td class='{_verdict_class(v['verdict'])}'>{html.escape(v['verdict'])}</td></tr>"
            for v in m["verdicts"])
        parts.append("<table><tr><th>finding</th><th>paper says</th><th>this run shows</th><th>verdict</th></tr>"
                     f"{rows}</table>")
    if not metas:
        parts.append("<p>No notebook has written its figures yet: run <code>make figures</code>.</p>")
    parts.append("</body></html>")
    out = figures_dir / "index.html"
    out.write_text("\n".join(parts))
    return out
