"""Blackjack's dealer errors and their procedures (``docs/procedures.md``, blackjack).

Built on the shoe procedures' machinery: a card no one may have is burned
with its alarm (``set_aside``), a void is the shoe's ``void_hand`` (alarms of
the hand cleared, the shoe ended when the cut card made it the last). Where
blackjack's rule differs from the shoe games', with its source:

- *A card drawn when none is due* (a box that stood, a dealer at 17 or more):
  the shoe games have no such card mid-hand (every card goes to the next box);
  here it is burned and the round goes on (house practice, as seed 002 for an
  extra card), with an alarm naming what was due.
- *A card drawn between rounds*: seed 002 makes the first extra card the next
  hand's burn and the second its first card; blackjack burns every such card,
  because no box is known before betting closes (seed 003 part III §3.4.1: cards
  go only to the boxes that bet).
- *A card laid on a box that did not bet*: shoe order decides, not where the
  card was put (seed 002, seed 004 §5); the alarm tells the dealer to move it.
- *The hole card exposed* before the boxes played voids the round (§3.7; seed
  000/001 art. 10), and every void opens the hole card's commitment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daemon.games.blackjack import rules as r
from daemon.games.blackjack.state import Round
from daemon.procedures.shoe import Held, ShoeState
from daemon.table import Decision, TableState, raise_alarm

if TYPE_CHECKING:
    from daemon.games.blackjack.table import BlackjackTable

R_NOT_DUE = (
    "house practice (as seed 002 for an extra card): a card drawn when none is due "
    "is given to no one; it is burned and the round goes on"
)
R_BETWEEN = (
    "seed 002: an extra card drawn when none was due is a burn card; blackjack "
    "burns every such card (no box is known before betting closes)"
)
R_BURN_NEXT = "seed 002: an extra card drawn when none was due is the next hand's burn card"
R_WRONG_BOX = (
    "seed 002, seed 004 §5: shoe order decides, not where the card was put; "
    "seed 003 part III §3.4.1: cards go to the boxes that bet"
)
R_EXPOSED = (
    "seed 003 part III §3.7: the hole card stays face down until every box has its "
    "cards; a dealing error that cannot be corrected voids the hand (seed 000/001 art. 10)"
)
R_EXPOSED_VOID = "seed 003 part III §3.7; seed 000/001 art. 10: the round is void, bets returned"
BURN_ACTION = "set the card aside with the burn cards; clear the alarm"


def not_due(
    bj: BlackjackTable,
    t: TableState,
    s: ShoeState,
    d: Decision,
    h: Held,
    exp: dict[str, Any] | None,
    at: dict[str, Any],
) -> None:
    """A card drawn when none is due: burned, the round goes on (house practice, seed 002)."""
    what = exp["text"] if exp else "nothing"
    rd: Round = s.round  # type: ignore[attr-defined]
    if exp is not None and exp["expects"] == "dealer-stands":
        why = f"the dealer drew at {r.total(rd.dealer()).text()}: the dealer stands on every 17 (§4.4.2)"
    elif exp is not None and exp["expects"] == "decision":
        why = (
            f"box {exp['box']} has not asked for a card (§3.5.3: the dealer waits for the decision)"
        )
    else:
        why = f"no card is due (the table expects {what})"
    bj.set_aside(
        t,
        d,
        at,
        {"card": h.card, "position": 0, "misdeal": True, "not_due": True},
        "card-not-due",
        f"card {h.card} drawn when none was due in round {s.hand}: {why}",
        rule=R_NOT_DUE,
        action=BURN_ACTION,
        severity="warning",
        device=h.device,
        card=h.card,
        hand=s.hand,
    )


def between_hands(
    bj: BlackjackTable, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
) -> None:
    """The table's ``card_between_hands`` hook: between rounds every card drawn is burned,
    with an alarm (house practice, seed 002)."""
    rd: Round | None = getattr(s, "round", None)
    why = ""
    if rd is not None and rd.step == "over" and rd.revealed:
        tot = r.total(rd.dealer())
        if not tot.bust and tot.total >= 17:
            why = f": the dealer drew at {tot.text()} (§4.4.2: stands on every 17)"
        else:
            why = f": round {s.hand} was settled"
    bj.set_aside(
        t,
        d,
        at,
        {"hand": s.hand + 1, "position": s.extra + 1, "extra_card": True, "rule": R_BURN_NEXT},
        "card-not-due",
        f"card {h.card} drawn between rounds{why}",
        rule=R_BETWEEN,
        action=BURN_ACTION,
        severity="warning",
        device=h.device,
        card=h.card,
    )


def wrong_box(
    t: TableState,
    s: ShoeState,
    d: Decision,
    claimed: int,
    exp: dict[str, Any],
    dev: str | None,
) -> None:
    raise_alarm(
        t,
        d,
        "card-to-box-not-betting",
        f"a card was laid on box {claimed}, which did not bet in round {s.hand}",
        rule=R_WRONG_BOX,
        action=f"move the card to where the table expects it ({exp['text']}); clear the alarm",
        severity="warning",
        device=dev,
        hand=s.hand,
    )


def hole_exposed(
    bj: BlackjackTable, t: TableState, s: ShoeState, d: Decision, *, by: str, card: str | None
) -> None:
    raise_alarm(
        t,
        d,
        "hole-card-exposed",
        f"the dealer's hole card was exposed before the boxes played in round {s.hand}",
        rule=R_EXPOSED,
        action="the round is void and the bets are returned; clear the alarm",
        hand=None,
    )
    bj.void_hand(t, d.state().game, d, reason="hole-card-exposed", by=by, rule=R_EXPOSED_VOID)


def void_data(s: ShoeState) -> dict[str, Any]:
    """The table's ``void_data`` hook: every box's cards, and the hole card's commitment
    opened (a void turns the hole card over too)."""
    rd: Round | None = getattr(s, "round", None)
    if rd is None:
        return {}
    out: dict[str, Any] = {
        "boxes": [{"box": b.box, "hands": [list(h.cards) for h in b.hands]} for b in rd.boxes],
        "dealer": list(rd.dealer()),
    }
    if rd.hole is not None:
        out["hole"] = {"card": rd.hole, "salt": rd.salt, "commitment": rd.commitment}
    return out
