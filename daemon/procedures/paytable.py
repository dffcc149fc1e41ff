"""The paytable a table plays under: the ``[game] paytable`` key every game's rules share.

The ratios live in ``tabled_client.paytables`` (backends settle by them); the table
only names the paytable in force on each result (``paytable``), so a backend knows
what to pay a round by, and the config check refuses an unknown one or a house
paytable with an unknown spot or an impossible ratio (``docs/settlement.md``).
"""

from __future__ import annotations

from typing import Any

import msgspec
from tabled_client import house_paytables, paytables


def in_force(game: str, rules: Any) -> str:
    """The name of the paytable in force: the config's, or the game's shipped default."""
    return getattr(rules, "paytable", None) or paytables.DEFAULT[game]


def problems(game: str, rules_type: Any, raw: Any) -> list[str]:
    """``[game] paytable`` and the house's paytables checked as a backend reads them, every
    problem naming its key; nothing for a game whose rules have no paytables (a third party's)."""
    fields = {f.name for f in msgspec.structs.fields(rules_type)}
    if "paytables" not in fields or not isinstance(raw, dict):
        return []
    return house_paytables.config_problems(game, raw)
