"""Notebooks 00 and 01 opened in JupyterLab (served on loopback) in headless Chromium that can reach
nothing else: every chart is drawn as committed (the notebook untrusted) and after Run All, with no
console error; the interactive renderer draws offline too; and a fetch off the machine fails at the
blocking proxy, so the checks above ran with the network cut."""
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest
from selenium.webdriver.common.by import By

from conftest import REPO, console_errors, drawn_share, fetch_is_blocked, free_port, ink_share, needs_chromium

pytestmark = needs_chromium

# Charts each notebook draws: as committed (its stored PNG outputs; 00: categories, icicle, a brought
# profile next to the paper) and after Run All (00's widgets add the selected campaign's categories
# chart; its flame-graph dropdown starts empty).
CHARTS = {"00-explore.ipynb": {"stored": 3, "run": 4}, "01-single-flow.ipynb": {"stored": 2, "run": 2},
          # concatenated charts whose stored copies once showed a view with no marks (issue 44)
          "11-congestion-control.ipynb": {"stored": 1, "run": 1}, "15-beyond-2021.ipynb": {"stored": 2, "run": 2}}
TOKEN = "hostnet-test"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook shown (the server restores earlier tabs)
IMAGES = (f"return Array.from(document.querySelectorAll('{PANEL} .jp-OutputArea-output img'))"
          ".map(i => [i.complete, i.naturalWidth])")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 over a copy of the two notebooks (autosave after Run All must not
    touch the committed ones), the repository's data, and Jupyter state kept out of $HOME (so no
    notebook is trusted by an earlier signature)."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    (root / "notebooks").mkdir(parents=True)
    (root / "figures").mkdir()
    (root / "data").symlink_to(REPO / "data")
    (root / "tests").symlink_to(REPO / "tests")  # 00's brought-profile example is a test fixture
    for name in CHARTS:
        shutil.copy(REPO / "notebooks" / name, root / "notebooks" / name)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "IPYTHONDIR": str(tmp / "ipython"),
           **{var: str(tmp / var.lower()) for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
                                                      "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR")}}
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
         f"--IdentityProvider.token={TOKEN}", "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp / "server.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not answer within 60 s"
                time.sleep(0.5)
        yield url, root
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def wait_for(driver, script: str, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := driver.execute_script(script)):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)
    return value


def open_notebook(driver, url: str, path: str, n_cells: int) -> None:
    driver.get(f"{url}/lab/tree/{path}?reset&token={TOKEN}")  # reset: only this notebook open
    wait_for(driver, f"return document.querySelectorAll('{PANEL} .jp-Cell').length === {n_cells}"
             f" && document.querySelector('{PANEL} .jp-Notebook-ExecutionIndicator')", 90, f"{path} to open")
    wait_for(driver, f"return document.querySelector('{PANEL} .jp-Notebook-ExecutionIndicator')"
             ".getAttribute('data-status') === 'idle'", 90, "the kernel")


def run_all(driver, n_code_cells: int) -> None:
    driver.find_element(By.XPATH, "//div[contains(@class, 'lm-MenuBar-itemLabel') and text()='Run']").click()
    driver.find_element(By.XPATH, "//li[contains(@class, 'lm-Menu-item')]"
                                  "[.//div[contains(@class, 'lm-Menu-itemLabel') and text()='Run All Cells']]").click()
    # every code cell numbered (none pending "[*]") and the kernel idle again
    wait_for(driver, f"const p = Array.from(document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt'))"
             ".map(e => e.textContent.trim());"
             f"return p.length === {n_code_cells} && p.every(t => /^\\[\\d+\\]:$/.test(t)) && "
             f"document.querySelector('{PANEL} .jp-Notebook-ExecutionIndicator')"
             ".getAttribute('data-status') === 'idle'",
             300, "Run All to finish")


def drawn_charts(driver, specs: list[dict] | None = None) -> list[float]:
    """Each output image's drawn share, from a screenshot of the image as shown (scrolled into view).
    With the specs the images were drawn from (in order): each image is shown at its own CSS width
    (not shrunk to fit, so its text is at its size), and every plot area in it shows ink (marks),
    as vl-convert lays the spec out (hostnet.charts.drawn.plot_areas)."""
    from hostnet.charts import drawn
    wait_for(driver, IMAGES + ".every(([done, width]) => done && width > 0)", 30, "images to load")
    shares = []
    images = driver.find_elements(By.CSS_SELECTOR, f"{PANEL} .jp-OutputArea-output img")
    for i, img in enumerate(images):
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", img)
        time.sleep(0.3)
        shot = img.screenshot_as_png
        shares.append(drawn_share(shot))
        if specs is not None:
            spec, width = specs[i]
            assert driver.execute_script("return arguments[0].clientWidth", img) == width
            inks = [ink_share(shot, box, width) for box in drawn.plot_areas(spec)]
            assert inks and all(ink > 0.01 for ink in inks), (i, inks)
    return shares


def stored_specs(nb) -> list[tuple[dict, int]]:
    """The spec and CSS width of each stored chart output, in order."""
    from hostnet.charts import plots
    return [(plots.stored_spec(o["metadata"]), o["metadata"]["image/png"]["width"])
            for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]


def stored_chart_outputs(nb) -> tuple[int, list[str]]:
    """PNG outputs, and outputs that are altair HTML (scripts that load vega: blank when untrusted)."""
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    png = sum("image/png" in o.get("data", {}) for o in outputs)
    html = [o["data"]["text/html"] for o in outputs if "vega" in o.get("data", {}).get("text/html", "")]
    return png, html


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_is_drawn_offline_as_committed_and_after_run_all(name, lab, offline_chromium):
    url, root = lab
    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    png, html = stored_chart_outputs(nb)
    assert html == [], f"{name} stores charts as altair HTML (blank without its CDN scripts)"
    assert png == CHARTS[name]["stored"]
    driver = offline_chromium("1400,1800")
    open_notebook(driver, url, f"notebooks/{name}", len(nb.cells))
    assert f"Notebook notebooks/{name} is not trusted" in (root.parent / "server.log").read_text()
    stored = drawn_charts(driver, stored_specs(nb))
    assert len(stored) == CHARTS[name]["stored"] and all(s > 0.05 for s in stored), stored
    assert console_errors(driver) == []
    run_all(driver, sum(c.cell_type == "code" for c in nb.cells))
    after = drawn_charts(driver, stored_specs(nb) if len(stored_specs(nb)) == CHARTS[name]["run"] else None)
    assert len(after) == CHARTS[name]["run"] and all(s > 0.05 for s in after), after
    assert console_errors(driver) == []
    assert fetch_is_blocked(driver)


def test_the_interactive_renderer_draws_offline(lab, offline_chromium):
    """plots.interactive(): altair's HTML with the vega bundle inlined runs in a live session."""
    url, root = lab
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import altair as alt\nimport pandas as pd\nfrom hostnet.charts import plots\nplots.interactive()\n"
        "alt.Chart(pd.DataFrame({'x': list('abc'), 'y': [3, 1, 2]})).mark_bar().encode(x='x', y='y')")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, root / "notebooks" / "interactive.ipynb")
    driver = offline_chromium("1400,1200")
    open_notebook(driver, url, "notebooks/interactive.ipynb", 1)
    run_all(driver, 1)
    canvas = wait_for(driver, f"return document.querySelector('{PANEL} .vega-embed canvas, "
                              f"{PANEL} .vega-embed svg.marks')", 30, "vega-embed to draw")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    assert drawn_share(canvas.screenshot_as_png) > 0.05
    assert console_errors(driver) == []
    assert fetch_is_blocked(driver)
