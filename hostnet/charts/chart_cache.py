"""Rendered charts kept on disk by what drew them, so a replay draws only the charts that changed.

The key is the Vega-Lite spec as altair wrote it (its data inlined), the output format and its
options, and the versions of everything that draws (altair, vl-convert, Pillow): the same key
gives the same bytes, so a cached figure is byte for byte the one a fresh render writes. A spec
that changes in any way, or a renderer upgraded, is drawn again. Concurrent writers (notebooks
replayed side by side) each write a temporary file and rename it into place.

$HOSTNET_CHART_CACHE names the directory, or "off"; default the user's cache directory as
platformdirs places it (~/.cache/hostnet/charts on Linux, $XDG_CACHE_HOME honoured). The least
recently used entries go when there are more than MAX_ENTRIES.
A small content-addressed directory rather than a cache library (joblib.Memory pickles a function's
result under a hash of its arguments, diskcache keeps a SQLite index): here one get and one put of
bytes, with a key hostnet has to build anyway, which any process can read while another writes.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import altair
import PIL
import platformdirs
import vl_convert

ENV = "HOSTNET_CHART_CACHE"
MAX_ENTRIES = 4000


def directory() -> Path | None:
    where = os.environ.get(ENV, "")
    if where == "off":
        return None
    if where:
        return Path(where)
    return Path(platformdirs.user_cache_dir("hostnet")) / "charts"


def _renderers() -> dict[str, str]:
    return {"altair": altair.__version__, "vl-convert": vl_convert.__version__, "pillow": PIL.__version__}


def key(kind: str, spec: dict, options: dict) -> str:
    """The spec in altair's own key order (json.dumps keeps it): order is part of what is drawn."""
    text = json.dumps({"kind": kind, "options": options, "renderers": _renderers(), "spec": spec},
                      separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def rendered(kind: str, spec: dict, render: Callable[[], bytes], **options) -> bytes:
    """render()'s bytes for this spec, from the cache when it drew them before."""
    where = directory()
    if where is None:
        return render()
    k = key(kind, spec, options)
    path = where / k[:2] / f"{k}.{kind}"
    try:
        data = path.read_bytes()
        os.utime(path)  # recently used: pruned last
        return data
    except OSError:
        pass
    data = render()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        if k.startswith("00"):  # now and then (1 in 256 writes), not on every one
            prune(where)
    except OSError:  # a read-only or full cache costs the render, nothing else
        pass
    return data


def prune(where: Path, keep: int = MAX_ENTRIES) -> int:
    """Remove the least recently used entries beyond `keep`; returns how many went."""
    entries = sorted(where.glob("??/*.*"), key=lambda p: p.stat().st_mtime, reverse=True)
    gone = 0
    for p in entries[keep:]:
        try:
            p.unlink()
            gone += 1
        except OSError:
            pass
    return gone
