"""``make floor``'s catch-up, stall and goal-size stages (bench/floor/catchup.py, stall.py,
goal.py) at a few tables: each runs to the end against real processes and counts what it
must, so the 10-minute, 5,000- and 2,500-table versions ``make floor`` runs do not rot
between runs.

The figures are for ``docs/performance.md``, never asserted; what is asserted is what the
stages count (every event stored, verified, no duplicate, no gap), and that the counter
the stall's verdict rests on sees a duplicate and a gap when the stream holds them.
"""

from __future__ import annotations

import asyncio
import math

import nats
import pytest
from nats.js.api import StreamConfig

from bench.floor import catchup, goal, stall
from bench.floor.natsd import NatsServer, available
from bench.floor.verdicts import goals

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def test_the_catch_up_stage_stores_and_verifies_a_backlog_through_two_bridges(tmp_path):
    o = catchup.Outage(tables=20, per_table=10, bridges=2, floor_sample=1000, timeout=240)
    out = catchup.run(tmp_path, o)
    assert out["finished"] and out["stored"] == out["events"] == 200, out
    assert out["verified"]["tables"] == 20 and out["verified"]["events"] == 200, out
    # the floor's bare loop sends the bridge's conditions right: none refused
    fl = out["floor"]
    assert fl["messages"] == 200 and fl["refused_or_failed"] == 0, fl  # at most the backlog
    assert fl["seconds_for_backlog"] == round(200 / fl["per_s"], 1)


def test_the_stall_stage_counts_no_duplicate_and_no_gap_past_the_window(tmp_path):
    out = stall.run(tmp_path, tables=4, seconds=6.0, window=2.0)
    s = out["stream"]
    assert out["problems"] == 0, out
    assert s["tables"] == 4 and s["duplicates"] == s["gaps"] == s["chain_errors"] == 0, s
    assert out["events_dealt_during_stall"] > 0, out
    b = out["bridge_b_stalled"]
    # the stalled one woke to events the other had stored: refused, not stored again
    assert b["found_stored"] + b["skipped"] > 0, out


def test_the_stalls_count_sees_a_duplicate_and_a_gap(tmp_path):
    """``tally`` is what the stall's verdict rests on: a stream holding an event twice (under
    another message id here, so that the server's window lets it in: the same journal and
    seq) and a seq missing must count one of each, the chain check failing at the gap."""
    srv = NatsServer(tmp_path / "nats")
    srv.start()
    try:
        msgs = catchup.chains(1, 4)  # one table, seqs 1..4

        async def publish() -> None:
            nc = await nats.connect(srv.url)
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name="TABLES", subjects=["tables.>"]))
            for table, jid, seq, h, prev, raw in (msgs[0], msgs[1], msgs[1], msgs[3]):
                headers = {
                    "Tabled-Journal": jid,
                    "Tabled-Seq": str(seq),
                    "Tabled-Hash": h,
                    "Tabled-Prev": prev,
                    "Nats-Msg-Id": f"{table}:{jid}:{seq}",
                }
                # the second copy under another id: the window would drop the same one
                if seq == 2 and h == msgs[1][3]:
                    headers["Nats-Msg-Id"] += f"#{id(headers)}"
                await js.publish(f"tables.{table}.card.dealt", raw, headers=headers)
            await nc.close()

        asyncio.run(publish())
        t = msgs[0][0]
        got = asyncio.run(stall.tally(srv.url, {t: (msgs[0][1], 4), "absent": ("x", 1)}))
    finally:
        srv.stop()
    assert got["gaps"] == 1 and got["chain_errors"] == 1, got
    assert got["tables_short_of_head"] == 1, got  # "absent" has nothing
    assert got["events"] == 3 and got["duplicates"] == 1, got


def test_goals_print_the_stages_against_their_floors():
    out = {
        "outage_catch_up": {
            "finished": True,
            "stored_s": 75.0,
            "stored": 600_000,
            "events": 600_000,
            "config": {"timeout": 900.0},
            "floor": {"seconds_for_backlog": 55.0},
        },
        "stall": {"problems": 0},
    }
    rows = {r["goal"]: r for r in goals(out)}
    cu = rows["catch-up: 600,000 events of a 10-min outage"]
    assert cu["measured"] == 75.0 and cu["verdict"] == "missed" and "55 s" in cu["floor"]
    st = rows["two bridges, one stalled 10 min: dups+gaps"]
    assert st["measured"] == 0 and st["verdict"] == "met"
    out["stall"]["problems"] = 3
    out["outage_catch_up"].update(finished=False, stored=1000, stored_s=None)
    rows = {r["goal"]: r for r in goals(out)}
    assert rows["two bridges, one stalled 10 min: dups+gaps"]["verdict"] == "missed"
    cu = rows["catch-up: 600,000 events of a 10-min outage"]
    assert cu["verdict"] == "missed" and "unfinished: 1,000 of 600,000" in cu["floor"]
    assert not math.isinf(cu["measured"])
    # a stage skipped is said to be, not passed over
    rows = {r["goal"]: r for r in goals({})}
    assert rows["two bridges, one stalled 10 min: dups+gaps"]["verdict"].startswith(
        "not measured here"
    )


def test_the_floor_tests_figures_reach_bench_floors_goals(tmp_path, monkeypatch):
    """make floor's tests record the leader loss and the 3-site delay for bench.floor, which
    prints them with its own goals; without ``$TABLED_FLOOR_FIGURES`` nothing is written."""
    from bench.floor import figures

    monkeypatch.delenv(figures.ENV, raising=False)
    figures.record("leader_loss", {"stored_again_s": 1.0})
    assert figures.read() == {} and not list(tmp_path.iterdir())
    monkeypatch.setenv(figures.ENV, str(tmp_path / "floor-tests.json"))
    figures.record("leader_loss", {"stored_again_s": 6.2, "elected_s": 5.9})
    figures.record("sites", {"cut_s": 300, "hq_delay_p99_s": 0.008, "caught_up_s": 1.5})
    rows = {r["goal"]: r for r in goals({"from_tests": figures.read()})}
    leader = rows["storing again after the stream leader's loss"]
    assert (leader["measured"], leader["verdict"]) == (6.2, "missed")
    assert leader["floor"].startswith("5.9 s until the servers elected"), leader
    sites = rows["3-site group: HQ delay p99, a link cut 5 min"]
    assert (sites["measured"], sites["verdict"]) == (0.008, "met")


def test_the_goal_size_stage_measures_a_live_floor_and_its_bare_loop(tmp_path):
    """bench/floor/goal.py at 4 tables: the tables deal only once all are up, the window
    opens once the bridge stored each table's head, and every figure is there."""
    out = goal.run(tmp_path, tables=4, seconds=3.0, bare_seconds=2.0, timeout=120)
    assert out["all_up_s"] is not None and out["caught_up_s"] is not None, out
    w = out["window"]
    assert w["tables_up"] == 4 and w["events"] > 0, out
    assert w["true_lag_samples"] >= 1 and w["health_request_ms_median"] is not None, out
    assert out["bare_loop"]["tables"] == 4 and out["bare_loop"]["messages"] > 0, out
    assert out["cpu_ratio_to_bare_loop"] > 0 and out["stage_seconds"] > 0, out


def test_the_steady_goals_come_from_the_goal_size_stage_when_it_ran(capsys):
    """CPU, ratio and lag are judged at 2,500 tables when bench/floor/goal.py ran, the
    500-table figures printed beside them as context; with ``--goal 0`` they come from
    the 500-table stage and each row says so."""
    from bench.floor.verdicts import report

    steady = {
        "tables": 500,
        "events_per_s": 1000.0,
        "bridge_cpu_us_per_event": 170.0,
        "cpu_ratio_to_bare_loop": 0.9,
        "true_lag_seconds_max": 0.0,
    }
    size = {
        "tables": 2500,
        "window": {
            "events_per_s": 4990.0,
            "bridge_cpu_us_per_event": 120.0,
            "true_lag_seconds_max": 1.5,
        },
        "bare_loop": {"cpu_us_per_message": 75.0},
        "cpu_ratio_to_bare_loop": 1.6,
    }
    out = {
        "steady": steady,
        "goal": size,
        "bare_loop": {"cpu_us_per_message": 190.0, "tables": 500},
    }
    report(out)
    rows = {r["goal"]: r for r in out["goals"]}
    cpu = rows["bridge CPU per event, heartbeats included"]
    assert (cpu["measured"], cpu["verdict"]) == (120.0, "met")
    assert "2,500 tables at 4,990 events/s" in cpu["from"]
    ratio = rows["the same ÷ a bare publish loop's, same rate"]
    assert (ratio["measured"], ratio["verdict"]) == (1.6, "missed") and "75 µs" in ratio["floor"]
    lag = rows["true lag of any table at the steady rate"]
    assert (lag["measured"], lag["verdict"]) == (1.5, "missed")
    assert "500-table floor (context, not judged)" in capsys.readouterr().out
    del out["goal"]
    rows = {r["goal"]: r for r in goals(out)}
    cpu = rows["bridge CPU per event, heartbeats included"]
    assert (cpu["measured"], cpu["verdict"]) == (170.0, "missed")
    assert "--goal 0 skipped the goal's size" in cpu["from"]
    assert "190 µs" in rows["the same ÷ a bare publish loop's, same rate"]["floor"]
    # the quiet goal is not a steady one: no stage named on it
    assert rows["quiet tables' CPU per table-second"]["from"] is None
