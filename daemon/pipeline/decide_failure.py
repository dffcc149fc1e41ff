"""An input whose decide raised: refused, with a latched alarm; the table goes on.

A bug in one game's decide (or in the apply of what it decided) must cost that input
only, never the table (issue 28 item 2; ``docs/reliability.md``, Commands: committed or
refused, once). The pipeline's batch (``daemon/pipeline/decide_batch.py``) catches the exception
and commits what :func:`fallback` decides instead: the input refused, and a
``decide-failed`` alarm (one for commands, one per device; each repeat counted on it).
Pure, like the table's own decide, but for its log line.
"""

from __future__ import annotations

from typing import Any

import structlog

from daemon.table import Command, Decision, DeviceReading, Input, Table, TableState, raise_or_repeat

log = structlog.get_logger("pipeline")


def fallback(table: Table, state: TableState, inp: Input, e: Exception) -> tuple[Decision, Any]:
    """The decision for an input whose decide raised, and the state it leaves: refused,
    with its alarm (:func:`refused`); if that fails too, refused with nothing committed.

    The log line names the input and where the bug is, not the text or the traceback:
    they may quote a secret.
    """
    log.error(
        "decide failed: the input is refused",
        input=type(inp).__name__,
        command=getattr(inp, "name", None),
        device=getattr(inp, "device", None),
        error=type(e).__name__,
        where=where_raised(e),
    )
    try:
        d = refused(table, state, inp, e)
        after = state
        for x in d.drafts:
            after = table.apply(after, x.type, x.data)
        return d, after
    except Exception as again:  # the alarm itself fails: refused, nothing committed
        log.error("decide failed, and its alarm too", error=type(again).__name__)
        return Decision(refused=f"could not be decided ({type(e).__name__})"), state


def refused(table: Table, t: TableState, inp: Input, e: Exception) -> Decision:
    """The decision for ``inp``, whose decide raised ``e``, on state ``t``.

    The alarm names the input and where the bug is, never the exception's text: that may
    quote what the input carried (a card still secret). The refusal, which goes only to
    whoever sent the command, does quote it.
    """
    d = Decision(base=t, fold=table.apply)
    where = where_raised(e)
    device: str | None = None
    if isinstance(inp, Command):
        what = f"command {inp.name} from {inp.actor} ({inp.role}, {inp.source})"
        d.refused = (
            f"{inp.name} could not be decided: {type(e).__name__}: {str(e)[:200]} at "
            f"{where}; refused, nothing changed (a decide-failed alarm is raised)"
        )
    else:
        device = inp.device
        kind = "reading" if isinstance(inp, DeviceReading) else "health change"
        what = f"a {kind} from {device}"
        d.refused = f"{what} could not be decided"
    raise_or_repeat(
        t,
        d,
        "decide-failed",
        f"{what} could not be decided ({type(e).__name__} at {where}); it was refused "
        "and nothing it decided was kept",
        device=device,
        rule="[ours] an input is committed or refused with a reason; a bug in deciding "
        "one refuses that input and never stops the table",
        action="report it with the console log's 'decide failed' line; check what the "
        "input should have done and enter it by hand if needed, then clear the alarm",
        severity="supervisor",
        error=type(e).__name__,
        where=where,
    )
    return d


def where_raised(e: BaseException) -> str:
    """``file.py:LINE in function`` where ``e`` was raised (no source read: no I/O)."""
    tb = e.__traceback__
    if tb is None:
        return "unknown"
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno} in {code.co_name}"
