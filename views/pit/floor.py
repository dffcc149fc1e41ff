"""The floor as the pit sees it: each table's state, folded from its events in JetStream.

Each table is a :class:`~views.display.state.DisplayState` (the same fold the table's own
screen uses), so a tile and the table's screen cannot disagree; the floor adds which
alarms are active where. Pure: the service feeds it from a ``FloorFollower``.
"""

from __future__ import annotations

from typing import Any

from views.display.state import DisplayState, Settings


class FloorState:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings(last=10)
        self.tables: dict[str, DisplayState] = {}
        self.last_time: dict[str, str] = {}
        self.events = 0

    def apply(self, table: str, journal_id: str, event: dict[str, Any]) -> None:
        s = self.tables.get(table)
        if s is None:
            s = self.tables[table] = DisplayState(table, self.settings)
        if s.journal_id != journal_id:
            s.reset(journal_id)  # a replaced journal: its seqs and alarm ids start again
        s.apply(event)
        self.last_time[table] = event["time"]
        self.events += 1

    def alarms(self) -> list[dict[str, Any]]:
        """Every active alarm on the floor, oldest first."""
        out = [
            {**a, "table": t, "journal_id": s.journal_id}
            for t, s in sorted(self.tables.items())
            for a in s.alarms.values()
        ]
        return sorted(out, key=lambda a: (a["at"], a["table"], a["id"]))

    def alarm(self, table: str, alarm: str) -> dict[str, Any] | None:
        s = self.tables.get(table)
        if s is None or alarm not in s.alarms:
            return None
        return {**s.alarms[alarm], "table": table, "journal_id": s.journal_id}
