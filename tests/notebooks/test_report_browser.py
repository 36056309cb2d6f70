"""The HTML hostnet writes, opened in a real headless Chromium that reaches nothing off this machine:
figures/index.html (every figure loads, no console error, every anchor resolves; and the check sees a
missing figure) and a run's flame-graph page (drawn, searchable, zoomable)."""
import json
import time

from selenium.webdriver.common.by import By

from conftest import REPO, console_errors, drawn_share, fetch_is_blocked, needs_chromium

pytestmark = needs_chromium


def test_report_renders_in_headless_chromium(built_report, tmp_path, offline_chromium):
    driver = offline_chromium()
    driver.get(built_report.as_uri())  # a file: URL, so nothing is served or fetched
    driver.execute_script("return document.readyState")  # get() returns after the load event
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    shot = tmp_path / "report.png"
    driver.save_screenshot(str(shot))
    errors = console_errors(driver)
    anchors_ok = driver.execute_script(
        "return Array.from(document.querySelectorAll('a[href^=\"#\"]'))"
        ".every(a => document.getElementById(a.getAttribute('href').slice(1)) !== null)")
    expected = [f"{s}.svg" for p in sorted(built_report.parent.glob("*.meta.json"))
                for s in json.loads(p.read_text())["figures"]]
    assert sorted(src for src, _, _ in images) == sorted(expected)
    assert all(complete and width > 0 for _, complete, width in images), images
    assert errors == []
    assert anchors_ok
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert fetch_is_blocked(driver)


def test_browser_check_sees_a_missing_figure(built_report, offline_chromium):
    """The checks above can fail: a deleted SVG shows as naturalWidth 0 and a console error."""
    victim = next(built_report.parent.glob("*.svg"))
    victim.unlink()
    driver = offline_chromium()
    driver.get(built_report.as_uri())
    broken = driver.execute_script(
        "return Array.from(document.images).filter(i => i.naturalWidth === 0).map(i => i.getAttribute('src'))")
    errors = console_errors(driver)
    assert broken == [victim.name]
    assert errors and victim.name in errors[0]["message"]


def test_flamegraph_page_is_drawn_searched_and_zoomed_offline(tmp_path, offline_chromium):
    from hostnet import cli
    from hostnet.sections import explore
    run = explore.first_run_with_stacks(REPO / "data" / "runs", "20261123-rx-buffer-embedded")
    page = tmp_path / "fg.html"
    assert cli.main(["flamegraph", str(run), "-o", str(page)]) == 0
    driver = offline_chromium("1400,1000")
    driver.get(page.as_uri())
    time.sleep(1)  # frames grow to their width in a 300 ms transition
    chart = driver.find_element(By.ID, "chart")
    frames = driver.execute_script("return document.querySelectorAll('#chart svg g[name]').length")
    assert frames > 100 and drawn_share(chart.screenshot_as_png) > 0.2
    driver.find_element(By.ID, "term").send_keys("copy_to_iter|skb_copy")
    driver.find_element(By.CSS_SELECTOR, "#search button[type=submit]").click()
    details = driver.find_element(By.ID, "details").text
    assert details.startswith("search: ") and "total samples" in details
    highlighted = driver.execute_script(
        "return Array.from(document.querySelectorAll('#chart svg rect'))"
        ".filter(r => getComputedStyle(r).fill === 'rgb(230, 0, 230)').length")
    assert highlighted > 0
    root_width = driver.execute_script("return document.querySelector('#chart svg rect').getAttribute('width')")
    leaf = driver.find_element(By.XPATH, "//*[local-name()='g'][@name='tcp_recvmsg']")
    leaf.click()  # zoom: the clicked frame takes the whole width
    time.sleep(1)  # the zoom transition (300 ms)
    zoomed = driver.execute_script("return arguments[0].querySelector('rect').getAttribute('width')", leaf)
    assert float(zoomed) > 0.95 * float(root_width)
    assert console_errors(driver) == []
    assert fetch_is_blocked(driver)
