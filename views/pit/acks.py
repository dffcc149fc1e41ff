"""Acknowledgements, kept in a JetStream key-value bucket: they survive the pit view's restarts.

One key per alarm, ``<table>.<journal id>.<alarm id>`` (an alarm id is only unique within
a table's journal), its value who acknowledged it, when and with what note. The pit view
reads the bucket whole at start; a pit boss's acknowledgement is written before the page
says it is done.
"""

from __future__ import annotations

import json
from typing import Any

BUCKET = "PIT_ACKS"


def key(table: str, journal_id: str, alarm: str) -> str:
    return f"{table}.{journal_id}.{alarm}"


class AckStore:
    def __init__(self, js: Any, bucket: str = BUCKET) -> None:
        self.js = js
        self.bucket = bucket
        self.kv: Any = None
        self.acks: dict[str, dict[str, Any]] = {}

    async def open(self) -> None:
        try:
            self.kv = await self.js.key_value(self.bucket)
        except Exception:  # nats.js.errors.BucketNotFoundError, by version
            self.kv = await self.js.create_key_value(bucket=self.bucket, history=5)
        try:
            keys = await self.kv.keys()
        except Exception:  # an empty bucket: NoKeysError
            keys = []
        for k in keys:
            entry = await self.kv.get(k)
            if entry.value:
                self.acks[k] = json.loads(entry.value)

    def get(self, table: str, journal_id: str, alarm: str) -> dict[str, Any] | None:
        return self.acks.get(key(table, journal_id, alarm))

    async def put(self, table: str, journal_id: str, alarm: str, ack: dict[str, Any]) -> None:
        k = key(table, journal_id, alarm)
        await self.kv.put(k, json.dumps(ack, sort_keys=True).encode())
        self.acks[k] = ack
