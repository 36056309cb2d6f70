"""Where a project's data, notebooks and figures are, and the data shipped inside the package.

The project root is $HOSTNET_ROOT when set (`hostnet --root DIR` sets it), else the nearest
directory at or above the working directory that holds data/runs/ (a checkout: its root, from
anywhere inside it, notebooks/ included), else the working directory. Never the package's own
location: an installed hostnet lives in site-packages, away from any data. Relative path
parameters (a notebook's runs_dir, figures_dir) are relative to that root.

The paper's reference numbers (reference/), the taxonomies and the C sources are package data,
read through importlib.resources, so a wheel has them as a checkout does.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

ENV = "HOSTNET_ROOT"
MARKER = Path("data") / "runs"


def root(start: str | os.PathLike | None = None) -> Path:
    """The project root (see the module docstring); `start` stands in for the working directory."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser().resolve()
    here = Path(start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / MARKER).is_dir()), here)


def found(start: str | os.PathLike | None = None) -> bool:
    """Whether root() found a project ($HOSTNET_ROOT, or data/runs at or above `start`), rather
    than falling back to the working directory."""
    return bool(os.environ.get(ENV)) or (root(start) / MARKER).is_dir()


def resolve(path: str | os.PathLike, start: str | os.PathLike | None = None) -> Path:
    """A path as given when absolute, else relative to the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else root(start) / p


def shown(path: str | os.PathLike, start: str | os.PathLike | None = None) -> str:
    """A path as a person reads it in printed output: relative to the project root when inside it
    (so a notebook's stored output does not depend on where the checkout is), else as given."""
    p = Path(path).expanduser()
    try:
        return str(p.resolve().relative_to(root(start)))
    except (ValueError, OSError):
        return str(path)


def packaged(name: str) -> Path:
    """A file or directory shipped in the hostnet package (e.g. "reference")."""
    return Path(str(resources.files("hostnet") / name))


def reference_dir(path: str | os.PathLike = "") -> Path:
    """The paper's reference numbers: `path` when given (relative to the project root), else the
    copy shipped in the package."""
    return resolve(path) if str(path) else packaged("reference")
