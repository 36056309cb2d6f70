"""Testbeds: named roles mapped to hosts, interfaces, data IPs and CPU sets.

base.py holds the Testbed itself; namespaces.py builds the embedded testbed (network namespaces
and veth or a bridge on this machine) and keeps its state for `hostnet testbed` and `hostnet
restore`; servers.py reads a testbed.yaml of real servers; capabilities.py says what each host
can do, and record.py stores that per campaign (capabilities.json); leftovers.py finds and puts
back what dead sessions of either kind left. The names below are the package's public face:
`testbed.using(spec)` (session.py: a testbed for a with-block, fresh or already up),
`testbed.embedded(...)`, `testbed.attach(name)`, `testbed.Testbed`.
"""
from __future__ import annotations

from .base import Endpoint, RestoreError, Testbed, TestbedError, role_kind, role_name, state_dir
from .namespaces import (NAME_RE, SUBNET_PREFIX, EmbeddedLayout, attach, check_cpus, down, embedded, from_layout,
                         is_persistent, owner_alive, raise_on_sigterm, status, up)
from .leftovers import restore, stale
from .session import unique_name, using

__all__ = ["NAME_RE", "SUBNET_PREFIX", "EmbeddedLayout", "Endpoint", "RestoreError", "Testbed", "TestbedError",
           "attach", "check_cpus", "down", "embedded", "from_layout", "is_persistent", "owner_alive",
           "raise_on_sigterm", "restore", "role_kind", "role_name", "stale", "state_dir", "status", "unique_name",
           "up", "using"]
