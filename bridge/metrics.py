"""The bridge's HTTP endpoint: ``/metrics`` (Prometheus) and ``/status`` (JSON), read live.

Both are built from the bridge's status at each request, so counting an event costs
nothing more than the counter the status already keeps. A small asyncio server on the
bridge's own loop: a scrape sees the state the tables' tasks left, never a torn one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

_COUNTERS = {
    "published": "events stored in JetStream",
    "duplicates": "events found stored already (an earlier try, or another bridge)",
    "skipped": "events another bridge stored before this one could (active-active)",
    "batches": "atomic batches stored (a backlog's events, one round trip a batch)",
    "quarantined": "events of a rolled-back table kept aside in the quarantine stream",
    "publish_errors": "publish attempts that failed and were retried",
    "repairs": "replays asked of the table (catch-up and gap repair)",
    "replay_errors": "replays that failed (no answer, busy, error)",
    "dropped": "live events dropped from the table's full inbox (replayed from the table)",
    "journal_changes": "times the table's journal was replaced (new journal id)",
    "restarts": "times the table's follower failed and was restarted",
}


class StatusCollector:
    def __init__(self, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        s = self.status()

        def gauge(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"tabled_bridge_{name}", doc, labels=["table"])

        lag = gauge("lag_events", "events the table committed that JetStream has not acked")
        lag_s = gauge("lag_seconds", "age of the oldest event not stored yet (0 when caught up)")
        up = gauge("table_up", "1 while the table's heartbeats arrive")
        seq = gauge("stored_seq", "last seq of the table stored in JetStream")
        broken = gauge("chain_broken", "1 when the table's hash chain broke (not bridged)")
        rolled = gauge("rolled_back", "1 when the table's journal went back (quarantined)")
        counters = {
            k: CounterMetricFamily(f"tabled_bridge_{k}", h, labels=["table"])
            for k, h in _COUNTERS.items()
        }
        for tid, t in s["tables"].items():
            lag.add_metric([tid], float(t["lag_events"] or 0))
            lag_s.add_metric([tid], float(t["lag_seconds"]))
            up.add_metric([tid], 1.0 if t["up"] else 0.0)
            seq.add_metric([tid], float(t["stored_seq"]))
            broken.add_metric([tid], 1.0 if t["state"] == "chain-broken" else 0.0)
            rolled.add_metric([tid], 1.0 if t["state"] == "rolled-back" else 0.0)
            for k, c in counters.items():
                c.add_metric([tid], float(t[k]))
        nats_up = GaugeMetricFamily("tabled_bridge_nats_connected", "1 while NATS is connected")
        nats_up.add_metric([], 1.0 if s["nats"]["state"] == "connected" else 0.0)
        drops = CounterMetricFamily("tabled_bridge_nats_disconnects", "times NATS went away")
        drops.add_metric([], float(s["nats"]["disconnects"]))
        yield from (lag, lag_s, up, seq, broken, rolled, *counters.values(), nats_up, drops)


async def serve(
    listen: str,
    status: Callable[[], dict[str, Any]],
    health: Callable[[], dict[str, Any]] | None = None,
) -> asyncio.Server:
    """``GET /metrics``, ``GET /status`` and ``GET /health`` on ``host:port``."""
    host, _, port = listen.rpartition(":")
    reg = CollectorRegistry(auto_describe=False)
    reg.register(StatusCollector(status))  # type: ignore[arg-type]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            parts = head.split(b" ", 2)
            path = parts[1].split(b"?")[0] if len(parts) > 1 else b""
            if parts[0] != b"GET":
                code, ctype, body = "405 Method Not Allowed", "text/plain", b"GET only\n"
            elif path == b"/metrics":
                code, ctype, body = "200 OK", "text/plain; version=0.0.4", generate_latest(reg)
            elif path == b"/status":
                code, ctype = "200 OK", "application/json"
                body = json.dumps(status(), sort_keys=True).encode()
            elif path == b"/health" and health is not None:
                code, ctype = "200 OK", "application/json"
                body = json.dumps(health(), sort_keys=True).encode()
            else:
                code, ctype = "404 Not Found", "text/plain"
                body = b"/metrics, /status or /health\n"
            writer.write(
                f"HTTP/1.1 {code}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host or "127.0.0.1", int(port))
