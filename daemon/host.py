"""What the daemon checks of this PC at start, beyond the config file itself.

A config can be well formed and still not start here: ``control.roles`` names unix
groups this PC may not have. The daemon, ``tablectl config check`` and ``tablectl
doctor`` all ask :func:`problems`, so what a technician checks is what the daemon
refuses, and every missing group is named at once (issue 33: only the first was).
"""

from __future__ import annotations

import grp
import shutil
import sqlite3
from pathlib import Path

from daemon.config import Settings


def missing_groups(settings: Settings) -> list[str]:
    """The unix groups ``control.roles`` names that do not exist on this PC, in role order."""
    out: list[str] = []
    for group in settings.config.control.roles.values():
        if not group or group in out:  # "": the daemon's own group (a demo)
            continue
        try:
            grp.getgrnam(group)
        except KeyError:
            out.append(group)
    return out


def problems(settings: Settings) -> list[str]:
    """Each reason this PC cannot run the config, one line each with its fix."""
    missing = missing_groups(settings)
    if not missing:
        return []
    names = ", ".join(repr(g) for g in missing)
    fix = "; ".join(f"groupadd {g}" for g in missing)
    return [
        f"control.roles: unix group{'s' if len(missing) > 1 else ''} {names} "
        f"{'do' if len(missing) > 1 else 'does'} not exist on this PC "
        f"(`tabled-setup install` creates them, or: {fix})"
    ]


def fresh_dirs(settings: Settings) -> list[Path]:
    """The topmost directory each of the state and journal directories would create now."""
    out: list[Path] = []
    for d in (settings.state_dir, settings.journal_path.parent, settings.runtime_dir):
        top = None
        for p in (d, *d.parents):
            if p.exists():
                break
            top = p
        if top is not None and top not in out:
            out.append(top)
    return out


def undo_failed_start(settings: Settings, fresh: list[Path]) -> None:
    """Remove the directories a start that failed created, when its journal holds no event.

    A start refused at its first socket would otherwise leave a new state directory with
    an empty journal behind (issue 33); a journal with any event in it is kept, always.
    """
    journal = settings.journal_path
    if journal.exists():
        try:
            db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
            try:
                (count,) = db.execute("SELECT COUNT(*) FROM events").fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            return  # not a journal this can read: not for this to remove
        if count:
            return
    for top in fresh:
        shutil.rmtree(top, ignore_errors=True)
