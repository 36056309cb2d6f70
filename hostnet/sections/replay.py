"""What parameters mean in replay: a parameter that picks recorded points selects them (a value
never recorded is an error naming what was), and one only a live run uses is refused, so that a
replayed notebook or a replay sweep never records a parameter as if it had shaped the result.

A section declares both in its registry entry (hostnet.sections.Section.selects / run_only); the
notebook runtime (hostnet.notebook) applies them to what papermill injected, and `hostnet sweep
--mode replay` checks a whole grid with the same functions before any kernel starts.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable

import pandas as pd

from .. import store
from . import Section, Select


class ReplayParameterError(ValueError):
    """A parameter passed in replay that would not mean what it says."""


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _converter(select: Select):
    """The function from a parameter's value to the value its runs record; it raises ValueError
    for a value no run could have recorded (4.5 KB, a size above the tool's largest)."""
    if not select.convert:
        return lambda v: v
    if select.convert == "kb":
        return _kb
    module, name = select.convert.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _kb(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ValueError(f"{value!r} is not a whole number of KB")
    return int(value) * 1024


def _same(a, b) -> bool:
    """Recorded and asked-for values compare as numbers when both are (loss 0 is recorded as 0.0)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def run_only_given(section: Section, given: Iterable[str]) -> list[str]:
    """The parameters of `given` that only a live run uses (in the notebook's declared order)."""
    given = set(given)
    return [p for p in section.run_only if p in given]


def refuse_run_only(section: Section, given: Iterable[str]) -> None:
    if names := run_only_given(section, given):
        raise ReplayParameterError(
            f"{', '.join(names)} only shape{'s' if len(names) == 1 else ''} a live run: a replay reads "
            f"what was recorded, so {'it' if len(names) == 1 else 'they'} would change nothing; drop "
            f"{'it' if len(names) == 1 else 'them'}, or run live (mode \"run\")")


def recorded_values(manifests: list[dict], key: str) -> list:
    """The distinct values of point[key] over a campaign's manifests, sorted."""
    values = []
    for m in manifests:
        point = m.get("point") or {}
        if key in point and not any(_same(point[key], v) for v in values):
            values.append(point[key])
    return sorted(values, key=lambda v: (isinstance(v, str), v))


def selection(section: Section, asked: dict, manifests_of, campaign: str | None = None,
              strict: set | None = None) -> dict[str, tuple[Select, list]]:
    """{param: (select, recorded values to keep)} for every selecting parameter in `asked` (of the
    campaign parameter `campaign` only, when named). manifests_of(campaign parameter) -> that
    campaign's manifests. A value of a `strict` parameter (default: all of them; the ones a person
    passed) that was not recorded is a ReplayParameterError naming the recorded values; a value of
    another one (a notebook's default: dctcp where the host had none) is left out, unless none of
    its values was recorded while the campaign records others (one with no such runs at all, 09's
    capability check here, selects nothing)."""
    chosen = {}
    for sel in section.selects:
        if sel.param not in asked or (campaign is not None and sel.campaign != campaign):
            continue
        recorded = recorded_values(manifests_of(sel.campaign), sel.key)
        lenient = strict is not None and sel.param not in strict
        if lenient and not recorded:  # a campaign with no such runs (09's check on this testbed)
            continue
        convert = _converter(sel)
        keep_values, missing = [], []
        for v in _as_list(asked[sel.param]):
            try:
                value = convert(v)
            except (ValueError, TypeError):
                value = _NOT_RECORDABLE
            found = [r for r in recorded if _same(value, r)]
            keep_values += found
            missing += [] if found else [v]
        if missing and (not lenient or not keep_values):
            shown = ", ".join(map(str, recorded)) or "none"
            raise ReplayParameterError(
                f"{sel.param} {', '.join(map(repr, missing))} is not recorded in the replayed campaign "
                f"(its {sel.key} values: {shown}); choose among those, or run live (mode \"run\")")
        chosen[sel.param] = (sel, keep_values)
    return chosen


_NOT_RECORDABLE = object()


def check(section: Section, given: dict, manifests_of) -> dict[str, tuple[Select, list]]:
    """Everything a replay refuses of `given`, run-only parameters first; the selection otherwise."""
    refuse_run_only(section, given)
    return selection(section, given, manifests_of)


def keep(manifests: list[dict], chosen: dict[str, tuple[Select, list]], campaign: str = "campaign") -> set:
    """The run ids a selection keeps: a run whose point has a selected key keeps only the values
    asked for; a run without that key (another experiment of the campaign) is kept."""
    kept = set()
    for m in manifests:
        point = m.get("point") or {}
        if all(sel.key not in point or any(_same(point[sel.key], v) for v in values)
               for sel, values in chosen.values() if sel.campaign == campaign):
            kept.add(m.get("run_id"))
    return kept


def apply(frames: tuple, manifests: list[dict], chosen: dict, campaign: str = "campaign") -> tuple:
    """Each frame with a run_id column cut to the runs kept, then the manifests cut the same way
    (a store.Manifests keeps its count of unreadable runs)."""
    if not any(sel.campaign == campaign for sel, _ in chosen.values()):
        return (*frames, manifests)
    kept = keep(manifests, chosen, campaign)
    cut = [f[f.run_id.isin(kept)] if isinstance(f, pd.DataFrame) and "run_id" in f else f for f in frames]
    cut_manifests = [m for m in manifests if m.get("run_id") in kept]
    if isinstance(manifests, store.Manifests):
        cut_manifests = store.Manifests(cut_manifests, unreadable=manifests.unreadable)
    return (*cut, cut_manifests)
