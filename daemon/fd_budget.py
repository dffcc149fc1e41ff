"""The process's descriptors, shared out: the table's reserve and each network listener's cap.

Every connection a listener accepts holds a descriptor, and at the process's limit libzmq
aborts the process on the next ipc accept (``daemon/connections.py`` says where). So the
limit is raised as far as it goes (:func:`raise_nofile`: the soft limit to the hard one; the
shipped unit sets ``LimitNOFILE=65536``), ``RESERVE`` descriptors stay the table's (journal,
control sockets, devices, hooks, ZeroMQ's own, what a flood gets accepted before the caps'
thread sees it), and what is left beyond those already open is shared between the
listeners (:func:`caps`): each gets what it asks for or its share, whichever is smaller.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger("tabled")

FD_DIR: Final = "/proc/self/fd"
#: descriptors kept for the table itself, never given to network connections
RESERVE: Final = 256
#: the fewest connections a listener may be left; a smaller budget refuses the start
MIN_CAP: Final = 8
#: the metrics endpoint's connections (a scraper or two; ``daemon/metrics.py``)
METRICS_MAX_CONNECTIONS: Final = 8


class BudgetError(OSError):
    """The descriptor limit cannot hold the table's reserve and the listeners' caps."""


def raise_nofile() -> tuple[int, int]:
    """Soft ``RLIMIT_NOFILE`` up to the hard one; returns ``(soft, hard)`` as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard
    if want == resource.RLIM_INFINITY:  # the kernel's ceiling, not infinity
        try:
            want = int(Path("/proc/sys/fs/nr_open").read_text())
        except (OSError, ValueError):
            want = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (OSError, ValueError) as e:
            log.warning("cannot raise the descriptor limit", soft=soft, hard=hard, error=str(e))
    return soft, hard


def open_descriptors() -> int:
    return len(os.listdir(FD_DIR)) - 1  # the listing's own


def caps(limit: int, in_use: int, wanted: dict[str, int], past: dict[str, int]) -> dict[str, int]:
    """Each listener's cap: what it wants, or its share of ``limit - in_use - RESERVE``, less
    what each may hold past its cap (``past``: accepted before its caps' thread closed it)."""
    if not wanted:
        return {}
    share = (limit - in_use - RESERVE - sum(past.values())) // len(wanted)
    if share < MIN_CAP:
        raise BudgetError(
            f"the descriptor limit {limit} leaves the {len(wanted)} network listener(s) "
            f"{max(share, 0)} connections each, fewer than {MIN_CAP}: {in_use} are open and "
            f"{RESERVE} are kept for the table, {sum(past.values())} for what the listeners "
            "accept past their caps; raise LimitNOFILE (ulimit -n)"
        )
    return {name: min(n, share) for name, n in wanted.items()}
