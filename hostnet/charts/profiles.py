"""Charts of a profile a researcher brings (analysis/profiles.py): its flame graph (an icicle) and its
breakdown next to the paper's Fig. 3."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import altair as alt
import pandas as pd

from . import plots
from .flamegraph import flamegraph_html, icicle_chart, icicle_rects, stack_tree
from ..analysis import profile_files, profiles
from ..analysis.metrics import BREAKDOWN_ORDER


def flamegraph(profile: profile_files.Profile, cpus: Iterable[int], output: str) -> str:
    """The profile's stacks on these CPUs as a flame graph: output.html the interactive page `hostnet
    flamegraph RUN` writes (d3-flame-graph inlined: opens offline), output.svg/.png an icicle chart
    (vl-convert, offline). One implementation of each, shared with the stored runs' flame graphs."""
    if profile.stacks is None:
        raise ValueError(f"{profile.source} is a perf report: it keeps no whole stacks for a flame graph; "
                         "give perf script text or the perf.data")
    cpus = set(cpus)
    where = f"{Path(profile.source).name}: CPU {profiles.cpu_label(sorted(cpus))}"
    out = Path(output)
    if out.suffix in (".svg", ".png"):
        plots.save(icicle_chart(icicle_rects(profile.stacks.items(), cpus), where,
                                f"{profile.format}; frames narrower than 0.2 % left out"), out.with_suffix(""))
        return str(out)
    if out.suffix != ".html":
        raise ValueError(f"{output}: a flame graph is written as .html (interactive), .svg or .png")
    out.write_text(flamegraph_html(stack_tree(profile.stacks.items(), cpus, root=where), where,
                                   f"{profile.format}; above the CPUs the command, then its calls from the "
                                   "outermost frame to the leaf."))
    return str(out)


def next_to_paper_chart(table: pd.DataFrame, title: str) -> alt.Chart:
    """next_to_paper's table as bars per category: this profile's CPU sets and the paper's sides."""
    long = table.melt(id_vars="category", var_name="breakdown", value_name="pct").dropna()
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("category:N", sort=list(BREAKDOWN_ORDER), title=None),
        xOffset=alt.XOffset("breakdown:N", sort=list(table.columns[1:])),
        y=alt.Y("pct:Q", title="% of busy CPU samples"),
        color=alt.Color("breakdown:N", sort=list(table.columns[1:]), title=None,
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)),
        tooltip=["category", "breakdown", alt.Tooltip("pct:Q", format=".2f")],
    ).properties(width=620, height=260, title=alt.Title(title, subtitle=[
        "paper: Fig. 3(c)/(d), the artifact's numbers (its rows sum to ~95 %: unmapped symbols dropped); "
        "testbed, user and unclassified are hostnet's own categories"]))
