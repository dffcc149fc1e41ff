"""What the daemon checks of this PC at start, beyond the config file itself.

A config can be well formed and still not start here: ``control.roles`` names unix
groups this PC may not have, ``[security]`` key files that are missing or too open, another
distribution installs one of tabled's import packages (``daemon/runtime/packages.py``). The daemon, ``tablectl config check`` and ``tablectl
doctor`` all ask :func:`problems`, so what a technician checks is what the daemon
refuses, and every missing group is named at once (issue 33: only the first was).
"""

from __future__ import annotations

import grp
import os
import shutil
import sqlite3
from pathlib import Path

from daemon.journal import locks
from daemon.journal.format import JournalError
from daemon.runtime import packages
from daemon.runtime.config import Settings


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


def problems(settings: Settings, *, keys: bool = True) -> list[str]:
    """Each reason this PC cannot run the config, one line each with its fix.

    ``keys=False`` for the daemon itself, which loads ``[security]``'s keys as it starts
    (a refused key is its exit 1, ``docs/security.md``); the tools check them here."""
    out = []
    missing = missing_groups(settings)
    if missing:
        names = ", ".join(repr(g) for g in missing)
        fix = "; ".join(f"groupadd {g}" for g in missing)
        out.append(
            f"control.roles: unix group{'s' if len(missing) > 1 else ''} {names} "
            f"{'do' if len(missing) > 1 else 'does'} not exist on this PC "
            f"(`tabled-setup install` creates them, or: {fix})"
        )
    if keys and (why := key_problem(settings)) is not None:
        out.append(why)
    out += packages.clashes()  # another distribution's `daemon` (docs/decisions.md)
    return out


def key_problem(settings: Settings) -> str | None:
    """What the daemon would say of ``[security]``'s key files at start (missing, too open,
    not a key), or None. A file this user may not read is the daemon's user's to read:
    not a problem here (the daemon checks it as itself)."""
    sec = settings.config.security
    if sec.server_key is None and sec.checkpoint_key is None:
        return None
    from structlog.testing import capture_logs

    from daemon.security import Security, SecurityError

    try:
        with capture_logs():  # its warnings are the daemon's to log, not this check's output
            Security.from_settings(settings)
    except SecurityError as e:
        if "Permission denied" in str(e):
            return None
        return f"security: {e}"
    return None


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
    """Remove the directories a start that failed created, when its journal holds no event
    and no other daemon holds it.

    A start refused at its first socket would otherwise leave a new state directory with
    an empty journal behind (issue 33); a journal with any event in it is kept, always.
    ``fresh`` was seen before this start made anything, so another daemon starting on the
    same state directory at the same moment may have made it and be writing there: the
    journal's lock decides. Only while this process holds it is the directory its own to
    remove (the fault campaign's two daemons: the loser's undo removed the winner's new
    journal, and neither ran).
    """
    journal = settings.journal_path
    fd = None
    if journal.parent.exists():
        try:
            fd = locks.lock_path(journal)
        except JournalError:
            return  # held by another daemon (or not lockable): not this start's to remove
    try:
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
    finally:
        if fd is not None:
            os.close(fd)
