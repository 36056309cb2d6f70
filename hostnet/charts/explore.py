"""What notebooks/00-explore.ipynb draws of the points it compares (sections/explore.py reads them):
each point's CPU by category, stacked to 100 %."""
from __future__ import annotations

import altair as alt
import pandas as pd

from . import plots  # noqa: F401 (the hostnet theme and PNG renderer these charts are drawn in)
from .encodings import category_color, share_axis


def categories_chart(cats: pd.DataFrame, side: str, campaign: str) -> alt.Chart:
    """explore.categories' shares per point, the points in the table's order (natural: 200 before 1600)."""
    return alt.Chart(cats).mark_bar().encode(
        x=alt.X("point:N", title="point (config, swept parameters)", sort=list(dict.fromkeys(cats.point))),
        y=share_axis(f"{side} CPU (share of busy samples)"), color=category_color(),
        tooltip=["point", "category", alt.Tooltip("pct:Q", format=".1f")],
    ).properties(width=420, height=260, title=alt.Title(f"{side} CPU by category", subtitle=campaign))
