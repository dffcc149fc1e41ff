"""Fault injection for the reliability tests; inert unless its environment variables are set.

``TABLED_FAULT_JOURNAL=PATH``: while PATH exists, every journal commit fails
as a full disk would (ENOSPC). ``TABLED_FAULT_KILL_AFTER_COMMIT=N``: the
process SIGKILLs itself right after its Nth commit and before publishing it
— the moment a power cut hurts most. Both are read once at import; a
production unit never sets them (``docs/reliability.md``).
"""

from __future__ import annotations

import errno
import os
import signal

_JOURNAL = os.environ.get("TABLED_FAULT_JOURNAL")
_KILL_AFTER = int(os.environ.get("TABLED_FAULT_KILL_AFTER_COMMIT", "0") or 0)
_commits = 0


def before_commit() -> None:
    if _JOURNAL and os.path.exists(_JOURNAL):
        raise OSError(errno.ENOSPC, f"no space left on device (injected by {_JOURNAL})")


def after_commit() -> None:
    global _commits
    if _KILL_AFTER:
        _commits += 1
        if _commits >= _KILL_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)
