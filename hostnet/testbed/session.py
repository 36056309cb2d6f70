"""One way for a notebook, a command or a test to get a testbed for a while.

`using(spec)` yields a Testbed and undoes what the campaign did when the block ends, however it
ends (SIGTERM included): a fresh embedded testbed ("" or "embedded") is torn down; a testbed that
was already up (an embedded testbed's name, or a testbed.yaml path) stays up and gets back every
setting the campaign changed (its journal is restored). Settings that could not be put back raise
RestoreError, also when the block itself failed.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ..knobs import JournalBusy
from .base import RestoreError, Testbed, TestbedError
from .namespaces import attach, embedded, raise_on_sigterm
from . import servers

FRESH = ("", "embedded")


def unique_name(prefix: str) -> str:
    """A testbed name of this process (prefix + PID digits, within the 8 characters allowed)."""
    return f"{prefix}{os.getpid() % 10 ** (8 - len(prefix))}"


def is_file(spec: str) -> bool:
    return spec.endswith((".yaml", ".yml"))


def kind_of(spec: str) -> str:
    """What a new campaign's id says of the testbed `spec` names: "servers" for a testbed.yaml (as
    its Testbed.kind), else "embedded"."""
    return "servers" if is_file(spec) else "embedded"


def is_fresh(spec: str) -> bool:
    """Whether `spec` asks for a fresh embedded testbed, built and torn down by the campaign."""
    return spec in FRESH


@contextlib.contextmanager
def using(spec: str = "", *, prefix: str = "nb", steering: str | None = None,
          **embedded_kwargs) -> Iterator[Testbed]:
    """The testbed `spec` names, for the duration of a with-block; embedded_kwargs shape a fresh
    embedded testbed (n_senders, sender_cpus, ssh, ...) and are refused for one that is up.
    steering: a fresh embedded testbed's receive path (None: the default); one that is up and
    servers keep the one they have."""
    if spec in FRESH:
        with embedded(unique_name(prefix), steering=steering, **embedded_kwargs) as tb:
            yield tb
        return
    if embedded_kwargs:
        raise TestbedError(f"testbed {spec!r} is already built; {', '.join(embedded_kwargs)} "
                           f"only shape a fresh embedded testbed")
    if is_file(spec):
        tb = servers.from_yaml(spec)
    else:
        tb = attach(spec)
    try:  # one controller per testbed: refused here, before any point, naming the holder
        tb.journal.lock()
    except JournalBusy as exc:
        raise TestbedError(str(exc)) from exc
    with raise_on_sigterm():
        try:
            yield tb
        finally:  # the testbed stays up; the settings this campaign changed do not
            problems = tb.journal.restore()
            if problems:  # raised over any exception of the block, which stays its __context__
                raise RestoreError(tb.name, problems)
