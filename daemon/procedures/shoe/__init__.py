"""Shoe procedures for card games dealt from a shoe: pure decide/apply.

Burn, demonstration hands, cut card, shoe change, continuous shuffling, and
the dealer-error procedures of the house rules, each citing its seed
(``docs/rules.md``; ``docs/procedures.md``). What a hand is — which box
is due the next card and what the result is — comes from a
:class:`HandRules` plug, so Baccarat and Dragon Tiger share every procedure.

Phases::

    no-shoe ─shoe.new─▶ burning ─▶ demo ─▶ settling ─open─▶ betting ─close─▶ dealing ─result─▶ settling
    (paused while a supervisor must enter or accept a card; shoe-ended after the last hand or a void)

One module per job::

    state.py     the house rules (ShoeRules), the state (ShoeState), the hand plug (HandRules)
    game.py      ShoeGame: decide hands each input to the part whose job it is; the hooks
    commands.py  operator commands (betting, shoe change, card entry, voids)
    dealing.py   cards from the shoe: burn, demo hands, boxes, extra cards; the hooks place
                 and card_between_hands
    cut_card.py  the cut card: the shoe's last hand
    expects.py   table.expects: what the table waits for (the game's expects hook), published
    errors.py    dealer errors: pauses, exposed cards, voids, a lost card reader
    shuffler.py  the shuffler's reports: counts checked, faults, the door
    apply.py     one event folded into the state
    describe.py  how the shoe's events read (log, recall, monitor)
    roads.py     the scoreboards ("roads") a shoe's winners draw, pure

A new shoe procedure goes into the module of its job (``docs/architecture.md``).
"""

from daemon.procedures.shoe.game import ShoeGame
from daemon.procedures.shoe.state import (
    IN_HAND,
    HandRules,
    Held,
    Phase,
    ShoeRules,
    ShoeState,
    burn_count,
)

__all__ = [
    "IN_HAND",
    "HandRules",
    "Held",
    "Phase",
    "ShoeGame",
    "ShoeRules",
    "ShoeState",
    "burn_count",
]
