"""Where the time goes: py-spy on the daemon process (``--profile``).

py-spy samples the running ``tabled`` from outside (no code change, no
import in the daemon). Its raw output (collapsed stacks) is summarised
into the functions with the most samples, self and inclusive, so a
result file says where a missed goal's time went.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path


def pyspy() -> Path | None:
    exe = Path(sys.executable).with_name("py-spy")
    return exe if exe.exists() else None


def start_pyspy(pid: int, out: Path, rate: int = 1000) -> subprocess.Popen[bytes] | None:
    exe = pyspy()
    if exe is None:
        print("  (py-spy is not installed in the venv: no profile)", file=sys.stderr)
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [str(exe), "record", "--pid", str(pid), "--threads", "--rate", str(rate),
         "--format", "raw", "--output", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_pyspy(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)
    try:
        spy.wait(60)
    except subprocess.TimeoutExpired:
        spy.kill()


def summarise(raw: Path, top: int = 25) -> str:
    """Top functions by self and inclusive samples from py-spy's collapsed stacks."""
    selfc: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        k = int(n)
        frames = stack.split(";")
        total += k
        selfc[frames[-1]] += k
        for f in set(frames):
            incl[f] += k
    out = [f"{raw.name}: {total} samples"]
    out.append("-- self --")
    out += [f"{v / total:6.1%}  {f}" for f, v in selfc.most_common(top)]
    out.append("-- inclusive --")
    out += [f"{v / total:6.1%}  {f}" for f, v in incl.most_common(top)]
    return "\n".join(out)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(summarise(Path(p)))
