"""The games a table can play, one folder each, found through the ``tabled.games`` entry points.

A game is a folder ``daemon/games/<game>/`` (or a third party's package) whose table
class is named in an entry point of the ``tabled.games`` group, the way drivers are
found through ``tabled.drivers``; adding a game needs no edit here or anywhere else
outside its folder (``docs/architecture.md``, "add a game"). A third party's game names
its own event types in its class's ``events`` (type → ``tabled_client.events.Data``
Struct); they are registered here, when the game is loaded. The optional members a game
leaves out get their defaults here (``daemon.table.game.complete``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tabled_client.events import register

from drivers.plugins import EntryPoint, entry_points

if TYPE_CHECKING:
    from daemon.table.game import Game

GROUP = "tabled.games"
#: what every game class must have (:class:`daemon.table.game.Game`)
REQUIRED = ("name", "Rules", "State", "commands", "describe", "initial", "decide", "apply")


class GameError(Exception):
    pass


#: each installed game's entry point by name, replaced by its class once loaded; None: not read
_registry: dict[str, Any] | None = None


def _load(ep: EntryPoint) -> type[Game]:
    """The game class an entry point names, checked, with its own event types registered."""
    cls = ep.load()
    missing = [a for a in REQUIRED if not hasattr(cls, a)]
    if not isinstance(cls, type) or missing:
        raise GameError(
            f"entry point {ep.name!r} ({ep.value}) is not a tabled game: "
            f"it lacks {', '.join(missing) or 'a class'}"
        )
    if cls.name != ep.name:
        raise GameError(f"entry point {ep.name!r} ({ep.value}) names a game {cls.name!r}")
    from daemon.table.game import complete

    cls = complete(cls)  # what it leaves out of the optional members has its default
    own = cls.events
    if own:  # a third party's game: its event types, checked like tabled's own
        try:
            register(own)
        except (TypeError, ValueError) as e:
            raise GameError(f"entry point {ep.name!r} ({ep.value}): {e}") from None
    return cls


def load_games() -> dict[str, type[Game]]:
    """Every installed game by the name a config's ``table.game`` gives, each loaded afresh."""
    found: dict[str, type[Game]] = {}
    for ep in entry_points(group=GROUP):
        found[ep.name] = _load(ep)
    return found


def _entry_points() -> dict[str, Any]:
    global _registry
    if _registry is None:
        _registry = {ep.name: ep for ep in entry_points(group=GROUP)}
    return _registry


def _game(name: str) -> type[Game]:
    found = _entry_points()[name]
    if isinstance(found, EntryPoint):
        found = _entry_points()[name] = _load(found)
    return found  # type: ignore[no-any-return]


def games() -> dict[str, type[Game]]:
    """Every installed game, loaded (``tablectl`` builds its game commands from them all)."""
    return {name: _game(name) for name in _entry_points()}


def names() -> list[str]:
    """The installed games' names, none of them loaded."""
    return sorted(_entry_points())


def find(name: str) -> type[Game] | None:
    """The game class for ``table.game = name``, or None when no such game is installed.

    Only that game is loaded: a daemon imports one game's modules, not every game's
    (``docs/performance-history.md``, memory and start-up)."""
    return _game(name) if name in _entry_points() else None
