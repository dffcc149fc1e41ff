"""The floor as the pit sees it: each table's state, folded from its events in JetStream.

Each table is a :class:`~views.display.state.DisplayState` (the same fold the table's own
screen uses), so a tile and the table's screen cannot disagree; the floor adds which
alarms are active where. Pure: the service feeds it from a ``FloorFollower``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from views.display.state import DisplayState, Settings, epoch

#: the events that settle one round, in every game
RESULTS = ("hand.result", "spin.result", "dice.result", "round.result")
DEVICE_HEALTH = {
    "device.connected": "ok",
    "device.stale": "stale",
    "device.disconnected": "disconnected",
}
RECENT = 30


class FloorState:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings(last=10)
        self.tables: dict[str, DisplayState] = {}
        self.last_time: dict[str, str] = {}
        self.events = 0
        #: each roulette table's spins, oldest first: what the wheel statistics count (a
        #: wheel is the same wheel after its journal is replaced: they are kept)
        self.spins: dict[str, list[dict[str, Any]]] = {}
        #: each table's settled rounds' times: what the pace counts
        self.rounds: dict[str, list[str]] = {}
        #: each table's devices as its device.* events last said: name → (health, time, why)
        self.devices: dict[str, dict[str, tuple[str, str, str]]] = {}
        #: each table's last events (seq, time, type): its page's "recent events"
        self.recent: dict[str, deque[tuple[int, str, str]]] = {}

    def apply(self, table: str, journal_id: str, event: dict[str, Any]) -> None:
        s = self.tables.get(table)
        if s is None:
            s = self.tables[table] = DisplayState(table, self.settings)
        if s.journal_id != journal_id:
            s.reset(journal_id)  # a replaced journal: its seqs and alarm ids start again
        s.apply(event)
        if event["type"] == "spin.result":
            d = event["data"]
            spin = {k: d.get(k) for k in ("number", "layout", "rotor_direction", "spin")}
            self.spins.setdefault(table, []).append(spin | {"time": event["time"]})
        t, d = event["type"], event["data"]
        if t in DEVICE_HEALTH:
            why = str(d.get("reason", ""))
            self.devices.setdefault(table, {})[d["device"]] = (DEVICE_HEALTH[t], event["time"], why)
        self.recent.setdefault(table, deque(maxlen=RECENT)).appendleft(
            (event["seq"], event["time"], t)
        )
        if event["type"] in RESULTS:
            self.rounds.setdefault(table, []).append(event["time"])
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


def pace(times: list[str]) -> dict[str, Any]:
    """Rounds per hour over the span of ``times`` (ISO, oldest first), and by UTC hour of day."""
    if not times:
        return {"rounds": 0, "per_hour": None, "by_hour": {}}
    t0, t1 = epoch(times[0]), epoch(times[-1])
    by_hour: dict[str, int] = {}
    for t in times:
        h = t[11:13]
        by_hour[h] = by_hour.get(h, 0) + 1
    per_hour = None if t1 <= t0 else round((len(times) - 1) * 3600 / (t1 - t0), 1)
    return {"rounds": len(times), "per_hour": per_hour, "by_hour": dict(sorted(by_hour.items()))}
