"""A table command from the control socket: answered only as committed, or refused, once.

Every reply is one of two (``docs/reliability.md``, What an answer means):

* ``ok``: the command's events are in the journal; ``seq`` is its ``operator.command``'s
  seq and ``last_seq`` its last event's. A command with nothing to journal (``alarm
  clear all`` with no alarm) says so in ``note``.
* a refusal with its reason: nothing of it is in the journal, nothing is queued.

So while the journal fails a command is refused at once (it used to be answered
"queued" and could then be lost with the process). A request with an ``id`` is answered
from the journal's own record when it comes again (``daemon/pipeline/requests.py``), from any
connection, after a restart, whoever else used the socket meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from daemon.bus.control import ControlError, Peer
from daemon.journal import Journal, JournalError
from daemon.pipeline.pipeline import Pipeline
from daemon.pipeline.requests import Committed, RequestIndex, digest
from daemon.table import Command


def principal(peer: Peer, role: str) -> str:
    """Who a request id belongs to: the CURVE key's name, else the transport and the role
    of the socket (the same across reconnects and restarts, unlike a connection)."""
    return peer.user if peer.user is not None else f"{peer.transport}:{role}"


class TableCommands:
    """Submits table commands for the control socket and says what became of them."""

    def __init__(self, pipeline: Pipeline, journal: Journal, mono: Callable[[], float]) -> None:
        self.pipeline = pipeline
        self.journal = journal
        self.mono = mono
        self.requests = RequestIndex()
        self.requests.load(journal.db, journal.last_seq)
        pipeline.listeners.append(self.requests.on_events)  # before any reply is sent

    async def run(
        self,
        cmd: str,
        args: dict[str, Any],
        actor: str,
        role: str,
        peer: Peer,
        req_id: str | int | None,
    ) -> dict[str, Any]:
        if req_id is None:
            return await self._submit(Command(cmd, args, actor, role, mono=self.mono()))
        key = (principal(peer, role), req_id)
        asked = digest(cmd, args, actor)
        done = self.requests.get(key)
        if done is not None:
            return _committed(cmd, req_id, done, digest(cmd, None, actor) if done.sealed else asked)
        first = self.requests.pending.get(key)
        if first is not None:  # the same request from another connection, still running
            if first[0] != asked:
                raise ControlError(_reused(req_id))
            return _answer(await asyncio.shield(first[1]))
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.requests.pending[key] = (asked, answer)
        c = Command(cmd, args, actor, role, mono=self.mono(), request=req_id, peer=key[0])
        result: dict[str, Any] | str = "not answered: the daemon is stopping"
        try:
            result = await self._submit(c)
            return result
        except ControlError as e:
            result = str(e)
            raise
        finally:
            del self.requests.pending[key]
            answer.set_result(result)  # a retry waiting on it gets the same answer

    async def _submit(self, c: Command) -> dict[str, Any]:
        p = self.pipeline
        if not p.healthy:
            raise ControlError(
                f"not taken: the journal is failing ({p.stats.last_error}); nothing was "
                "queued. Send it again once `tablectl status` says the journal is ok"
            )
        fut = p.submit(c, reply=True)
        assert fut is not None
        try:
            d = await fut
        except (JournalError, RuntimeError) as e:
            raise ControlError(f"not committed: {e}") from None
        if d.refused is not None:
            raise ControlError(d.refused)
        first, last = d.seqs if d.seqs is not None else (None, self.journal.last_seq)
        return {
            "accepted": c.name,
            "events": [x.type for x in d.drafts],
            "seq": first,
            "last_seq": last,
            **d.reply,
        }


def _answer(result: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(result, str):
        raise ControlError(result)
    return result


def _reused(req_id: str | int) -> str:
    return (
        f"request id {req_id!r} was already used for another request: use a new id for each request"
    )


def _committed(cmd: str, req_id: str | int, c: Committed, asked: bytes) -> dict[str, Any]:
    if c.digest != asked:
        raise ControlError(_reused(req_id) + f" (it was committed at seq {c.seq})")
    return {
        "accepted": cmd,
        "replayed": True,
        "events": [],
        "seq": c.seq,
        "last_seq": c.seq,
        "note": f"request id {req_id!r} was committed at seq {c.seq}: not applied again",
    }
