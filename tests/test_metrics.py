"""The opt-in Prometheus endpoint of a running daemon, read with prometheus_client's own parser.

A real daemon with a simulated shoe that sends line noise and an unreadable card:
after the alarm is on the bus, ``/metrics`` must show per-device health and
counters, journal commit latency, bus counters, alarms by kind and events by
type, with the values the daemon's own status gives.
"""

from __future__ import annotations

import json
import re
import urllib.request

from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config
from prometheus_client.parser import text_string_to_metric_families

from daemon.bus.subscriber import Follower


def _config(tmp_path):
    cfg = write_config(
        tmp_path,
        sim='seed = 3\npace = 0.005\nerrors = ["garbage", "unreadable"]\n',
        extra="\n[metrics]\nport = 0\n",
    )
    cfg.write_text(
        cfg.read_text().replace(
            'encoding = "rank-suit"', 'encoding = "rank-suit"\nread_error_code = "ERR"'
        )
    )
    return cfg


def _metrics_url(d: Daemon) -> str:
    for line in d.log.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("event") == "metrics":
            return obj["url"]
    raise AssertionError("the daemon did not log its metrics endpoint")


def scrape(url: str) -> dict[str, dict[tuple, float]]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        out.setdefault(fam.name, {})  # a family with no samples now (no alarm) is still served
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_metrics_show_devices_journal_bus_alarms_and_events(tmp_path):
    cfg = _config(tmp_path)
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    try:
        d.start()
        url = _metrics_url(d)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        # wait on the bus (gaps replayed, no polling) for the unreadable card's alarm
        f = Follower(pub, rep, table="it", last_seq=0)
        assert any(ev.type == "alarm.raised" for ev in _until_alarm(f))
        m = scrape(url)
        status = json.loads(tablectl(cfg, "--json", "status").stdout)
        shoe = (("device", "shoe"),)

        assert m["tabled_device_health"][(("device", "shoe"), ("health", "ok"))] == 1.0
        assert m["tabled_device_health"][(("device", "shoe"), ("health", "stale"))] == 0.0
        assert m["tabled_device_up"][shoe] == 1.0
        (dev,) = status["devices"]  # the daemon's own figures, read after the scrape
        assert 1 <= m["tabled_device_frames_total"][shoe] <= dev["frames"]
        assert m["tabled_device_malformed_total"][shoe] == dev["malformed"] >= 1, "line noise"
        assert shoe in m["tabled_device_unknown_total"]
        assert shoe in m["tabled_device_reconnects_total"]
        assert m["tabled_device_last_frame_age_seconds"][shoe] >= 0

        assert m["tabled_journal_commit_seconds_count"][()] >= 2
        assert m["tabled_journal_commit_seconds_sum"][()] > 0
        assert m["tabled_journal_commit_failures_total"][()] == 0
        assert m["tabled_journal_ok"][()] == 1.0
        assert m["tabled_journal_last_seq"][()] >= 3

        assert m["tabled_bus_published_total"][()] >= 2
        assert () in m["tabled_bus_dropped_total"]
        assert () in m["tabled_bus_replay_requests_total"]

        kinds = {a["kind"] for a in status["alarms"]}
        assert kinds, status["alarms"]
        for kind in kinds:
            assert m["tabled_alarms_active"][(("kind", kind),)] >= 1
            assert m["tabled_alarms_raised_total"][(("kind", kind),)] >= 1
        events = {dict(k)["type"]: v for k, v in m["tabled_events_total"].items()}
        assert events["daemon.started"] == 1
        assert events["alarm.raised"] >= 1
        assert sum(events.values()) <= m["tabled_journal_last_seq"][()]

        # the counters move: the supervisor enters the card, and more events are counted
        r = tablectl(cfg, "--actor", "pit", "card", "KD")
        assert r.returncode == 0, r.stderr
        again = scrape(url)
        assert again["tabled_device_frames_total"][shoe] >= m["tabled_device_frames_total"][shoe]
        assert sum(again["tabled_events_total"].values()) > sum(m["tabled_events_total"].values())
        # every name docs/operations.md shows (its table and its alert rules) is served
        doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
        section = doc[doc.index("### Metrics") : doc.index("### Watchdog")]
        named = set(re.findall(r"\btabled_[a-z_]+", section))
        assert len(named) >= 17
        missing = {n for n in named if n not in again and f"{n}_count" not in again}
        assert not missing, f"docs/operations.md names metrics the daemon does not serve: {missing}"
        assert d.stop() == 0
    finally:
        d.close()


def _until_alarm(f: Follower):
    for ev in f.events(timeout=30):
        yield ev
        if ev.type == "alarm.raised":
            return


def test_no_endpoint_unless_asked(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        assert not [
            line
            for line in d.log.read_text().splitlines()
            if json.loads(line)["event"] == "metrics"
        ]
        assert d.stop() == 0
    finally:
        d.close()
