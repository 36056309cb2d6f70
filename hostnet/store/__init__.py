"""The store: campaigns of run directories (raw tool output + manifest.json + a tidy table), files only.

It imports nothing of hostnet but the version: it runs no command (the runner passes the git commit
in) and says nothing of which runs an analysis uses (analysis.flags does).

Layout: <runs_dir>/<campaign>/  sweep.json, capabilities.json, .sweep.lock (campaign.py), and
        <runs_dir>/<campaign>/<run_id>/
  manifest.json   config, testbed, kernel, tool versions, hostnet version + git commit,
                  window, status ("ok" | "failed"), error
  raw.tar.xz      every probe's and tool's output, verbatim, in one archive (deterministic: the same
                  files give the same bytes); runs from before it keep a raw/ directory instead.
                  raw_names/raw_texts/raw_text/has_raw read either form alike; pack_raw and
                  unpack_raw (`hostnet data pack|unpack`) turn one into the other, and a raw/ beside
                  the archive is a copy for a person to read (the archive is what is read)
  tidy.csv        long form: run_id, campaign, experiment, config, repetition, side,
                  metric (unit in the name), category, flow, value   (only when status is ok)
Schema history: 1 = one flow per run (no "flow" column); 2 = flows (per-flow rows, side "flow").
Older runs are upgraded on load, never rewritten.
A run is built in "<run_id>.partial" (raw/ packed at the end), its files and directories fsync'ed,
and renamed into place when complete, so a reader never sees a half-written run; a manifest that is empty or unreadable
all the same (a damaged disk) makes the run INCOMPLETE: left out here, redone by a resumed sweep.
The manifest records the sha256 and row count of tidy.csv (`checks`), so a table cut, torn or
edited after the run is not believed: read_tidy refuses it (DamagedRun), load_tidy leaves it out
with a warning naming it, and load_manifests gives that run the status DAMAGED, which the run
quality line counts as failed. Unreadable manifests in a campaign are warned about by path.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what import-linter and a type checker read; at run time __getattr__ loads each
    from .archive import (RAW_ARCHIVE, RAW_DIR, PackError, archive_bytes, finish_removal, has_raw, is_packed, linked,
                          pack_raw, raw_limit, raw_names, raw_text, raw_texts, unpack_raw)
    from .campaign import NOTEBOOK_POINT_FILE, PLAN_FILE, Campaign, CampaignLocked, new_campaign_id
    from .checks import DAMAGED, checks_of, damage, seal
    from .files import DamagedRun, write_atomic
    from .reading import (INCOMPLETE, MANIFEST_TYPES, Manifests, latest_campaign, list_runs, load_manifest,
                          load_manifests, load_tidy, manifest_problem, read_tidy, run_status, tidy_problem,
                          unreadable_runs, upgrade_manifest)
    from .rundir import SCHEMA_VERSION, TIDY_COLUMNS, Rows, RunDir, rewrite_run

# each module of the store, and the public names it defines: loaded on first use (PEP 562), so a
# command that packs archives or names a campaign directory does not load pandas (reading.py,
# rundir.py) before it reads a table
_NAMES = {"archive": ("RAW_ARCHIVE", "RAW_DIR", "PackError", "archive_bytes", "finish_removal", "has_raw", "is_packed",
                      "linked", "pack_raw", "raw_limit", "raw_names", "raw_text", "raw_texts", "unpack_raw"),
          "campaign": ("NOTEBOOK_POINT_FILE", "PLAN_FILE", "Campaign", "CampaignLocked", "new_campaign_id"),
          "checks": ("DAMAGED", "checks_of", "damage", "seal"),
          "files": ("DamagedRun", "write_atomic"),
          "reading": ("INCOMPLETE", "MANIFEST_TYPES", "Manifests", "latest_campaign", "list_runs", "load_manifest",
                      "load_manifests", "load_tidy", "manifest_problem", "read_tidy", "run_status", "tidy_problem",
                      "unreadable_runs", "upgrade_manifest"),
          "rundir": ("SCHEMA_VERSION", "TIDY_COLUMNS", "Rows", "RunDir", "rewrite_run")}
_PUBLIC = {name: module for module, names in _NAMES.items() for name in names}

__all__ = ["RAW_ARCHIVE", "RAW_DIR", "PackError", "archive_bytes", "finish_removal", "has_raw", "is_packed", "linked",
           "pack_raw", "raw_limit", "raw_names", "raw_text", "raw_texts", "unpack_raw",
           "NOTEBOOK_POINT_FILE", "PLAN_FILE", "Campaign", "CampaignLocked", "new_campaign_id",
           "DAMAGED", "checks_of", "damage", "seal",
           "DamagedRun", "write_atomic",
           "INCOMPLETE", "MANIFEST_TYPES", "Manifests", "latest_campaign", "list_runs", "load_manifest",
           "load_manifests", "load_tidy", "manifest_problem", "read_tidy", "run_status", "tidy_problem",
           "unreadable_runs", "upgrade_manifest",
           "SCHEMA_VERSION", "TIDY_COLUMNS", "Rows", "RunDir", "rewrite_run"]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    elif name in _NAMES:  # a module of the store (store.reading): importing it sets it on the package
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
