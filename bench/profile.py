"""Where the time goes: py-spy on the daemon process (``--profile``).

py-spy samples the running ``tabled`` from outside (no code change, no
import in the daemon), every thread, 1,000 times a second, and keeps only
the samples where the thread was running (no ``--idle``): a thread asleep in
the kernel, the loop in ``epoll`` or in the commit's fsync, is not sampled,
so the shares are shares of CPU, not of wall time (with ``--idle`` the loop's
fsync, which it now waits for itself, was three quarters of its "busy"
samples). Its raw output (collapsed stacks) is summarised per thread: what
is left of waiting leaves (``IDLE``) is counted as idle; the rest is split by
layer (protocol, table, journal, publish, logging, asyncio machinery…) and
by function, self and inclusive.

    python -m bench.profile bench/results/profile/latency-shoe-full.txt
    python -m bench.profile --per-event bench/results/latest.json shoe full \
        bench/results/profile/latency-shoe-full.txt

``--per-event`` turns the shares into CPU µs per committed event: each Python
thread's busy share of a layer times that thread's CPU per event in the same
run (``tabled_cpu_by_thread_s`` from ``/proc``); the ZeroMQ I/O thread, which
py-spy cannot see, is one line of its own.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

#: a leaf frame that means "this thread is waiting for work"
IDLE = (
    "EpollSelector.select (selectors.py",
    "_worker (concurrent/futures/thread.py:81)",
    "Condition.wait (threading.py",
)
#: layers, by the file a frame is in; the leaf-most frame with a layer decides
LAYERS: tuple[tuple[str, str], ...] = (
    ("daemon/journal/", "journal: seal + SQLite (+ fsync in COMMIT)"),
    ("daemon/journal/events.py", "journal: seal + SQLite (+ fsync in COMMIT)"),
    ("daemon/bus/publisher.py", "publish (zmq)"),
    ("daemon/bus/bus.py", "publish (zmq)"),
    ("structlog/", "logging (structlog JSON lines)"),
    ("daemon/runtime/logs.py", "logging (structlog JSON lines)"),
    ("log_events (daemon/runtime/event_log.py", "logging (structlog JSON lines)"),
    ("drivers/shoe_line.py", "protocol (bytes → readings)"),
    ("drivers/base.py", "protocol (bytes → readings)"),
    ("drivers/cammegh/", "protocol (bytes → readings)"),
    ("drivers/framing.py", "protocol (bytes → readings)"),
    ("drivers/card_codes.py", "protocol (bytes → readings)"),
    ("daemon/table/table.py", "table (decide/apply)"),
    ("daemon/procedures/", "table (decide/apply)"),
    ("daemon/games/", "table (decide/apply)"),
    ("drivers/serial.py", "serial transport + device runner"),
    ("drivers/serial_links.py", "serial transport + device runner"),
    ("daemon/runtime/devices.py", "serial transport + device runner"),
    ("daemon/runtime/tracer.py", "serial transport + device runner"),
    ("daemon/bus/control.py", "control socket"),
    ("daemon/pipeline/pipeline.py", "pipeline (queue, writer hand-off)"),
    ("daemon/pipeline/writer.py", "pipeline (queue, writer hand-off)"),
    ("daemon/pipeline/decide_batch.py", "pipeline (queue, writer hand-off)"),
)
#: library layers, used only when no frame of ours is on the stack
LIBRARY: tuple[tuple[str, str], ...] = (
    ("concurrent/futures/", "thread hand-off (futures, self-pipe)"),
    ("asyncio/", "asyncio loop machinery"),
    ("zmq/", "zmq (outside a daemon frame)"),
)


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
        [
            str(exe),
            "record",
            "--pid",
            str(pid),
            "--threads",
            "--rate",
            str(rate),
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_pyspy(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)
    try:
        spy.wait(60)
    except subprocess.TimeoutExpired:
        spy.kill()


_LINE = re.compile(r":\d+\)$")


def _layer(frames: list[str]) -> str:
    """The leaf-most frame of ours decides (a zmq send under Bus.publish is publishing)."""
    for table in (LAYERS, LIBRARY):
        for f in reversed(frames):
            for key, name in table:
                if key in f:
                    return name
    return "other"


def _threads(raw: Path) -> dict[str, list[tuple[list[str], int]]]:
    per: dict[str, list[tuple[list[str], int]]] = defaultdict(list)
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit() or not stack:
            continue
        frames = stack.split(";")
        thread = re.sub(r"^thread \(\d+\): ", "", frames[0])
        per[thread].append((frames[1:], int(n)))
    return per


def per_event(raw: Path, cpu_by_thread: dict[str, float], events: int) -> list[tuple[float, str]]:
    """(CPU µs per event, "layer (thread)"), largest first: see the module's docstring."""
    cpu: Counter[str] = Counter()
    exact = any(name.endswith(" cpu") for name in cpu_by_thread)
    for name, seconds in cpu_by_thread.items():
        role, kind = name.rsplit(" ", 1)
        if kind == "cpu" or not exact:  # the scheduler's runtime where there is one, else ticks
            cpu[role] += seconds
    out: list[tuple[float, str]] = []
    for thread, stacks in _threads(raw).items():
        who = "main (asyncio loop)" if thread == "MainThread" else "other python threads"
        busy = [(f, n) for f, n in stacks if f and not any(f[-1].startswith(i) for i in IDLE)]
        nb = sum(n for _, n in busy)
        if not nb or who not in cpu:
            continue
        layers: Counter[str] = Counter()
        for f, n in busy:
            layers[_layer(f)] += n
        per_ev = cpu[who] / events * 1e6
        out += [(per_ev * v / nb, f"{k} ({thread})") for k, v in layers.items()]
    if "zmq I/O" in cpu:
        out.append((cpu["zmq I/O"] / events * 1e6, "ZeroMQ I/O thread (libzmq)"))
    return sorted(out, reverse=True)


def summarise(raw: Path, top: int = 15) -> str:
    """Per thread: idle share, busy share by layer, top functions (self and inclusive)."""
    per = _threads(raw)
    out = [f"{raw.name}"]
    for thread, stacks in sorted(per.items(), key=lambda kv: -sum(n for _, n in kv[1])):
        total = sum(n for _, n in stacks)
        busy = [(f, n) for f, n in stacks if f and not any(f[-1].startswith(i) for i in IDLE)]
        nb = sum(n for _, n in busy)
        out.append(f"\n== {thread}: {total} samples, busy {nb / total:.1%} ==")
        if not nb:
            continue
        layers: Counter[str] = Counter()
        selfc: Counter[str] = Counter()
        incl: Counter[str] = Counter()
        for f, n in busy:
            layers[_layer(f)] += n
            selfc[_LINE.sub(")", f[-1])] += n
            for fn in {_LINE.sub(")", x) for x in f}:
                incl[fn] += n
        out.append("-- busy samples by layer --")
        out += [f"{v / nb:6.1%}  {k}" for k, v in layers.most_common()]
        out.append("-- self (busy) --")
        out += [f"{v / nb:6.1%}  {k}" for k, v in selfc.most_common(top)]
        out.append("-- inclusive (busy) --")
        out += [f"{v / nb:6.1%}  {k}" for k, v in incl.most_common(top + 10)]
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--per-event"]:
        import json

        result, dev, mode, raw_path = sys.argv[2:6]
        run = json.loads(Path(result).read_text())["results"]["latency"][dev][mode]
        rows = per_event(Path(raw_path), run["tabled_cpu_by_thread_s"], run["events"])
        print(f"{dev} {mode}: {run['tabled_cpu_us_per_event']} us CPU per event in all")
        for us, what in rows:
            print(f"{us:7.1f} us  {what}")
    else:
        for p in sys.argv[1:]:
            print(summarise(Path(p)))
