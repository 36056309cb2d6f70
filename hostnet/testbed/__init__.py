"""Testbeds: named roles mapped to hosts, interfaces, data IPs and CPU sets.

base.py holds the Testbed itself; namespaces.py builds the embedded testbed (network namespaces
and veth or a bridge on this machine) and keeps its state for `hostnet testbed` and `hostnet
restore`; servers.py reads a testbed.yaml of real servers; capabilities.py says what each host
can do, and record.py stores that per campaign (capabilities.json); leftovers.py finds and puts
back what dead sessions of either kind left. The names below are the package's public face:
`testbed.using(spec)` (session.py: a testbed for a with-block, fresh or already up),
`testbed.embedded(...)`, `testbed.attach(name)`, `testbed.Testbed`.

Each name, and each module of the package (`testbed.session`), loads on first use (PEP 562):
`from hostnet.testbed import steering` or `Testbed` (a command's parser, measure.config) then costs
the knobs, not the embedded testbed, the servers' schema checks (jsonschema) and SSH (paramiko)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what import-linter and a type checker read; at run time __getattr__ loads each
    from .base import Endpoint, RestoreError, Testbed, TestbedError, role_kind, role_name, state_dir
    from .leftovers import restore, stale
    from .namespaces import (NAME_RE, SUBNET_PREFIX, EmbeddedLayout, attach, check_cpus, down, embedded,
                             from_layout, is_persistent, owner_alive, raise_on_sigterm, status, up)
    from .session import unique_name, using

# each module of this package, and the public names it defines
_NAMES = {"base": ("Endpoint", "RestoreError", "Testbed", "TestbedError", "role_kind", "role_name", "state_dir"),
          "namespaces": ("NAME_RE", "SUBNET_PREFIX", "EmbeddedLayout", "attach", "check_cpus", "down", "embedded",
                         "from_layout", "is_persistent", "owner_alive", "raise_on_sigterm", "status", "up"),
          "leftovers": ("restore", "stale"),
          "session": ("unique_name", "using")}
_PUBLIC = {name: module for module, names in _NAMES.items() for name in names}
_MODULES = ("as_servers", "base", "capabilities", "guest_boot", "guests", "knob_trials", "leftovers", "namespaces",
            "record", "servers", "session", "steering")

__all__ = ["NAME_RE", "SUBNET_PREFIX", "EmbeddedLayout", "Endpoint", "RestoreError", "Testbed", "TestbedError",
           "attach", "check_cpus", "down", "embedded", "from_layout", "is_persistent", "owner_alive",
           "raise_on_sigterm", "restore", "role_kind", "role_name", "stale", "state_dir", "status", "unique_name",
           "up", "using"]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    elif name in _MODULES:  # importing a submodule sets it on the package: asked once
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
