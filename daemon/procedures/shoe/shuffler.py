"""The shuffler's reports at a shoe table: counts checked, faults and the door as alarms."""

from __future__ import annotations

from daemon.procedures.shoe.state import (
    IN_HAND,
    ShoeParts,
    ShoeState,
)
from daemon.table import (
    Decision,
    TableState,
    raise_alarm,
)
from drivers.readings import (
    Reading,
)
from drivers.shuffler_readings import (
    ShuffleCountMismatch,
    ShuffleDone,
    ShufflerDoorClosed,
    ShufflerDoorOpen,
    ShufflerFault,
    ShufflerJam,
    ShuffleStarted,
)

SHUFFLER_READINGS = (
    ShuffleStarted,
    ShuffleDone,
    ShuffleCountMismatch,
    ShufflerJam,
    ShufflerDoorOpen,
    ShufflerDoorClosed,
    ShufflerFault,
)


class ShoeShuffler(ShoeParts):
    """A shuffler's word is untrusted: a wrong count takes the cards out of play."""

    def _shuffler(self, t: TableState, s: ShoeState, d: Decision, dev: str, r: Reading) -> None:
        """The shuffler's word is untrusted: counts are checked, and no deck order is ever kept."""
        full = self.rules.decks * 52
        if isinstance(r, ShuffleStarted):
            d.add("shuffle.started", device=dev, shuffle_id=r.shuffle_id, decks=r.decks)
        elif isinstance(r, ShuffleDone):
            problems = []
            if r.decks != self.rules.decks:
                problems.append(f"{r.decks} decks shuffled, the table plays {self.rules.decks}")
            if r.cards != full:
                problems.append(f"{r.cards} cards counted, {full} expected")
            if r.rank_counts:
                bad = {k: v for k, v in r.rank_counts.items() if v != self.rules.decks * 4}
                if bad:
                    problems.append(f"rank counts off: {bad}")
            ok = not problems
            d.add(
                "shuffle.completed",
                device=dev,
                shuffle_id=r.shuffle_id,
                decks=r.decks,
                cards=r.cards,
                ok=ok,
                problems=problems,
            )
            if not ok:
                self._count_alarm(t, d, dev, r.shuffle_id, "; ".join(problems))
        elif isinstance(r, ShuffleCountMismatch):
            d.add(
                "shuffle.completed",
                device=dev,
                shuffle_id=r.shuffle_id,
                decks=self.rules.decks,
                cards=r.counted,
                ok=False,
                problems=[f"{r.counted} cards counted, {r.expected} expected"],
            )
            self._count_alarm(
                t, d, dev, r.shuffle_id, f"{r.counted} cards counted, {r.expected} expected"
            )
        elif isinstance(r, ShufflerFault | ShufflerJam):
            what = (
                f"fault {r.code}: {r.meaning}"
                if isinstance(r, ShufflerFault)
                else f"jam {r.where}".strip()
            )
            raise_alarm(
                t,
                d,
                "shuffler-fault",
                f"the shuffler reports {what}",
                rule="a shuffler malfunction mid-round ends the round, wagers returned "
                "(mini-baccarat rule 12.4)",
                action="clear the jam or fault, run the shuffler's self-test, then clear the alarm",
                device=dev,
            )
            if s.phase in IN_HAND and not s.demo:
                self.void_hand(
                    t,
                    s,
                    d,
                    reason="shuffler-fault",
                    by="table",
                    rule="mini-baccarat rule 12.4: wagers returned",
                )
        elif isinstance(r, ShufflerDoorOpen):
            raise_alarm(
                t,
                d,
                "shuffler-door-open",
                "the shuffler's door is open",
                rule="cards must not be reachable during play",
                action="close the door",
                severity="warning",
                device=dev,
            )
        elif isinstance(r, ShufflerDoorClosed):
            # the door's own alarm settles itself; a fault or a count never does
            for a in t.alarms.values():
                if a.kind == "shuffler-door-open" and a.device == dev:
                    d.add("alarm.cleared", id=a.id, by=dev, reason="door closed")

    def _count_alarm(
        self, t: TableState, d: Decision, dev: str, shuffle_id: int, what: str
    ) -> None:
        raise_alarm(
            t,
            d,
            "shuffle-count-mismatch",
            f"shuffle {shuffle_id}: {what}; the cards are out of play",
            rule="a counting shuffler's wrong count takes the deck out of play (COMAR 36.05.03.27 C)",
            action="take the cards out, recount or replace them, shuffle again",
            device=dev,
        )
