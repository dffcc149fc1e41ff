"""Measure proposed fixes before they are made: the latency run, once per variant.

    python -m bench.experiments [--cards N] [--repeat R] [NAME …]

Each experiment plays the same shoe session at both paces, tabled and the
floor interleaved as in ``make bench``, and prints latency (p50/p99/p99.9),
the part after the daemon read the bytes, and the CPU per event. Variants
run in turn, ``--repeat`` times each, alternating, so that the shared
machine's load falls on all of them alike. Results go to
bench/results/experiments.json. Not part of ``make bench``.

Experiments:

* ``baseline``: tabled as it is;
* ``timeline``: tabled as it is, the commit path timed stage by stage
  (bench.variant ``timeline``): write → read → pipeline → commit
  (append) → publish → subscriber, per card;
* ``log-warning``: ``[log] level = "warning"``: no info line per event;
* ``cpu-profile``: tabled as it is, cProfile on the loop's thread timed by its CPU clock
  (bench.variant); the stats of the last run are printed (top 25 by own time) and kept in
  bench/results/loop-<mode>.prof (``python -m pstats`` reads them);
* ``durable-floor``: tabled as it is against the durable relay (bench/relay.py with a
  journal: a SQLite commit per read, on one thread, before the publish): the least a
  process that commits every reading before publishing it costs;
* ``one-cpu``: the daemon pinned to one CPU (``taskset -c 1``, as
  systemd's ``CPUAffinity=`` would): its threads hand off without waking
  another CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from bench.latency import run_one
from bench.proc import ROOT
from bench.session import shoe_session

EXPERIMENTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "timeline": {"variant": "timeline"},
    "log-warning": {"log_level": "warning"},
    "one-cpu": {"cpus": "1"},
    "cpu-profile": {"variant": "cpu-profile"},
    "durable-floor": {"durable_floor": True},
}


def main() -> int:
    from bench.__main__ import as_installed

    as_installed()
    p = argparse.ArgumentParser(prog="python -m bench.experiments")
    p.add_argument("names", nargs="*", default=list(EXPERIMENTS))
    p.add_argument("--cards", type=int, default=3_000)
    p.add_argument("--repeat", type=int, default=2)
    a = p.parse_args()
    sess = shoe_session(cards=a.cards)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        n: {"paced": [], "full": []} for n in a.names
    }
    for i in range(a.repeat):
        for name in a.names:
            for mode, gap in (("paced", 0.0005), ("full", None)):
                print(f"[{i + 1}/{a.repeat}] {name} {mode}", flush=True)
                runs[name][mode].append(run_one(sess, gap, **EXPERIMENTS[name]))
    out: dict[str, Any] = {}
    print(
        f"\n{'':24} {'mode':6} {'p50':>6} {'p99':>6} {'p99.9':>6} {'read→sub p50':>13} {'CPU us/event':>13} {'other load':>10}"
        f" {'floor p99':>9} {'floor CPU us/frame':>18}"
    )
    for name, modes in runs.items():
        out[name] = {}
        for mode, rs in modes.items():
            med = {
                k: statistics.median(r["tabled_ms"][k] for r in rs) for k in ("p50", "p99", "p99_9")
            }
            rsub = statistics.median(
                r["tabled_read_to_sub_ms"]["p50"] for r in rs if r["tabled_read_to_sub_ms"]
            )
            cpu = statistics.median(r["tabled_cpu_us_per_event"] for r in rs)
            load = statistics.median(r["machine_load"]["other_cores"] for r in rs)
            fp99 = statistics.median(r["floor_ms"]["p99"] for r in rs)
            fcpu = statistics.median(r["floor_cpu_us_per_frame"] for r in rs)
            out[name][mode] = {
                "median_ms": med,
                "read_to_sub_p50_ms": rsub,
                "cpu_us_per_event": cpu,
                "other_cores": load,
                "floor_p99_ms": fp99,
                "floor_cpu_us_per_frame": fcpu,
                "runs": rs,
            }
            print(
                f"{name:24} {mode:6} {med['p50']:6.2f} {med['p99']:6.2f} {med['p99_9']:6.2f} {rsub:13.2f} {cpu:13.1f} {load:10.2f}"
                f" {fp99:9.2f} {fcpu:18.1f}"
            )
            if rs[-1].get("cpu_profile"):
                _print_profile(ROOT / rs[-1]["cpu_profile"])
            for k, x in (rs[-1].get("stages_ms") or {}).items():
                print(f"    {k:32} p50 {x['p50']:7.3f}  p99 {x['p99']:7.3f}  mean {x['mean']:7.3f}")
    (ROOT / "bench" / "results" / "experiments.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


def _print_profile(path: Any) -> None:
    import pstats

    print(f"    the loop's CPU, by own time ({path.relative_to(ROOT)}):")
    pstats.Stats(str(path)).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    raise SystemExit(main())
