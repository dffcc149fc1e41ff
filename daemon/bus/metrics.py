"""The opt-in Prometheus endpoint: what a fleet's monitoring scrapes from each table PC.

``[metrics] port`` turns it on, on ``127.0.0.1`` unless ``address`` says otherwise
(a scraper on the PC, or a reverse proxy, reaches it; the table's network does not).
prometheus_client does the exposition; this module only says what is measured, and
``daemon/bus/metrics_http.py`` serves it on the loop, with a fixed number of connections.
Device, bus and alarm figures are read at scrape time from the daemon's own
counters (one source of truth with ``tablectl status``); commit latency, commit
failures and events by type are counted as they happen. The names and a sample
alert rule are in docs/operations.md, "Metrics".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

HEALTHS = ("ok", "stale", "disconnected")


class _Live(Collector):
    """Figures read from the running daemon at each scrape."""

    def __init__(self, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status

    def collect(self) -> Iterable[Metric]:
        st = self.status()
        health = GaugeMetricFamily(
            "tabled_device_health", "1 for the device's current health", labels=["device", "health"]
        )
        up = GaugeMetricFamily("tabled_device_up", "1 when the device is ok", labels=["device"])
        age = GaugeMetricFamily(
            "tabled_device_last_frame_age_seconds",
            "seconds since the device's last frame (absent before the first)",
            labels=["device"],
        )
        counters = {
            name: CounterMetricFamily(f"tabled_device_{name}", text, labels=["device"])
            for name, text in (
                ("frames", "frames read from the device"),
                ("malformed", "garbage from the device, counted and dropped"),
                ("unknown", "well-formed frames the protocol does not know"),
                ("reconnects", "successful re-opens after the first open"),
            )
        }
        for d in st["devices"]:
            name = d["name"]
            for h in HEALTHS:
                health.add_metric([name, h], 1.0 if d["health"] == h else 0.0)
            up.add_metric([name], 1.0 if d["health"] == "ok" else 0.0)
            if d.get("last_frame_age") is not None:
                age.add_metric([name], float(d["last_frame_age"]))
            for key, fam in counters.items():
                fam.add_metric([name], float(d.get(key) or 0))
        yield from (health, up, age, *counters.values())

        alarms = GaugeMetricFamily(
            "tabled_alarms_active", "latched alarms, by kind", labels=["kind"]
        )
        kinds: dict[str, int] = {}
        for a in st["alarms"]:
            kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
        for kind, n in sorted(kinds.items()):
            alarms.add_metric([kind], float(n))
        yield alarms

        bus = st["bus"]
        for key, name, text in (
            ("published", "tabled_bus_published", "events published on the bus"),
            (
                "dropped",
                "tabled_bus_dropped",
                "messages the bus could not queue (subscribers see a seq gap)",
            ),
            ("replay_requests", "tabled_bus_replay_requests", "replay requests served"),
            ("replay_errors", "tabled_bus_replay_errors", "replay requests that failed"),
        ):
            c = CounterMetricFamily(name, text)
            c.add_metric([], float(bus.get(key, 0)))
            yield c
        ok = GaugeMetricFamily("tabled_journal_ok", "1 while journal commits succeed")
        ok.add_metric([], 1.0 if st["journal_ok"] else 0.0)
        seq = GaugeMetricFamily("tabled_journal_last_seq", "seq of the last committed event")
        seq.add_metric([], float(st["last_seq"]))
        yield ok
        yield seq


class Metrics:
    """The registry, the counters fed as things happen, and the HTTP endpoint."""

    def __init__(self, table: str, status: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_Live(status))
        self.commit_seconds = Histogram(
            "tabled_journal_commit_seconds",
            "time to commit one batch of events to the journal",
            registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
        )
        self.commit_failures = Counter(
            "tabled_journal_commit_failures", "journal commits that failed", registry=self.registry
        )
        self.events = Counter(
            "tabled_events", "committed events, by type", ["type"], registry=self.registry
        )
        self.alarms_raised = Counter(
            "tabled_alarms_raised", "alarms raised, by kind", ["kind"], registry=self.registry
        )
        self._by_type: dict[str, Any] = {}
        self._server: Any = None

    def on_commit(self, seconds: float, ok: bool) -> None:
        if ok:
            self.commit_seconds.observe(seconds)
        else:
            self.commit_failures.inc()

    def on_events(self, events: Sequence[Any]) -> None:
        by_type = self._by_type
        for ev in events:
            # each type's child once (``labels`` takes a lock and builds its key: ~2 µs an event)
            child = by_type.get(ev.type)
            if child is None:
                child = by_type[ev.type] = self.events.labels(ev.type)
            child.inc()
            if ev.type == "alarm.raised":
                self.alarms_raised.labels(str(ev.data.get("kind", "?"))).inc()

    def serve(self, address: str, port: int, cap: int = 8) -> int:
        """Start the endpoint on the running loop, ``cap`` connections at most; its port."""
        from daemon.bus.metrics_http import MetricsServer

        self._server = MetricsServer(
            lambda: generate_latest(self.registry), CONTENT_TYPE_LATEST, cap=cap
        )
        return self._server.start(address, port)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
