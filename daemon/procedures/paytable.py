"""The paytable a table plays under: the ``[game] paytable`` key every game's rules share.

The ratios live in ``tabled_client.paytables`` (backends settle by them); the table
only names the paytable in force on each result (``paytable``), so a backend knows
what to pay a round by, and the config check refuses an unknown one or a house
paytable with an unknown spot or an impossible ratio (``docs/settlement.md``).
"""

from __future__ import annotations

from typing import Any

from tabled_client import paytables


def in_force(game: str, rules: Any) -> str:
    """The name of the paytable in force: the config's, or the game's shipped default."""
    return getattr(rules, "paytable", None) or paytables.DEFAULT[game]
