"""Fault injection for the reliability tests; inert unless its environment variables are set.

``TABLED_FAULT_JOURNAL=PATH``: while PATH exists, every journal commit fails
as a full disk would. Where it fails is ``TABLED_FAULT_STEP``: ``before``
(the default: ENOSPC before the transaction begins) or a step inside the
transaction — ``insert`` (the event rows), ``head`` (the recorded head),
``snapshot`` (the snapshot row), ``prune`` (removing old snapshots) or
``commit`` (just before ``COMMIT``) — where it raises what SQLite raises on a
full disk (``database or disk is full``). ``TABLED_FAULT_HANG=PATH``: while
PATH exists, a commit blocks (a disk that stopped answering).
``TABLED_FAULT_KILL_AFTER_COMMIT=N``: the process SIGKILLs itself right after
its Nth commit and before publishing it — the moment a power cut hurts most.
All are read once at import; a production unit never sets them
(``docs/reliability.md``).
"""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import threading

_JOURNAL = os.environ.get("TABLED_FAULT_JOURNAL")
_STEP = os.environ.get("TABLED_FAULT_STEP", "before") or "before"
_HANG = os.environ.get("TABLED_FAULT_HANG")
_KILL_AFTER = int(os.environ.get("TABLED_FAULT_KILL_AFTER_COMMIT", "0") or 0)
_commits = 0
STEPS = ("before", "insert", "head", "snapshot", "prune", "commit")


def before_commit() -> None:
    if _HANG:
        while os.path.exists(_HANG):  # fault injection only: a disk that does not answer
            threading.Event().wait(0.02)
    if _JOURNAL and _STEP == "before" and os.path.exists(_JOURNAL):
        raise OSError(errno.ENOSPC, f"no space left on device (injected by {_JOURNAL})")


def in_commit(step: str) -> None:
    if _JOURNAL and _STEP == step and os.path.exists(_JOURNAL):
        raise sqlite3.OperationalError(f"database or disk is full (injected at {step})")


def after_commit() -> None:
    global _commits
    if _KILL_AFTER:
        _commits += 1
        if _commits >= _KILL_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)
