"""Blackjack's commands: the boxes' decisions from the game server, the dealer's checks.

Each command is allowed only when ``table.expects`` awaits it, and a refusal
names why (seed 003 part III §3.5: the boxes play in order, the dealer waits
for the decision; §2.5 insurance only under an ace; §3.7 the peek). The shoe's
own commands (shoe change, card entry, voids) are the shoe procedures'
(``shoe_command``, which :func:`command` hands them to); ``betting.close``
adds the boxes that bet, and ``card.exposed`` knows the hole card.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daemon.games.blackjack import rules as r
from daemon.games.blackjack.errors import hole_exposed, wrong_box
from daemon.games.blackjack.expects import now_text, refusal
from daemon.games.blackjack.settle import reveal
from daemon.games.blackjack.state import Round
from daemon.procedures.shoe import ShoeState
from daemon.procedures.shoe.commands import COMMANDS as SHOE_COMMANDS
from daemon.table import Arg, Command, CommandSpec, Decision, TableState, spec

if TYPE_CHECKING:
    from daemon.games.blackjack.table import BlackjackTable

BOX = Arg("box", "the box, 1–7")
#: who decided, as the game server names the player (journaled in the decision)
PLAYER = (Arg("player", "the player, as the game server names them"),)

COMMANDS: dict[str, CommandSpec] = {
    **SHOE_COMMANDS,
    "betting.close": spec(
        "no more bets; blackjack: the boxes that bet, --boxes 1,3,5 (seed 003 part III §2.1.3)",
        "dealer",
        "supervisor",
        args=(Arg("boxes", "blackjack: the boxes that bet, e.g. 1,3,5", option=True, kind="list"),),
        more=(Arg("box", "one box that bet (as boxes)", kind="list"),),
    ),
    "box.hit": spec("box N asks for a card", "dealer", "supervisor", args=(BOX,), more=PLAYER),
    "box.stand": spec("box N stands", "dealer", "supervisor", args=(BOX,), more=PLAYER),
    "box.double": spec(
        "box N doubles: one more card only (§2.6)",
        "dealer",
        "supervisor",
        args=(BOX,),
        more=PLAYER,
    ),
    "box.split": spec(
        "box N splits its pair (§2.7)", "dealer", "supervisor", args=(BOX,), more=PLAYER
    ),
    "box.insurance": spec(
        "box N takes or declines insurance (§2.5)",
        "dealer",
        "supervisor",
        args=(BOX, Arg("take", "yes or no")),
        more=PLAYER,
    ),
    "hole.check": spec(
        "the dealer checked the hole card under an ace (§3.7)", "dealer", "supervisor"
    ),
    "decision.timeout": spec(
        "the decision clock: wait K ran out, the box stands (§3.5.3)",
        "dealer",
        "supervisor",
        args=(Arg("turn", "the wait's number, from table.expects"),),
    ),
    "card.misplaced": spec(
        "a card was laid on a box that did not bet",
        "dealer",
        "supervisor",
        words=("card", "misplaced"),
        args=(Arg("box", "the box, 1–7", option=True),),
    ),
}

R_PEEK = "seed 003 part III §3.7: under an ace the dealer checks the hole card for blackjack"
R_HOLE_FACE_DOWN = "seed 003 part III §3.7: the hole card stays face down until the boxes played"
R_TIMEOUT = (
    "seed 003 part III §3.5.3: when the box's time runs out the dealer moves on; the box stands"
)
R_INSURANCE_TIMEOUT = (
    "seed 003 part III §3.7: insurance is offered for the time chosen; then declined"
)
YES, NO = ("yes", "true", "1"), ("no", "false", "0")


def command(bj: BlackjackTable, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
    """The table's ``command`` hook: the round's commands, what each may do now or why not;
    the shoe's own to ``shoe_command``."""
    n = c.name
    rd: Round | None = getattr(s, "round", None)
    if n == "betting.close":
        _close(bj, s, c, d)
    elif n in ("box.hit", "box.stand", "box.double", "box.split"):
        _decision(bj, s, rd, c, d, n[4:])
    elif n == "box.insurance":
        _insurance(bj, s, rd, c, d)
    elif n == "hole.check":
        _peek(bj, s, rd, c, d)
    elif n == "decision.timeout":
        _timeout(bj, s, rd, c, d)
    elif n == "card.misplaced":
        _misplaced(bj, t, s, rd, c, d)
    elif (
        n == "card.exposed"
        and s.phase in ("dealing", "paused")
        and rd is not None
        and rd.hole is not None
        and not rd.revealed
    ):
        d.add(
            "card.exposed",
            shoe=s.shoe,
            hand=s.hand,
            card=None,
            by=c.actor,
            during="dealing",
            hole=True,
            rule=R_HOLE_FACE_DOWN,
        )
        hole_exposed(bj, t, s, d, by=c.actor, card=None)
    else:
        bj.shoe_command(t, s, c, d)


def _close(bj: BlackjackTable, s: ShoeState, c: Command, d: Decision) -> None:
    if s.phase != "betting":
        d.refused = f"betting is not open (the table is {bj.phase_text(s)})"
        return
    boxes, why = _boxes_arg(bj, c.args.get("boxes", c.args.get("box")))
    if why:
        d.refused = why
        return
    d.add("betting.closed", shoe=s.shoe, hand=s.hand, by=c.actor, boxes=boxes)


def _boxes_arg(bj: BlackjackTable, raw: Any) -> tuple[list[int], str | None]:
    if raw is None or raw == "" or raw == []:
        return [], (
            "betting.close needs the boxes that bet, e.g. boxes=1,3,5 "
            "(seed 003 part III §3.4: a round deals only to boxes that bet)"
        )
    items = raw if isinstance(raw, list) else str(raw).replace(" ", "").split(",")
    try:
        boxes = sorted({int(x) for x in items if str(x) != ""})
    except ValueError:
        return [], f"boxes={raw!r}: expected box numbers like 1,3,5"
    bad = [b for b in boxes if not 1 <= b <= bj.rules.boxes]
    if bad or not boxes:
        return [], f"boxes={raw!r}: this table has boxes 1 to {bj.rules.boxes}"
    return boxes, None


def _box_arg(c: Command, d: Decision) -> int | None:
    try:
        return int(str(c.args.get("box", "")))
    except ValueError:
        d.refused = f"{c.name} needs box=N"
        return None


def _decision(
    bj: BlackjackTable, s: ShoeState, rd: Round | None, c: Command, d: Decision, what: str
) -> None:
    no = _box_arg(c, d)
    if no is None:
        return
    exp = bj.expects(s) if rd is not None else None
    if rd is None or exp is None or exp["expects"] != "decision":
        d.refused = f"no decision is awaited: the table expects {now_text(bj, s)}"
        return
    b = rd.box(no)
    if b is None:
        d.refused = f"box {no} did not bet in round {s.hand}"
        return
    if exp["box"] != no:
        d.refused = f"it is box {exp['box']}'s turn, not box {no}'s (§3.5: the boxes play in order)"
        return
    i = int(exp["split_hand"])
    why = refusal(bj.rules, b.hands, i, what)
    if why is not None:
        d.refused = f"box {no} may not {what}: {why}"
        return
    d.add(
        "box.decision",
        shoe=s.shoe,
        hand=s.hand,
        box=no,
        split_hand=i,
        decision=what,
        by=c.actor,
        player=str(c.args.get("player", "")) or None,
    )


def _insurance(bj: BlackjackTable, s: ShoeState, rd: Round | None, c: Command, d: Decision) -> None:
    no = _box_arg(c, d)
    if no is None:
        return
    if rd is None or s.phase != "dealing" or rd.step != "insurance":
        d.refused = f"insurance is not on offer now (§2.5.2: only under an ace, before the dealer draws; the table expects {now_text(bj, s)})"
        return
    b = rd.box(no)
    if b is None:
        d.refused = f"box {no} did not bet in round {s.hand}"
        return
    if b.insurance is not None:
        d.refused = (
            f"box {no} has already {'taken' if b.insurance else 'declined'} insurance (§2.4)"
        )
        return
    take = str(c.args.get("take", "")).lower()
    if take not in YES + NO:
        d.refused = "box.insurance needs take=yes or take=no"
        return
    d.add(
        "box.insurance",
        shoe=s.shoe,
        hand=s.hand,
        box=no,
        taken=take in YES,
        by=c.actor,
        player=str(c.args.get("player", "")) or None,
    )


def _peek(bj: BlackjackTable, s: ShoeState, rd: Round | None, c: Command, d: Decision) -> None:
    if rd is None or s.phase != "dealing" or rd.step != "hole-check":
        d.refused = f"the hole card is not to be checked now (the table expects {now_text(bj, s)})"
        return
    bj = r.is_blackjack((rd.up or "", rd.hole or "")) if rd.up and rd.hole else False
    d.add("dealer.peeked", shoe=s.shoe, hand=s.hand, blackjack=bj, by=c.actor, rule=R_PEEK)
    if bj:
        reveal(s, rd, d)


def _timeout(bj: BlackjackTable, s: ShoeState, rd: Round | None, c: Command, d: Decision) -> None:
    exp = bj.expects(s) if rd is not None else None
    turn = str(c.args.get("turn", ""))
    if (
        rd is None
        or exp is None
        or exp["expects"] not in ("decision", "insurance")
        or str(rd.turn) != turn
    ):
        d.refused = f"no decision of turn {turn} is waiting (the table expects {now_text(bj, s)})"
        return
    if exp["expects"] == "decision":
        d.add(
            "box.decision",
            shoe=s.shoe,
            hand=s.hand,
            box=exp["box"],
            split_hand=exp["split_hand"],
            decision="stand",
            by=c.actor,
            timeout=True,
            rule=R_TIMEOUT,
        )
        return
    for no in exp["boxes"]:
        d.add(
            "box.insurance",
            shoe=s.shoe,
            hand=s.hand,
            box=no,
            taken=False,
            by=c.actor,
            timeout=True,
            rule=R_INSURANCE_TIMEOUT,
        )


def _misplaced(
    bj: BlackjackTable, t: TableState, s: ShoeState, rd: Round | None, c: Command, d: Decision
) -> None:
    try:
        no = int(str(c.args.get("box", "")))
    except ValueError:
        d.refused = "card.misplaced needs box=N"
        return
    if rd is None or s.phase != "dealing":
        d.refused = f"no round is being dealt (the table is {bj.phase_text(s)})"
        return
    if rd.box(no) is not None:
        d.refused = f"box {no} bet in this round: a card there is not misplaced"
        return
    wrong_box(t, s, d, no, bj.expects(s) or {"text": "nothing"}, None)
