"""A section's chart module imported alone, in a fresh Python: it draws in the hostnet theme as PNG
without the notebook importing plots."""
import importlib
import subprocess
import sys

from conftest import REPO
from hostnet.charts import plots


def test_a_section_s_chart_module_draws_in_the_hostnet_theme_as_png_on_its_own():
    """00-explore imports no plots: its chart is a PNG output in the hostnet theme because
    charts.explore imports plots, as every section's chart module does."""
    code = "import altair as alt, hostnet.charts.explore; print(alt.theme.active, alt.renderers.active)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["hostnet", "hostnet-png"]
    for module in ("grid", "rx_buffer", "congestion", "hardware", "explore"):
        assert importlib.import_module(f"hostnet.charts.{module}").plots is plots, module
