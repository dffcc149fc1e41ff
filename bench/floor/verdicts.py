"""Issue 31's goals judged from one ``python -m bench.floor`` run: each met, missed, or not
measured here (and where it is), with its floor beside it and the stage it came from.

Apart from ``__main__`` (which runs the stages) so that the judging can be read and tested
on its own. The steady goals (CPU per event, its ratio to the bare loop, the true lag) are
judged from the stage at the goal's own size (``bench/floor/goal.py``: 2,500 tables at
5,000 events/s) when it ran; with ``--goal 0`` they come from the 500-table steady stage
(~1,000 events/s), and the row says so.
"""

from __future__ import annotations

from typing import Any


def report(out: dict[str, Any]) -> None:
    """Every goal of issue 31 with this run's figure and its floor, once all stages ran."""
    out["goals"] = goals(out)
    print_goals(out["goals"])
    for line in context(out):
        print(f"  {line}")


def print_goals(rows: list[dict[str, Any]]) -> None:
    print("goals (issue 31; each from the stage named after it):")
    for g in rows:
        shown = "-" if g["measured"] is None else g["measured"]
        floor = f"; floor {g['floor']}" if g.get("floor") else ""
        came = f"; from {g['from']}" if g.get("from") else ""
        print(
            f"  {g['goal']:<44} {shown!s:>8} {g['unit']:<8} goal {g['target']:g}: "
            f"{g['verdict']}{floor}{came}"
        )
    for line in ELSEWHERE:
        print(f"  {line}")


#: issue 31's goals for one bridge on this 2-core machine, as (what, key, target, unit,
#: which way is better): each is printed met, missed, or not measured here (and where)
GOALS: list[tuple[str, str, float | None, str, str]] = [
    ("bridge CPU per event, heartbeats included", "cpu", 150.0, "µs", "lower"),
    ("the same ÷ a bare publish loop's, same rate", "cpu_ratio", 1.5, "×", "lower"),
    ("true lag of any table at the steady rate", "lag", 1.0, "s", "lower"),
    ("catch-up: 600,000 events of a 10-min outage", "catchup", 60.0, "s", "lower"),
    ("two bridges, one stalled 10 min: dups+gaps", "stall", 0.0, "events", "lower"),
    ("storing again after the stream leader's loss", "leader", 5.0, "s", "lower"),
    ("3-site group: HQ delay p99, a link cut 5 min", "sites", 2.0, "s", "lower"),
    ("quiet tables' CPU per table-second", "quiet", 20.0, "µs", "lower"),
    ("5,000 head lookups at start", "heads", 1.0, "s", "lower"),
]
NOT_HERE = {
    "quiet": "--quiet 0 skipped it",
    "heads": "--heads 0 skipped it",
    "catchup": "--skip catchup",
    "stall": "--skip stall",
    "leader": "tests/test_floor_cluster.py records it when make floor runs it first",
    "sites": "tests/test_floor_site_link.py records it when make floor runs it first",
}
ELSEWHERE = [
    "a backend after retention verifies from signed checkpoints; forged ones refused: tests/test_floor_retention.py",
]
STEADY = ("cpu", "cpu_ratio", "lag")


def _steady(out: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The steady goals' figures and the stage they came from: the goal's size when
    ``bench/floor/goal.py`` ran, else the 500-table steady stage, said so."""
    g = out.get("goal")
    if g is not None:
        w = g["window"]
        return {
            "cpu": w["bridge_cpu_us_per_event"],
            "cpu_ratio": g["cpu_ratio_to_bare_loop"],
            "lag": w["true_lag_seconds_max"],
        }, f"the goal's size: {g['tables']:,} tables at {w['events_per_s']:,.0f} events/s"
    s = out.get("steady")
    if not s:
        return {}, None
    return {
        "cpu": s.get("bridge_cpu_us_per_event"),
        "cpu_ratio": s.get("cpu_ratio_to_bare_loop"),
        "lag": s.get("true_lag_seconds_max"),
    }, (
        f"the {s['tables']}-table steady stage at {s['events_per_s']:,.0f} events/s, "
        "not the goal's 5,000 (--goal 0 skipped the goal's size)"
    )


def context(out: dict[str, Any]) -> list[str]:
    """The 500-table steady figures, printed beside goals judged at the goal's size."""
    s = out.get("steady")
    if out.get("goal") is None or not s:
        return []
    return [
        f"{s['tables']}-table floor (context, not judged): {s['events_per_s']:,.0f} events/s, "
        f"{s['bridge_cpu_us_per_event']} µs an event, {s.get('cpu_ratio_to_bare_loop')}× "
        f"the bare loop, true lag up to {s['true_lag_seconds_max']} s"
    ]


def goals(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal with what this run measured (none is an assert: ``docs/performance.md``)."""
    cu, st = out.get("outage_catch_up"), out.get("stall")
    got, came = _steady(out)
    got |= {
        "quiet": out.get("quiet", {}).get("us_per_table_second"),
        # the slower of the two stream sizes: a lookup must not grow with the stream
        "heads": max(
            out.get("heads", {}).get("seconds_small", 0.0),
            out.get("heads", {}).get("seconds_large", 0.0),
        )
        or None,
    }
    floors = {}
    g = out.get("goal")
    if g is not None:
        floors["cpu_ratio"] = (
            f"{g['bare_loop']['cpu_us_per_message']:g} µs a message (bare nats-py loop, "
            f"same rate, {g['tables']:,} tables)"
        )
    elif out.get("bare_loop"):  # the 500-table stage's own bare loop
        floors["cpu_ratio"] = (
            f"{out['bare_loop']['cpu_us_per_message']:g} µs a message (bare nats-py loop, "
            f"same rate, {out['bare_loop']['tables']:,} tables)"
        )
    if cu is not None:  # bench/floor/catchup.py; unfinished: missed, with what was stored
        got["catchup"] = cu["stored_s"] if cu["finished"] else cu["config"]["timeout"]
        floors["catchup"] = (
            f"{cu['floor']['seconds_for_backlog']:g} s (bare nats-py, pipelined, same messages)"
            + ("" if cu["finished"] else f"; unfinished: {cu['stored']:,} of {cu['events']:,}")
        )
    if st is not None:  # bench/floor/stall.py: duplicates, gaps, chain errors, short tables
        got["stall"] = st["problems"]
        floors["stall"] = "0 (exactly once)"
    tests = out.get("from_tests", {})  # this make floor's tests (bench/floor/figures.py)
    if "leader_loss" in tests:
        got["leader"] = tests["leader_loss"]["stored_again_s"]
        if tests["leader_loss"].get("elected_s") is not None:  # what no client can beat
            floors["leader"] = (
                f"{tests['leader_loss']['elected_s']:g} s until the servers elected a new "
                "stream leader (nats-server's Raft: a follower waits 4-9 s, fixed in the server)"
            )
    if "sites" in tests:
        got["sites"] = tests["sites"]["hq_delay_p99_s"]
    rows = []
    for name, key, goal, unit, better in GOALS:
        value = got.get(key)
        if value is None:
            verdict = f"not measured here ({NOT_HERE.get(key, '')})"
        else:
            ok = value <= goal if better == "lower" else value >= goal
            verdict = "met" if ok else "missed"
        rows.append(
            {
                "goal": name,
                "measured": value,
                "target": goal,
                "unit": unit,
                "verdict": verdict,
                "floor": floors.get(key),
                "from": came if key in STEADY and value is not None else None,
            }
        )
    return rows
