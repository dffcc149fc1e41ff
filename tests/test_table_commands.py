"""What the table does with every command, whatever the game (issue 18: args bound)."""

from __future__ import annotations

import msgspec
import pytest

from daemon.games import find, names
from daemon.table import ARGS_MAX_BYTES, Command, Table


@pytest.mark.parametrize("game", names())
def test_a_command_with_oversized_args_is_refused_with_the_reason(game: str):
    cls = find(game)
    assert cls is not None
    table = Table(cls(msgspec.convert({}, cls.Rules)), ["dev"])
    state = table.initial()
    big = Command("alarm.clear", {"id": "all", "reason": "x" * ARGS_MAX_BYTES}, "pit", "supervisor")
    d = table.decide(state, big)
    assert d.refused is not None and d.drafts == []  # refused: nothing journaled
    assert "bytes of JSON" in d.refused and str(ARGS_MAX_BYTES) in d.refused
    # within the bound the command is judged as always (here: no alarm to clear)
    ok = Command("alarm.clear", {"id": "all", "reason": "x" * 900}, "pit", "supervisor")
    d = table.decide(state, ok)
    assert d.refused is None or "bytes of JSON" not in d.refused
