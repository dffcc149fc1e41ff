"""The house's own paytables, from the ``[game]`` table of a table's config, checked.

``[game.paytables.<name>]`` starts from a shipped paytable (``base``) or from nothing, and
sets bet spots to ratios; ``[game] paytable`` names the one in force. The daemon's start,
``tablectl config check`` and a replay call :func:`config_problems`, which names every
problem with its key; a backend calls :func:`from_config` with the same table to settle
by the house's paytables (``docs/settlement.md``). Pure, free of the daemon.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from tabled_client.paytables import KEYS, SHIPPED, Paytable, default_for, parse_ratio

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")


def from_config(game: str, rules: Mapping[str, Any]) -> dict[str, Paytable]:
    """The house's own paytables from a ``[game]`` table; ValueError listing every problem."""
    problems = config_problems(game, rules)
    if problems:
        raise ValueError("; ".join(problems))
    return _house(game, rules, [])


def config_problems(game: str, rules: Mapping[str, Any], prefix: str = "game") -> list[str]:
    """Every problem of ``[game] paytable`` and ``[game.paytables.*]``, each naming its key."""
    errors: list[str] = []
    house = _house(game, rules, errors, prefix)
    name = rules.get("paytable")
    if isinstance(name, str) and name not in house and (game, name) not in SHIPPED:
        shipped = ", ".join(n for g, n in SHIPPED if g == game)
        own = f"; the house's: {', '.join(house)}" if house else ""
        errors.append(
            f'{prefix}.paytable: unknown paytable "{name}" (shipped for {game}: {shipped}{own})'
        )
        return errors
    if game == "roulette":  # a paytable for the wheel's layout
        layout = "double-zero" if rules.get("double_zero") is True else "single-zero"
        chosen = name if isinstance(name, str) else default_for(game, layout == "double-zero")
        table = house.get(chosen) or SHIPPED.get((game, chosen))
        if table is not None and table.layout not in (None, layout):
            errors.append(
                f'{prefix}.paytable: "{chosen}" is a {table.layout} paytable; this wheel is '
                f"{layout} ({prefix}.double_zero)"
            )
    return errors


def _house(
    game: str, rules: Mapping[str, Any], errors: list[str], prefix: str = "game"
) -> dict[str, Paytable]:
    keys = KEYS.get(game, {})
    tables = rules.get("paytables") or {}
    out: dict[str, Paytable] = {}
    if not isinstance(tables, Mapping):
        return out  # the Rules' own type check says so
    for name, rows in tables.items():
        at = f"{prefix}.paytables.{name}"
        if not _NAME.match(name):
            errors.append(f"{at}: a paytable's name is lower-case letters, digits, '-', '_' or '.'")
            continue
        if (game, name) in SHIPPED:
            errors.append(
                f'{at}: "{name}" is a shipped paytable of {game}; give the house\'s own another name'
            )
            continue
        if not isinstance(rows, Mapping):
            continue  # the rules' own type check says so
        pays: dict[str, Fraction] = {}
        sources: dict[str, str] = {}
        layout = None
        base = rows.get("base")
        if base is not None:
            if (game, base) not in SHIPPED:
                shipped = ", ".join(n for g, n in SHIPPED if g == game)
                errors.append(
                    f'{at}.base: no shipped paytable "{base}" for {game} (shipped: {shipped})'
                )
            else:
                pays.update(SHIPPED[game, base].pays)
                sources.update(SHIPPED[game, base].sources)
                layout = SHIPPED[game, base].layout
        for key, value in rows.items():
            if key == "base":
                continue
            if key not in keys:
                known = ", ".join(keys) or "none: its payouts are its rules"
                errors.append(f"{at}.{key}: {game} has no bet spot {key} (its spots: {known})")
                continue
            try:
                r = parse_ratio(value)
            except ValueError as e:
                errors.append(f"{at}.{key}: {e}")
                continue
            if key.endswith("_returns"):
                if not 0 <= r <= 1:
                    errors.append(f"{at}.{key}: {value} is impossible: a part of the stake, 0 to 1")
                    continue
            elif r <= 0:
                errors.append(f"{at}.{key}: {value} is impossible: a win pays more than nothing")
                continue
            pays[key] = r
            sources[key] = f"house paytable {name}"
        out[name] = Paytable(name, game, pays, sources, layout)
    return out


__all__ = ["config_problems", "from_config"]
