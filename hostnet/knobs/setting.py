"""A setting a point makes: a knob, its key, the value, and the place it is made.

Pure data: config.settings and the steering and UDP hooks plan them, config.apply_settings writes
them through the journal; the testbed turns a place into a host (Testbed.host_at)."""
from __future__ import annotations

from typing import NamedTuple

from .base import Knob

ROLE, MACHINE, SWITCH = "role", "machine", "switch"


class Place(NamedTuple):
    """Where a setting is made: an endpoint's host (by role), a machine as a whole (a host-wide
    setting: machines are where probes run, Testbed.machines), or the bridge of a bridged embedded
    testbed."""
    kind: str
    name: str = ""

    @classmethod
    def of_role(cls, role: str) -> Place:
        return cls(ROLE, role)

    @classmethod
    def of_machine(cls, machine: str) -> Place:
        return cls(MACHINE, machine)

    @property
    def label(self) -> str:
        """As manifests record it (their "applied" keys are LABEL/knob/key): the role,
        "machine:NAME" or "switch"."""
        return {ROLE: self.name, MACHINE: f"machine:{self.name}", SWITCH: SWITCH}[self.kind]

    @classmethod
    def parse(cls, label: str) -> Place:
        """A label back into a place (a manifest's "applied" keys)."""
        if label == SWITCH:
            return SWITCH_PLACE
        if label.startswith("machine:"):
            return cls(MACHINE, label.split(":", 1)[1])
        return cls(ROLE, label)


SWITCH_PLACE = Place(SWITCH)


class Setting(NamedTuple):
    """One knob value of a point; value None leaves the setting as the host had it (its prior is
    journaled and written back)."""
    place: Place
    knob: Knob
    key: str
    value: str | None

    @property
    def label(self) -> str:
        """The manifest's name for it: PLACE/knob/key."""
        return f"{self.place.label}/{self.knob.name}/{self.key}"
