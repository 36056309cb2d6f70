"""Upkeep of stored runs: `hostnet rederive` (rows again from raw files under today's rules),
`hostnet data pack|unpack` (raw files as one archive, and back to read) and `hostnet seal`."""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from . import commands
from .edge import runs_dir_option
from .. import store
from ..parsers import ParseError


def register(sub) -> None:
    """rederive, data pack|unpack, seal."""
    d = commands.add(sub, "rederive")
    d.add_argument("campaigns", nargs="+")
    runs_dir_option(d)
    d.add_argument("--force", action="store_true", help="also runs already derived under the current rules: "
                                                        "their rows rebuilt from the raw files (says how many changed)")
    d.set_defaults(func=cmd_rederive)

    d = commands.add(sub, "data")
    act = d.add_subparsers(dest="action", required=True)
    p = act.add_parser("pack", help="pack runs' raw/ into raw.tar.xz (verified before raw/ is removed); runs "
                                    "packed already are skipped, a raw/ unpacked beside its archive is removed")
    p.add_argument("targets", nargs="*", metavar="CAMPAIGN_OR_RUN",
                   help="campaign or run directories, or campaign names under --runs-dir (default: every campaign)")
    runs_dir_option(p)
    p.set_defaults(func=cmd_data_pack)
    u = act.add_parser("unpack", help="write one run's raw files into RUN_DIR/raw/ to read them (the archive stays; "
                                      "`hostnet data pack RUN_DIR` removes raw/ again)")
    u.add_argument("run", metavar="RUN_DIR", help="a run directory")
    u.set_defaults(func=cmd_data_unpack)

    d = commands.add(sub, "seal")
    d.add_argument("campaigns", nargs="+")
    runs_dir_option(d)
    d.set_defaults(func=cmd_seal)


def _content(run) -> tuple:
    """What rederive --force compares: the tidy rows as a set of lines and the manifest as data, so a
    row or key written in another order is no change."""
    tidy, manifest = run / "tidy.csv", run / "manifest.json"
    return (sorted(tidy.read_text().splitlines()) if tidy.exists() else None,
            json.loads(manifest.read_text()) if manifest.exists() else None)


def cmd_rederive(args) -> int:
    # lazy: deriving rows loads pandas and the analysis floor (0.9 s), which pack, unpack and seal do without
    from ..derive.tidy import rederive
    changed = total = differ = refused = 0
    for campaign in args.campaigns:
        for run in store.list_runs(args.runs_dir, campaign):
            total += 1
            before = _content(run) if args.force else None
            try:
                went = rederive(run, force=args.force)
            # one run's damaged or hand-made files stop that run, named, not the campaign's others
            except (store.DamagedRun, store.PackError, ParseError, ValueError, KeyError, TypeError,
                    AttributeError, OSError) as exc:
                print(f"hostnet: {run}: not re-derived ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
                refused += 1
                continue
            if went:
                changed += 1
                differ += args.force and before != _content(run)
    print(f"{changed} of {total} runs re-derived under the current CPU rule, taxonomy and attribution rule"
          + (f"; {differ} of them changed (tidy.csv or manifest.json)" if args.force else "")
          + (f"; {refused} could not be (above)" if refused else ""))
    return 1 if refused else 0


def _is_run(path: Path) -> bool:
    return any((path / f).exists() for f in ("manifest.json", store.RAW_DIR, store.RAW_ARCHIVE))


def _runs_to_pack(targets: list[str], runs_dir: str) -> tuple[list[Path], int]:
    """Run directories named, or in the campaigns named (a directory, or a name under runs_dir);
    runs still being written (*.partial) are left alone. A campaign or run that is a symlink, or
    resolves outside the directory it was found in, is skipped with a warning naming it: a received
    campaign's link would have pack archive and delete files elsewhere. Returns the runs and how
    many were skipped."""
    base = Path(runs_dir)
    if not targets:
        if not base.is_dir():
            raise FileNotFoundError(f"no runs directory {base}")
        targets = [str(c) for c in sorted(base.iterdir()) if c.is_dir()]
    runs, skipped = [], 0
    for t in targets:
        path = Path(os.path.abspath(t if Path(t).is_dir() else base / t))  # "." has a name and a parent too
        if not path.is_dir():
            raise FileNotFoundError(f"no run or campaign {t} (a directory, or a campaign under {base})")
        if path.is_symlink() or not _stays_in(path, path.parent):
            skipped += _skip_link(path)
            continue
        found = [path] if _is_run(path) else [r for r in sorted(path.iterdir()) if r.is_dir() and _is_run(r)]
        for r in found:
            if r.is_symlink() or not _stays_in(r, path if r != path else path.parent):
                skipped += _skip_link(r)
            elif not r.name.endswith(".partial"):
                runs.append(r)
    return runs, skipped


def _stays_in(path: Path, parent: Path) -> bool:
    return os.path.realpath(path) == os.path.join(os.path.realpath(parent), path.name)


def _skip_link(path: Path) -> int:
    print(f"hostnet: {path}: a symlink (or it leads outside {path.parent}): skipped, nothing read or removed",
          file=sys.stderr)
    return 1


def cmd_data_pack(args) -> int:
    log = logging.getLogger(__name__)
    packed = already = files = raw_bytes = archived = 0
    runs, refused = _runs_to_pack(args.targets, args.runs_dir)
    for run in runs:
        raw = run / store.RAW_DIR
        unpacked_copy = store.is_packed(run)
        sizes = [p.stat().st_size for p in raw.iterdir()] if raw.is_dir() and not raw.is_symlink() else []
        try:
            went = store.pack_raw(run)
        except (store.PackError, store.DamagedRun) as exc:  # raw/ kept; the other runs go on
            print(f"hostnet: {exc}", file=sys.stderr)
            refused += 1
            continue
        if not went or unpacked_copy:
            already += 1
            log.debug("%s: packed already%s", run, " (the raw/ unpacked beside it removed)" if went else "")
            continue
        packed += 1
        files += len(sizes)
        raw_bytes += sum(sizes)
        archived += (run / store.RAW_ARCHIVE).stat().st_size
        log.debug("%s: %d files packed", run, len(sizes))
    print(f"{packed} runs packed ({files} files, {raw_bytes / 1e6:.1f} MB of raw text in {archived / 1e6:.1f} MB "
          f"of {store.RAW_ARCHIVE}); {already} packed already" + (f"; {refused} refused (above)" if refused else ""))
    return 1 if refused else 0


def cmd_data_unpack(args) -> int:
    run = Path(args.run)
    if not run.is_dir() or not _is_run(run):
        raise FileNotFoundError(f"no run directory {run}")
    if links := store.linked(run):
        print(f"hostnet: {links[0]}: a symlink: not unpacked (a run's files are its own)", file=sys.stderr)
        return 1
    if (run / store.RAW_DIR).is_dir():
        print(f"{run / store.RAW_DIR}: there already ({'unpacked before' if store.is_packed(run) else 'not packed'})")
        return 0
    raw = store.unpack_raw(run)
    print(f"{raw}: {len(list(raw.iterdir()))} files unpacked from {store.RAW_ARCHIVE} to read (the archive stays "
          f"what hostnet reads; `hostnet data pack {run}` removes raw/ again)")
    return 0


def cmd_seal(args) -> int:
    sealed = total = refused = 0
    for campaign in args.campaigns:
        for run in store.list_runs(args.runs_dir, campaign):
            total += 1
            try:
                sealed += store.seal(run)
            except store.DamagedRun as exc:  # a table that no longer holds is not sealed with its archive
                print(f"hostnet: {exc}: not sealed", file=sys.stderr)
                refused += 1
    print(f"{sealed} of {total} runs sealed (the others had their checks, or no tidy table)"
          + (f"; {refused} refused (above)" if refused else ""))
    return 1 if refused else 0
