"""The journal: SQLite event store, the table's source of truth.

One file format, three jobs, one module each:

* :mod:`daemon.journal.store`: the write path: :class:`Journal` opens (or creates)
  the file under its lock, appends sealed events in one transaction per commit,
  closes and seals it;
* :mod:`daemon.journal.read`: the read path: stored bytes in seq order, and the
  events with their secret parts as the table's recovery applies them;
* :mod:`daemon.journal.verify`: the hash chain, the recorded head, the snapshots
  and the secret rows checked, for ``tablectl verify`` and the start-up walk;

and :mod:`daemon.journal.format`, what the three share (schema, connection,
errors, ``meta``). Beside them, the writer's :mod:`daemon.journal.locks` (one daemon per
journal file, whatever its name) and :mod:`daemon.journal.headmark` (its head kept outside
the file, so that a journal restored from an older copy is told). Why the file is laid out
so: ``docs/decisions.md`` (the hash chain and the head kept in ``meta``, snapshots in the
same transaction, how rollback is detected).
"""

from daemon.journal.format import (
    KEEP_SNAPSHOTS,
    SNAPSHOT_EVENT,
    Batch,
    JournalError,
    Problem,
    connect,
    damaged,
    meta_problem,
    parse_head,
    snapshot_data,
)
from daemon.journal.read import UNREADABLE, read_events, read_for_state, read_raw, read_with_secrets
from daemon.journal.store import Journal
from daemon.journal.verify import (
    UNSEALED,
    SecretCheck,
    VerifyResult,
    no_secrets,
    snapshot_problem,
    verify_chain,
    verify_file,
    verify_secrets,
    verify_snapshots,
)

__all__ = [
    "KEEP_SNAPSHOTS",
    "SNAPSHOT_EVENT",
    "UNREADABLE",
    "UNSEALED",
    "Batch",
    "Journal",
    "JournalError",
    "Problem",
    "SecretCheck",
    "VerifyResult",
    "connect",
    "damaged",
    "meta_problem",
    "no_secrets",
    "parse_head",
    "read_events",
    "read_for_state",
    "read_raw",
    "read_with_secrets",
    "snapshot_data",
    "snapshot_problem",
    "verify_chain",
    "verify_file",
    "verify_secrets",
    "verify_snapshots",
]
