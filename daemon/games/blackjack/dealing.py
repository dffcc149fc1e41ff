"""Blackjack's cards from the shoe: each card to the box ``table.expects`` names, the hole card sealed.

Everything before a card reaches a box is the shoe procedures' and is not
written again here: the start burn, a card held while the table is paused,
an unreadable card, a card beyond its count in the shoe, a noisy line, and
where a card came from (``origin``); the procedure hands the table's ``place``
hook each card of the hand in play, and :func:`place` places it. Where the rule
differs, this module says so and why:

- *Which box is next.* A shoe game's ``hand_rules.next_box`` answers from
  the cards dealt; blackjack's order also depends on the players' decisions
  (seed 003 part III §3.4 dealing order, §3.5 decisions, §2.7 both second
  cards of a split first), so it answers from :func:`.expects.expects`.
- *A card that came out face up* stands as dealt in the shoe games (seed
  000/001 art. 4, ``face_up_rule``); in blackjack every card but the hole card
  is dealt face up (§3.4), and a hole card face up is the hole card exposed
  (§3.7, :func:`~.errors.hole_exposed`).
- *The hole card* is journaled as a secret and published only as a salted
  commitment until it is turned over (``docs/decisions.md``, "The blackjack
  hole card").
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from daemon.games.blackjack.commitments import commitment
from daemon.games.blackjack.errors import hole_exposed, not_due, wrong_box
from daemon.games.blackjack.state import Round
from daemon.procedures.shoe import Held, ShoeState
from daemon.table import Decision, TableState

if TYPE_CHECKING:
    from daemon.games.blackjack.table import BlackjackTable


def place(
    bj: BlackjackTable, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
) -> None:
    """The table's ``place`` hook: a card out of the shoe during the round, placed where the
    order of play says (``at``: where it came from)."""
    rd: Round = s.round  # type: ignore[attr-defined]
    card = h.card
    assert card is not None
    at["hand"] = s.hand
    exp = bj.expects(s)
    if exp is None or exp["expects"] not in ("card", "dealer-draws"):
        not_due(bj, t, s, d, h, exp, at)
        return
    if h.claimed_box and h.claimed_box.isdigit() and rd.box(int(h.claimed_box)) is None:
        wrong_box(t, s, d, int(h.claimed_box), exp, h.device)
    if exp["to"] == "dealer":
        if exp.get("hole"):
            _hole_card(bj, t, s, d, h, at)
            return
        pos = len(rd.dealer()) + 1
        d.add("card.dealt", card=card, box="dealer", position=pos, **at)
        return
    no, i = int(exp["to"]), int(exp["split_hand"])
    b = rd.box(no)
    assert b is not None
    d.add(
        "card.dealt",
        card=card,
        box=str(no),
        split_hand=i,
        position=len(b.hands[i].cards) + 1,
        **at,
    )


def _hole_card(
    bj: BlackjackTable, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
) -> None:
    """Journal the hole card as a secret; publish only its commitment (``docs/decisions.md``)."""
    card = h.card
    assert card is not None
    if h.face_up:
        # The hole card came out face up: it is exposed before the boxes played.
        d.add("card.dealt", card=card, box="dealer", position=2, hole=True, exposed=True, **at)
        hole_exposed(bj, t, s, d, by=h.device, card=card)
        return
    salt = hmac.new(bj.salt_key, f"{s.shoe}:{s.hand}:{s.out + 1}".encode(), "sha256").hexdigest()[
        :32
    ]
    d.add(
        "card.dealt",
        card=None,
        box="dealer",
        position=2,
        hole=True,
        commitment=commitment(card, salt),
        secret={"card": card, "salt": salt},
        **at,
    )
