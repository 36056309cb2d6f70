"""Which stored runs an analysis uses: a run that succeeded is still left out when it was flagged
(foreign load, the hypervisor's steal, a setting that moved, a short window, a rehearsal)."""
from __future__ import annotations


# Why a flagged run is left out, and the manifest key that says more (foreign load: its "load" notes).
# A rehearsal's run (emulated NICs under TCG) is never a measurement, whatever else it met.
FLAGS = {"rehearsal": "rehearsal", "setting moved": "settings_moved", "short window": "short_window",
         "host contention": "host_contention"}


def flagged(manifest: dict) -> str:
    """Why a run is left out of analysis though it succeeded ("" when usable): foreign load during
    its window, the hypervisor's steal above its limit (host contention), a host-wide setting that
    moved under it, or a window too short to measure; first of all, a rehearsal's run (the testbed's
    "rehearsal": emulated NICs). Every section asks this one question."""
    if manifest.get("rehearsal"):
        return "rehearsal"
    if manifest.get("contaminated"):
        return "foreign load"
    return next((why for why, key in FLAGS.items() if manifest.get(key)), "")


def usable(manifest: dict) -> bool:
    return manifest["status"] == "ok" and not flagged(manifest)
