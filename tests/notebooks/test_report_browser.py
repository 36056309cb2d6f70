"""figures/index.html opened in a real headless Chromium: every figure loads, no console error,
every anchor resolves; and the check sees a missing figure."""
import json
import shutil

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1200,2400"]


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
