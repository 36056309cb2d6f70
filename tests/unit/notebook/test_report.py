"""hostnet.notebook.report: the findings summary, figures/index.html over the committed figures, and
docs/results.md, generated from figures/*.meta.json by report.results_markdown, never edited by hand.
(The page opened in a real headless Chromium: tests/notebooks/test_report_browser.py.)"""
import json
import re
import shutil

import pandas as pd
import pytest

from conftest import REPO
from hostnet.notebook import report
from hostnet.analysis import verdicts

FIGURES = REPO / "figures"
DOC = REPO / "docs" / "results.md"


def _meta(nb, verdicts):
    return {"notebook": nb, "verdicts": [{"id": i, "verdict": v} for i, v in verdicts]}


def test_finding_summary_prefers_notebooks_that_tested_the_finding():
    findings = pd.read_csv(REPO / "data" / "reference" / "findings.csv")
    metas = [_meta("01-single-flow.ipynb", [("F02", "reproduced"), ("F07", "not testable here")]),
             _meta("02-rx-buffer.ipynb", [("F07", "inconclusive"), ("F08", "not testable here")]),
             _meta("05-x.ipynb", [("F02", "not reproduced")])]
    s = finding_summary = report.finding_summary(metas, findings).set_index("id")
    assert list(finding_summary.index) == list(findings.id) and len(findings) == 33
    assert s.loc["F07", "overall"] == "inconclusive"
    assert s.loc["F08", "overall"] == "not testable here"
    assert s.loc["F02", "overall"] == "not reproduced / reproduced"
    assert s.loc["F23", "overall"] == "not covered"
    assert s.loc["F07", "by notebook"] == [("01-single-flow.ipynb", "not testable here"),
                                            ("02-rx-buffer.ipynb", "inconclusive")]


def test_report_has_contents_findings_and_every_figure(built_report):
    html = built_report.read_text()
    metas = [json.loads(p.read_text()) for p in built_report.parent.glob("*.meta.json")]
    assert metas
    for m in metas:
        stem = m["notebook"].removesuffix(".ipynb")
        assert f"href='#{stem}'" in html and f"id='{stem}'" in html
        for fig in m["figures"]:
            assert f"src='{fig}.svg'" in html
    assert "id='findings'" in html and html.count("<tr><td>F") >= 23


def _metas():
    return [json.loads(p.read_text()) for p in sorted(FIGURES.glob("*.meta.json"))]


def _sections(text: str) -> dict[str, str]:
    """Each notebook's section (from its '## title' to the next heading), keyed by title."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.split("\n", 1)[0]: p for p in parts}


def test_one_section_per_notebook_with_every_finding():
    metas = _metas()
    assert metas
    text = report.results_markdown(FIGURES)
    sections = _sections(text)
    for m in metas:
        body = sections[report.md_cell(m["title"])]
        assert f"`notebooks/{m['notebook']}`" in body and f"`data/runs/{m['campaign']}`" in body
        assert report.md_cell(m["testbed"]) in body
        rows = [line for line in body.splitlines() if line.startswith("| F")]
        extra = report.extra_columns(m["verdicts"])
        for v in m["verdicts"]:  # the verdict, then each accounting's and the unsteady runs' columns
            tail = " | ".join([report.md_cell(v["verdict"]), *(report.md_cell(v.get(c)) for c in extra)]) + " |"
            assert any(line.startswith(f"| {v['id']} |") and line.endswith(f"| {tail}") for line in rows), \
                (m["notebook"], v["id"])
        for stem in m["figures"]:
            assert f"(../figures/{stem}.svg)" in body
    assert len(sections) == len(metas) + 1  # plus the findings overview
    n = sum(not verdicts.is_extension(v["id"]) for m in metas for v in m["verdicts"])  # extensions apart
    assert f"{len(metas)} notebooks, {n} verdicts, counted by who states the finding: " in text


def test_a_pipe_in_a_cell_is_escaped(tmp_path):
    meta = {"notebook": "99-x.ipynb", "title": "X", "campaign": "c", "testbed": "t",
            "quality": {"runs": 3, "ok": 2, "failed": 1, "contaminated": 1},
            "figures": ["x-tpc"], "summary": [{"size": "4 | 16 KB", "tpc_gbps": 1.234}],
            "verdicts": [{"id": "F99", "paper says": "a | b", "this run shows": "c\nd | e", "verdict": "inconclusive"}]}
    (tmp_path / "99-x.meta.json").write_text(json.dumps(meta))
    text = report.results_markdown(tmp_path)
    assert "| F99 | a \\| b | inconclusive |" in text  # the verdict's short line
    assert "| F99 | – | c d \\| e |" in text  # its evidence, in the table below it
    assert "| 4 \\| 16 KB | 1.23 |" in text
    assert "Runs: 3, ok 2, failed 1, flagged for foreign load 1" in text
    # each row still has as many unescaped separators as its header (three columns)
    for start in ("| F99 | a", "| F99 | –"):
        row = next(line for line in text.splitlines() if line.startswith(start))
        assert len(re.findall(r"(?<!\\)\|", row)) == 4


def test_the_evidence_of_two_accountings_is_folded_each_once_and_what_they_share_once(tmp_path):
    """F02 printed the same 6-line note on the aRFS step under both accountings."""
    shows = verdicts.both_texts("no-opts 6.9 < tsogro 10.8 (means; ≈: the CI contains 0); the aRFS step is not judged",
                                "no-opts 9.7 < tsogro 16.2 (means; ≈: the CI contains 0); the aRFS step is not judged")
    assert shows == ("raw: no-opts 6.9 < tsogro 10.8 (means; ≈: the CI contains 0) | NIC-equivalent: no-opts 9.7 < "
                     "tsogro 16.2 (means; ≈: the CI contains 0) | both: the aRFS step is not judged")
    meta = {"notebook": "99-x.ipynb", "title": "X", "campaign": "c", "testbed": "t", "figures": [],
            "quality": {"runs": 3, "ok": 3, "failed": 0, "contaminated": 0},
            "verdicts": [{"id": "F02", "paper says": "p", "this run shows": shows, "verdict": "reproduced"}]}
    (tmp_path / "99-x.meta.json").write_text(json.dumps(meta))
    text = report.results_markdown(tmp_path)
    assert text.count("the aRFS step is not judged") == 1 and "| F02 | both | the aRFS step is not judged |" in text
    page = report.build(tmp_path).read_text()
    assert "<details><summary>raw · NIC-equivalent · both</summary>" in page
    assert page.count("the aRFS step is not judged") == 1


def test_committed_doc_is_the_generated_one():
    """docs/results.md cannot drift from the data: regenerate it with `make figures`, or with
    python -c "from hostnet.notebook import report; report.write_results('figures', 'docs/results.md')"."""
    assert DOC.read_text() == report.results_markdown(FIGURES)


def test_deterministic_and_independent_of_file_order(tmp_path):
    first = report.results_markdown(FIGURES)
    assert first == report.results_markdown(FIGURES)
    for p in reversed(sorted(FIGURES.glob("*.meta.json"))):  # written in another order: same text
        shutil.copy(p, tmp_path / p.name)
    assert report.results_markdown(tmp_path) == first


def test_no_notebooks_yet(tmp_path):
    text = report.results_markdown(tmp_path)
    assert text.startswith("# Results on the embedded testbed")
    assert "0 notebooks, 0 verdicts, counted by who states the finding: none." in text


def test_a_rebuild_is_byte_for_byte_the_same_and_dated_by_the_data(tmp_path, monkeypatch):
    figs = tmp_path / "figures"
    shutil.copytree(REPO / "figures", figs, ignore=shutil.ignore_patterns("index.html"))
    first = report.build(figs).read_text()
    monkeypatch.setattr("time.time", lambda: 4102444800.0)  # 2100-01-01: a clock read would show
    assert report.build(figs).read_text() == first
    assert report.recorded([{"campaign": "20261124-030018-rx-buffer-embedded"},
                            {"campaign": "20261123-numa-embedded"}]) == "Data recorded 2026-11-23 to 2026-11-24. "
    assert report.recorded([{"campaign": "my-campaign"}]) == ""
    days = sorted({json.loads(p.read_text())["campaign"][:8] for p in figs.glob("*.meta.json")})
    assert f"Data recorded {days[0][:4]}-{days[0][4:6]}-{days[0][6:]}" in first


def test_extensions_are_shown_and_counted_apart_and_both_accountings_named(tmp_path):
    base = {"title": "X", "campaign": "c", "testbed": "t", "quality": {"runs": 3, "ok": 3, "failed": 0,
                                                                       "contaminated": 0}, "figures": [], "summary": []}
    rows = [{"id": "F04", "paper says": "a", "this run shows": "b", "verdict": "depends on the testbed",
             "raw": "not reproduced", "NIC-equivalent": "reproduced", "sensitivity": "", "unsteady runs": "1 of 3",
             "steady runs only": ""},
            {"id": "F05" + verdicts.EXTENSION, "paper says": "a", "this run shows": "b", "verdict": "reproduced"}]
    (tmp_path / "99-x.meta.json").write_text(json.dumps({**base, "notebook": "99-x.ipynb", "verdicts": rows}))
    text = report.results_markdown(tmp_path)
    assert ("1 notebooks, 1 verdicts, counted by who states the finding: the SIGCOMM 2021 paper (1 verdicts): "
            "1 depends on the testbed (and 1 not counted: extensions beyond the paper's claim, or the same "
            "experiment judged again)") in text
    assert "| F04 | 99: depends on the testbed (raw: not reproduced; NIC-equivalent: reproduced) |" in text
    assert "| verdict | raw | NIC-equivalent | sensitivity | unsteady runs | steady runs only |" in text


def test_results_markdown_escapes_manifest_strings_that_markdown_or_html_would_run(tmp_path):
    """#45: md_cell escaped only | and \\: a <script> in a manifest's rx_steering reached docs/results.md
    verbatim and ran where the Markdown was rendered to HTML (nbconvert's mistune); a
    [x](javascript:...) link survived too."""
    mistune = pytest.importorskip("mistune", reason="nbconvert's Markdown renderer (the dev venv has it)")
    figures = tmp_path / "figures"
    figures.mkdir()
    meta = json.loads(sorted(FIGURES.glob("*.meta.json"))[0].read_text())
    meta["testbed"] = "embedded (receive path <script>alert(1)</script>) [x](javascript:alert(2)) a|b"
    meta["title"] = "<img src=x onerror=alert(3)>"
    (figures / "01.meta.json").write_text(json.dumps(meta))
    text = report.results_markdown(figures)
    html = mistune.html(text)
    assert "<script" not in html and "<img" not in html and 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as the text it is
    assert "[x](javascript:alert(2))" in html  # as text, not a link
    assert report.md_cell("a|b [c] <d> & e\\f") == "a\\|b \\[c\\] &lt;d&gt; &amp; e\\\\f"


def test_a_rehearsals_verdicts_count_as_no_test_of_a_finding():
    """A notebook run on the NIC rehearsal says "rehearsal" for every finding: it neither dilutes
    another notebook's verdict nor counts as a test, and a finding only it touched reads "rehearsal"."""
    findings = pd.read_csv(REPO / "data" / "reference" / "findings.csv")
    metas = [_meta("01-single-flow.ipynb", [("F02", "rehearsal"), ("F08", "rehearsal")]),
             _meta("02-rx-buffer.ipynb", [("F02", "reproduced"), ("F08", "not testable here")])]
    s = report.finding_summary(metas, findings).set_index("id")
    assert s.loc["F02", "overall"] == "reproduced"
    assert s.loc["F08", "overall"] == "rehearsal"
    assert report.verdict_class("rehearsal") in (REPO / "hostnet" / "templates" / "report.css").read_text()
