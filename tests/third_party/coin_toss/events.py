"""The coin toss's own event types, as ``tabled_client.events`` Structs: the daemon checks
every event it builds against them, as it does tabled's own."""

from __future__ import annotations

from tabled_client.events import Data


class CoinResultData(Data):
    toss: int
    side: str


class CoinVoidData(Data):
    toss: int
    reason: str
    rule: str
    by: str


EVENTS = {"coin.result": CoinResultData, "coin.void": CoinVoidData}
