"""What the daemon writes when stdout is a pipe, the way journald sees it (issue 15).

Every line on stdout and stderr must be one JSON object with a syslog ``priority``;
no plain banner. When stdout is the stream named in ``$JOURNAL_STREAM`` (what
systemd sets for a unit logging to the journal), each line also starts with the
sd-daemon(3) ``<N>`` prefix journald turns into the entry's priority.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from daemon_harness import ROOT, Daemon, _die_with_parent, write_config

from daemon.runtime import logs

PREFIX = re.compile(rb"^<([0-7])>(.*)$")


def _read_all(fd: int, into: list[bytes], warned: threading.Event) -> threading.Thread:
    def run() -> None:
        with os.fdopen(fd, "rb") as f:
            for line in f:
                into.append(line.rstrip(b"\n"))
                if b'"priority":4' in line:
                    warned.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _run_daemon(cfg: Path, journal_stream: bool) -> tuple[list[bytes], list[bytes], int]:
    """Start tabled with stdout and stderr pipes, wait for READY, stop it; its lines."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("JOURNAL_STREAM", None)
    if journal_stream:
        st = os.fstat(out_w)
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    d = Daemon(cfg)
    env["NOTIFY_SOCKET"] = str(d.notify_path)
    out: list[bytes] = []
    err: list[bytes] = []
    warned = threading.Event()
    readers = [_read_all(out_r, out, warned), _read_all(err_r, err, warned)]
    try:
        d.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
            cwd=ROOT,
            env=env,
            stdout=out_w,
            stderr=err_w,
            preexec_fn=_die_with_parent,
        )
        os.close(out_w)
        os.close(err_w)
        d.wait_notify("READY=1", 20)
        # the missing second device's warning: a blocking read in a thread, not a poll
        assert warned.wait(20), f"no warning line; stdout: {out[-5:]}"
        rc = d.stop()
    finally:
        d.close()
        for t in readers:
            t.join(10)
    return out, err, rc


def _config(tmp: Path) -> Path:
    cfg = write_config(tmp, sim="seed = 3\npace = 0.05\n")
    text = cfg.read_text().replace('format = "json"', 'format = "auto"')
    # a device whose port does not exist: the daemon logs it as a warning
    text = text.replace(
        "[bus]",
        '[[devices]]\nname = "wheel"\ndriver = "shoe-line"\nport = "/dev/tabled-test-none"\n\n[bus]',
    )
    cfg.write_text(text)
    return cfg


def _parse(line: bytes) -> dict:
    obj = json.loads(line)
    assert isinstance(obj, dict), line
    assert obj["priority"] in range(8), line
    return obj


def test_every_line_on_a_pipe_is_json_with_a_priority(tmp_path):
    out, err, rc = _run_daemon(_config(tmp_path), journal_stream=False)
    assert rc == 0
    assert out, "the daemon wrote nothing to stdout"
    lines = [_parse(x) for x in out + err]
    events = {o["event"] for o in lines}
    assert "tabled ready" in events
    assert not any(b"publishing on" in x for x in out + err), "plain banner on a pipe"
    by_priority = {o["priority"] for o in lines}
    assert 6 in by_priority
    warnings = [o for o in lines if o["priority"] == 4]
    assert any(o.get("port") == "/dev/tabled-test-none" for o in warnings), sorted(events)


def test_journal_stream_gets_sd_daemon_prefixes(tmp_path):
    out, err, rc = _run_daemon(_config(tmp_path), journal_stream=True)
    assert rc == 0
    prios = set()
    for line in out:
        m = PREFIX.match(line)
        assert m, f"no <N> prefix: {line[:80]!r}"
        obj = _parse(m.group(2))
        assert int(m.group(1)) == obj["priority"]
        prios.add(obj["priority"])
    assert {4, 6} <= prios
    for line in err:  # stderr is not the journal stream named: plain JSON
        _parse(line)


def test_a_refused_config_is_one_json_line_at_priority_3(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[table]\nid = "x"\ngame = "baccarat"\n[bus]\npublish = 7\n')
    p = subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"},
        timeout=60,
    )
    assert p.returncode == 2
    lines = [_parse(x) for x in (p.stdout + p.stderr).splitlines()]
    assert len(lines) == 1, lines
    assert lines[0]["priority"] == 3
    assert lines[0]["config"] == str(cfg)
    assert any("publish" in x for x in lines[0]["problems"])


def test_journal_stream_is_only_the_stream_systemd_named(tmp_path, monkeypatch):
    f = (tmp_path / "x").open("w")
    st = os.fstat(f.fileno())
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
    assert logs.journal_stream(f)
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino + 1}")
    assert not logs.journal_stream(f)
    monkeypatch.setenv("JOURNAL_STREAM", "garbage")
    assert not logs.journal_stream(f)
    f.close()
