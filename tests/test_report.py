"""figures/index.html: the findings summary, and the page opened in a real headless Chromium."""
import json
import shutil

import pandas as pd
import pytest

from conftest import REPO
from hostnet import report

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1200,2400"]


def _meta(nb, verdicts):
    return {"notebook": nb, "verdicts": [{"id": i, "verdict": v} for i, v in verdicts]}


def test_finding_summary_prefers_notebooks_that_tested_the_finding():
    findings = pd.read_csv(REPO / "data" / "reference" / "findings.csv")
    metas = [_meta("01-single-flow.ipynb", [("F02", "reproduced"), ("F07", "not testable here")]),
             _meta("02-rx-buffer.ipynb", [("F07", "inconclusive"), ("F08", "not testable here")]),
             _meta("05-x.ipynb", [("F02", "not reproduced")])]
    s = finding_summary = report.finding_summary(metas, findings).set_index("id")
    assert list(finding_summary.index) == [f"F{i:02d}" for i in range(1, 24)]
    assert s.loc["F07", "overall"] == "inconclusive"
    assert s.loc["F08", "overall"] == "not testable here"
    assert s.loc["F02", "overall"] == "not reproduced / reproduced"
    assert s.loc["F23", "overall"] == "not covered"
    assert s.loc["F07", "by notebook"] == [("01-single-flow.ipynb", "not testable here"),
                                            ("02-rx-buffer.ipynb", "inconclusive")]


@pytest.fixture
def built_report(tmp_path):
    """The report over the committed figures and their metadata (as `make figures` leaves them)."""
    figs = tmp_path / "figures"
    shutil.copytree(REPO / "figures", figs, ignore=shutil.ignore_patterns("index.html"))
    return report.build(figs)


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


def _driver(profile_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in BROWSER_FLAGS + [f"--user-data-dir={profile_dir}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)  # both paths given: nothing fetched


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                    reason="Debian packages chromium and chromium-driver are not installed (make install adds them)")
def test_report_renders_in_headless_chromium(built_report, tmp_path, monkeypatch):
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium-manager must never try the network
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    driver = _driver(profile)
    try:
        driver.get(built_report.as_uri())  # a file: URL, so nothing is served or fetched
        driver.execute_script("return document.readyState")  # get() returns after the load event
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        anchors_ok = driver.execute_script(
            "return Array.from(document.querySelectorAll('a[href^=\"#\"]'))"
            ".every(a => document.getElementById(a.getAttribute('href').slice(1)) !== null)")
    finally:
        driver.quit()
    expected = [f"{s}.svg" for p in sorted(built_report.parent.glob("*.meta.json"))
                for s in json.loads(p.read_text())["figures"]]
    assert sorted(src for src, _, _ in images) == sorted(expected)
    assert all(complete and width > 0 for _, complete, width in images), images
    assert errors == []
    assert anchors_ok
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="chromium and chromium-driver are not installed")
def test_browser_check_sees_a_missing_figure(built_report, tmp_path, monkeypatch):
    """The checks above can fail: a deleted SVG shows as naturalWidth 0 and a console error."""
    monkeypatch.setenv("SE_OFFLINE", "true")
    victim = next(built_report.parent.glob("*.svg"))
    victim.unlink()
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    driver = _driver(profile)
    try:
        driver.get(built_report.as_uri())
        broken = driver.execute_script(
            "return Array.from(document.images).filter(i => i.naturalWidth === 0).map(i => i.getAttribute('src'))")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
    assert broken == [victim.name]
    assert errors and victim.name in errors[0]["message"]
