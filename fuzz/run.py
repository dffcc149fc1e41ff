"""Run the atheris fuzz targets and report how many inputs each one executed.

    python fuzz/run.py --seconds 60                 # every fuzz_*.py, 60 s each
    python fuzz/run.py --seconds 30 shoe_line dice  # some targets (file names, with or
                                                    # without ``fuzz_``; ``-`` or ``_``)
    python fuzz/run.py --runs 3000 --seed 1 --json  # a fixed number of inputs, as CI does
    python fuzz/run.py --seconds 5 path/to/fuzz_x.py # a target file kept elsewhere

Each target runs in its own process (libFuzzer exits the process when it is done).
A target whose invariant breaks is reported as a crash, with the input libFuzzer
saved (``crash-<sha1>`` under ``--artifacts``) and the end of its output; reproduce
it with ``python fuzz/fuzz_<name>.py <that file>``. The exit status is 1 when any
target crashed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
_EXECS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
_DONE = re.compile(r"Done (\d+) runs in")


def targets() -> dict[str, Path]:
    """Every target by its short name (``fuzz_shoe_line.py`` → ``shoe_line``)."""
    return {p.stem.removeprefix("fuzz_"): p for p in sorted(HERE.glob("fuzz_*.py"))}


def pick(names: list[str]) -> dict[str, Path]:
    known = targets()
    if not names:
        return known
    out: dict[str, Path] = {}
    for n in names:
        if n.endswith(".py") and Path(n).is_file():  # a target file anywhere
            out[Path(n).stem.removeprefix("fuzz_")] = Path(n).resolve()
            continue
        key = Path(n).stem.removeprefix("fuzz_").replace("-", "_")
        hits = [k for k in known if k == key] or [k for k in known if k.startswith(key)]
        if not hits:
            raise SystemExit(f"run.py: no fuzz target {n!r} (known: {', '.join(known)})")
        for k in hits:
            out[k] = known[k]
    return out


def run_one(
    name: str,
    path: Path,
    *,
    seconds: float | None,
    runs: int | None,
    seed: int | None,
    max_len: int | None,
    artifacts: Path,
) -> dict[str, object]:
    args = [
        sys.executable,
        str(path),
        "-print_final_stats=1",
        f"-artifact_prefix={artifacts}/{name}-",
        "-timeout=20",
    ]
    if seconds is not None:
        args.append(f"-max_total_time={max(1, round(seconds))}")
    if runs is not None:
        args.append(f"-runs={runs}")
    if seed is not None:
        args.append(f"-seed={seed}")
    if max_len is not None:
        args.append(f"-max_len={max_len}")
    t0 = time.monotonic()
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, errors="replace")
    elapsed = time.monotonic() - t0
    log = p.stdout + p.stderr
    m = _EXECS.search(log) or _DONE.search(log)
    execs = int(m.group(1)) if m else 0
    ok = p.returncode == 0
    return {
        "target": name,
        "ok": ok,
        "executions": execs,
        "seconds": round(elapsed, 2),
        "exec_per_s": round(execs / elapsed) if elapsed > 0 else 0,
        "returncode": p.returncode,
        "crashes": sorted(str(c) for c in artifacts.glob(f"{name}-*")),
        "tail": "" if ok else log[-4000:],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("target", nargs="*", help="targets to run (default: all)")
    ap.add_argument("--seconds", type=float, help="time per target")
    ap.add_argument("--runs", type=int, help="inputs per target (libFuzzer -runs)")
    ap.add_argument("--seed", type=int, help="libFuzzer seed, for a repeatable run")
    ap.add_argument("--max-len", type=int, help="longest input libFuzzer makes")
    ap.add_argument("--jobs", type=int, default=1, help="targets run at once")
    ap.add_argument("--artifacts", type=Path, help="where crashing inputs go (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="one JSON object per target")
    ap.add_argument("--list", action="store_true", help="list the targets and exit")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(targets()))
        return 0
    if a.seconds is None and a.runs is None:
        ap.error("give --seconds N and/or --runs N")
    chosen = pick(a.target)
    artifacts = a.artifacts or Path(tempfile.mkdtemp(prefix="tabled-fuzz-"))
    artifacts.mkdir(parents=True, exist_ok=True)

    def go(item: tuple[str, Path]) -> dict[str, object]:
        return run_one(
            item[0],
            item[1],
            seconds=a.seconds,
            runs=a.runs,
            seed=a.seed,
            max_len=a.max_len,
            artifacts=artifacts.resolve(),
        )

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(go, chosen.items()))
    failed = [r for r in results if not r["ok"]]
    if a.json:
        for r in results:
            print(json.dumps(r))
    else:
        print(f"{'target':<16} {'executions':>11} {'seconds':>8} {'exec/s':>8}  result")
        for r in results:
            print(
                f"{r['target']:<16} {r['executions']:>11} {r['seconds']:>8} "
                f"{r['exec_per_s']:>8}  {'ok' if r['ok'] else 'CRASH'}"
            )
        print(f"{'total':<16} {sum(int(r['executions']) for r in results):>11}")
        for r in failed:
            print(f"\n--- {r['target']} (exit {r['returncode']}) ---\n{r['tail']}", file=sys.stderr)
            for c in r["crashes"]:
                print(f"reproduce: python fuzz/fuzz_{r['target']}.py {c}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
