"""Casino War's rules, pure: one card to the player and one to the dealer, the higher rank
wins (ace high); a tie asks the player to surrender (half the bet lost) or go to war (the
bet raised, three cards burned, one more card each; the player wins ties at war).

Ours: a toy written for the tests from the usual rules of the trade, not a casino's document.
"""

from __future__ import annotations

from typing import Any

RANKS = "23456789TJQKA"  # ace high
R_COMPARE = "casino war rule 1: the higher rank wins, ace high; suits do not count"
R_TIE = "casino war rule 2: a tie asks the player to surrender or go to war"
R_SURRENDER = "casino war rule 3: a surrender loses half the bet"
R_WAR_BURN = "casino war rule 4: at war the dealer burns three cards, then one more card each"
R_WAR = "casino war rule 5: at war the raise pays 1:1, the bet pushes; the player wins a tie"
R_TIMEOUT = "casino war rule 6: a player who does not choose in time has chosen the house's choice"
R_NOT_DUE = "ours: a card drawn while the player decides is given to no one; it is burned"


def rank(card: str) -> int:
    return RANKS.index(card[0])


def compare(player: str, dealer: str) -> str:
    """``player``, ``dealer`` or ``tie``: who holds the higher rank."""
    p, d = rank(player), rank(dealer)
    return "player" if p > d else "dealer" if d > p else "tie"


def result(
    player: tuple[str, ...], dealer: tuple[str, ...], decision: str | None
) -> dict[str, Any]:
    """The hand settled: the winner, the player's net per unit bet, and the rule applied."""
    base = {"player": list(player), "dealer": list(dealer), "war": decision == "war"}
    if decision == "surrender":
        return {**base, "winner": "dealer", "surrendered": True, "net": -0.5, "rule": R_SURRENDER}
    if decision == "war":
        won = compare(player[-1], dealer[-1]) != "dealer"
        return {
            **base,
            "winner": "player" if won else "dealer",
            "surrendered": False,
            "net": 1.0 if won else -2.0,
            "rule": R_WAR,
        }
    winner = compare(player[0], dealer[0])
    net = 1.0 if winner == "player" else -1.0
    return {**base, "winner": winner, "surrendered": False, "net": net, "rule": R_COMPARE}
