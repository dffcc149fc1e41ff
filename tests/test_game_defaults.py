"""A game's optional members are declared with their defaults (``daemon/table/game.py``), never
probed: every installed game keeps its own, a third party's class gets the defaults of what
it leaves out, and the table takes only a game that has them all."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from daemon import games
from daemon.table import Table
from daemon.table.game import GameDefaults, complete

OPTIONAL = [n for n in vars(GameDefaults) if not n.startswith("__")]


@pytest.mark.parametrize("name", games.names())
def test_every_game_keeps_its_own_optional_members(name: str):
    """The defaults come last in the game's MRO: a mixin's ``correct`` (Sic Bo's, Pai Gow's)
    is not hidden by the default None (it was, with the defaults under the round procedure)."""
    cls = games.find(name)
    assert cls is not None and issubclass(cls, GameDefaults)
    hidden = []
    for member in OPTIONAL:
        owners = [k for k in cls.__mro__ if member in vars(k)]
        if owners[0] is GameDefaults and len(owners) > 1:
            hidden.append(f"{member} (defined by {owners[1].__name__})")
    assert not hidden, f"{name}: the default hides " + ", ".join(hidden)


class _Plain:
    """A third party's game, written without our base class."""

    name: ClassVar[str] = "plain"
    held_help: ClassVar[str] = "its own words"

    def summary(self, g: Any) -> dict[str, Any]:
        return {"text": "mine"}


def test_a_plain_class_gets_the_defaults_it_leaves_out_and_keeps_its_own():
    cls = complete(_Plain)
    assert complete(cls) is cls and complete(_Plain) is cls  # once, the same class
    assert issubclass(cls, _Plain) and cls.__name__ == "_Plain"
    g = cls()
    assert g.held_help == "its own words" and g.summary(None) == {"text": "mine"}
    assert g.held_alarm(None) is None and g.secret_in_play is None and g.helpers(None, None) == []
    assert g.STATE_VERSION == 1 and g.acknowledged == frozenset() and dict(g.needs) == {}


def test_the_table_refuses_a_game_without_the_defaults():
    with pytest.raises(TypeError, match="GameDefaults"):
        Table(_Plain(), [])  # type: ignore[arg-type]
