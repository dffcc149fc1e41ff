"""The Casino War table, on the shoe procedure's public hooks (``docs/architecture.md``).

Every shoe procedure — burns, cut card, card entry, an unreadable or counted-out card, a
card before betting closed, voids, the shuffler — is :class:`ShoeGame`'s. This game says
what its table waits for (``expects``: a card to the player, to the dealer, a burn at war,
or the player's decision after a tie), where a card of the hand goes (``place``), its own
commands (``command``: war or surrender, and the decision clock's timeout), the event
that settles a hand (``result_type``) and keeps its own tally across shoes (``wars``,
``surrenders``: the procedure's ``carry`` keeps the game's own fields at a new shoe).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from casino_war import rules
from casino_war.describe import WarDescriber
from casino_war.events import EVENTS
from daemon.games.describe import Describer
from daemon.procedures.clock import DecisionClock
from daemon.procedures.shoe import Held, ShoeGame, ShoeRules, ShoeState
from daemon.procedures.shoe.cut_card import end_shoe_after
from daemon.table import Arg, Command, CommandSpec, Decision, TableState, spec


class WarRules(ShoeRules, forbid_unknown_fields=True, frozen=True):
    #: the time the player has to choose after a tie (rule 6)
    decision_seconds: Annotated[float, msgspec.Meta(gt=0)] = 15.0
    #: what the player has chosen when the time runs out (rule 6)
    timeout_means: Literal["surrender", "war"] = "surrender"
    #: cards burned before the war's cards (rule 4)
    war_burn: Annotated[int, msgspec.Meta(ge=0, le=5)] = 3


class WarRound(msgspec.Struct, frozen=True):
    decision: str | None = None  # war or surrender, after a tie
    burned: int = 0  # the war's burn cards so far


class WarState(ShoeState, frozen=True):
    round: WarRound | None = None
    #: the number of the last decision awaited (``table.expects`` ``turn``)
    turn: int = 0
    #: the table's own tally, over every shoe
    wars: int = 0
    surrenders: int = 0


class _Hands:
    """The shoe's hand plug: the boxes the shoe keeps a hand's cards in (void, status)."""

    boxes: ClassVar[tuple[str, ...]] = ("player", "dealer")


DECIDE = ("dealer", "supervisor")


class CasinoWar(ShoeGame):
    name: ClassVar[str] = "casino-war"
    Rules: ClassVar[type[ShoeRules]] = WarRules
    State: ClassVar[type[ShoeState]] = WarState
    hand_rules: ClassVar[Any] = _Hands()
    describe: ClassVar[Describer] = WarDescriber()
    events: ClassVar[dict[str, type[msgspec.Struct]]] = EVENTS  # type: ignore[assignment]
    result_type: ClassVar[str] = "war.result"
    numbered: ClassVar[frozenset[str]] = frozenset({"decision"})
    corrections_refused: ClassVar[str] = "a war hand is not corrected: void it instead"
    commands: ClassVar[dict[str, CommandSpec]] = {
        **ShoeGame.commands,
        "war.go": spec("the player goes to war after a tie", *DECIDE, words=("war",)),
        "war.surrender": spec("the player surrenders after a tie", *DECIDE, words=("surrender",)),
        "decision.timeout": spec(
            "the decision clock: wait K ran out",
            *DECIDE,
            args=(Arg("turn", "the wait's number, from table.expects"),),
        ),
    }

    def __init__(self, rules: WarRules) -> None:
        super().__init__(rules)
        self.rules: WarRules = rules  # type: ignore[assignment]

    # ------------------------------------------------------------------ the hooks

    def expects(self, s: ShoeState) -> dict[str, Any] | None:
        rd: WarRound | None = getattr(s, "round", None)
        if rd is None or s.phase != "dealing":
            return None
        player, dealer = s.boxes.get("player", ()), s.boxes.get("dealer", ())
        if rd.decision is None:
            if not player or not dealer:
                return _card("player" if not player else "dealer")
            return {
                "expects": "decision",
                "box": 1,
                "allowed": ["war", "surrender"],
                "seconds": self.rules.decision_seconds,
                "text": "the player's choice: war or surrender",
            }
        if rd.burned < self.rules.war_burn:
            return {
                "expects": "card",
                "to": "burn",
                "text": f"burn card {rd.burned + 1} of {self.rules.war_burn} before the war",
            }
        if len(player) < 2 or len(dealer) < 2:
            return _card("player" if len(player) < 2 else "dealer")
        return None

    def turn(self, s: ShoeState) -> int:
        return s.turn  # type: ignore[attr-defined, no-any-return]

    def place(self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]) -> None:
        at["card"] = h.card
        exp = self.expects(s)
        if exp is None or exp["expects"] != "card":
            what = exp["text"] if exp else "nothing"
            self.set_aside(
                t,
                d,
                at,
                {"hand": s.hand, "position": 0, "misdeal": True},
                "war-card-not-due",
                f"card {h.card} drawn while the table waits for {what}",
                rule=rules.R_NOT_DUE,
                action="set the card aside with the burn cards; clear the alarm",
                severity="warning",
                device=h.device,
                card=h.card,
                hand=s.hand,
            )
            return
        rd: WarRound = s.round  # type: ignore[attr-defined]
        to = exp["to"]
        if to == "burn":
            d.add(
                "card.dealt",
                hand=s.hand,
                box="burn",
                position=rd.burned + 1,
                rule=rules.R_WAR_BURN,
                **at,
            )
            return
        boxes = dict(s.boxes)
        position = sum(map(len, boxes.values())) + 1
        d.add("card.dealt", hand=s.hand, box=to, position=position, **at)
        boxes[to] = (*boxes[to], str(h.card))
        player, dealer = boxes["player"], boxes["dealer"]
        if len(player) != len(dealer):
            return
        if rd.decision is None and rules.compare(player[0], dealer[0]) == "tie":
            return  # the player chooses next (expects: the decision)
        settle(s, d, player, dealer, rd.decision, cards_out=s.out + 1)

    def command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
        if c.name not in ("war.go", "war.surrender", "decision.timeout"):
            self.shoe_command(t, s, c, d)
            return
        exp = self.expects(s)
        if exp is None or exp["expects"] != "decision":
            now = exp["text"] if exp else self.phase_text(s)
            d.refused = f"no decision is awaited: the table expects {now}"
            return
        timeout = c.name == "decision.timeout"
        if timeout and str(c.args.get("turn", "")) != str(self.turn(s)):
            d.refused = (
                f"no decision of turn {c.args.get('turn')} is waiting (it is {self.turn(s)})"
            )
            return
        choice = self.rules.timeout_means if timeout else c.name.removeprefix("war.")
        choice = "war" if choice == "go" else choice
        d.add(
            "war.decision",
            shoe=s.shoe,
            hand=s.hand,
            decision=choice,
            by=c.actor,
            timeout=timeout,
            rule=rules.R_TIMEOUT if timeout else rules.R_TIE,
        )
        if choice == "surrender":
            settle(s, d, s.boxes["player"], s.boxes["dealer"], choice, cards_out=s.out)

    def helpers(self, submit: Any, state: Any) -> list[Any]:
        return [DecisionClock(submit, state, self)]

    # ------------------------------------------------------------------ state and views

    def apply(self, s: ShoeState, type_: str, data: dict[str, Any]) -> ShoeState:
        out: WarState = super().apply(s, type_, data)  # type: ignore[assignment]
        rep = msgspec.structs.replace
        rd = out.round
        if type_ == "betting.closed":
            return rep(out, round=WarRound())
        if type_ in ("betting.opened", "hand.void", "shoe.void", "shoe.started", "war.result"):
            return rep(out, round=None) if rd is not None else out
        if type_ == "table.expects" and data.get("turn") is not None:
            return rep(out, turn=int(data["turn"]))
        if type_ == "war.decision" and rd is not None:
            went = data["decision"] == "war"
            return rep(
                out,
                round=rep(rd, decision=data["decision"]),
                wars=out.wars + went,
                surrenders=out.surrenders + (not went),
            )
        if (
            type_ == "card.dealt"
            and data["box"] == "burn"
            and rd is not None
            and rd.decision == "war"
            and not data.get("misdeal")
        ):
            return rep(out, round=rep(rd, burned=rd.burned + 1))
        return out

    def summary(self, s: ShoeState) -> dict[str, Any]:
        return {
            **super().summary(s),
            "wars": s.wars,  # type: ignore[attr-defined]
            "surrenders": s.surrenders,  # type: ignore[attr-defined]
        }


def _card(to: str) -> dict[str, Any]:
    return {"expects": "card", "to": to, "text": f"card to the {to}"}


def settle(
    s: ShoeState,
    d: Decision,
    player: tuple[str, ...],
    dealer: tuple[str, ...],
    decision: str | None,
    *,
    cards_out: int,
) -> None:
    """The hand's result; the shoe ends after it when the cut card made it the last."""
    d.add("war.result", shoe=s.shoe, hand=s.hand, **rules.result(player, dealer, decision))
    end_shoe_after(s, d, s.hand, cards_out=cards_out)
