"""sd_notify client against a real AF_UNIX datagram socket standing in for systemd.

PID 1 is not systemd on the CI machines, so the socket systemd would create is
created here instead (a path in tmp_path, or an abstract name) and the bytes the
daemon sends are read back. Datagram delivery over AF_UNIX is synchronous: once
``sendto`` returned, the message is already queued, so no test needs to wait.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.runtime.sdnotify import Notifier, watchdog_interval

MAX_SUN_PATH = 107  # sockaddr_un.sun_path is 108 bytes including the NUL


def _receiver() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.settimeout(5)  # a guard against a hang if nothing was sent, not a wait
    return sock


@pytest.fixture
def path_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket at a filesystem path, as systemd's /run/systemd/notify."""
    path = tmp_path / "notify.sock"
    short_dir = None
    if len(str(path)) > MAX_SUN_PATH:  # very long test names make long tmp paths
        short_dir = tempfile.TemporaryDirectory(prefix="sdn")
        path = Path(short_dir.name) / "notify.sock"
    sock = _receiver()
    sock.bind(str(path))
    try:
        yield sock, str(path)
    finally:
        sock.close()
        if short_dir is not None:
            short_dir.cleanup()


@pytest.fixture
def abstract_socket() -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket in the abstract namespace (``@name`` in NOTIFY_SOCKET)."""
    name = f"tabled-test-{uuid.uuid4().hex}"
    sock = _receiver()
    sock.bind("\0" + name)
    try:
        yield sock, "@" + name
    finally:
        sock.close()


@pytest.fixture(params=["path", "abstract"])
def notify_socket(request: pytest.FixtureRequest) -> tuple[socket.socket, str]:
    return request.getfixturevalue(f"{request.param}_socket")


def _recv(sock: socket.socket) -> bytes:
    return sock.recv(4096)


def test_ready_status_watchdog_stopping_arrive_in_order(notify_socket):
    receiver, address = notify_socket
    with Notifier.from_env({"NOTIFY_SOCKET": address}) as notifier:
        assert notifier.enabled
        assert notifier.ready() is True
        assert notifier.ready("table t1: journal replayed, 42 events") is True
        assert notifier.status("shoe 3, hand 17") is True
        assert notifier.watchdog() is True
        assert notifier.stopping() is True
        assert notifier.stopping("closing sockets") is True
        assert notifier.failures == 0

    assert _recv(receiver) == b"READY=1"
    assert _recv(receiver) == b"READY=1\nSTATUS=table t1: journal replayed, 42 events"
    assert _recv(receiver) == b"STATUS=shoe 3, hand 17"
    assert _recv(receiver) == b"WATCHDOG=1"
    assert _recv(receiver) == b"STOPPING=1"
    assert _recv(receiver) == b"STOPPING=1\nSTATUS=closing sockets"


def test_notify_fields_and_raw_string(path_socket):
    receiver, address = path_socket
    notifier = Notifier(address)
    assert notifier.notify(RELOADING=1, MONOTONIC_USEC=123) is True
    assert notifier.notify("READY=1\nSTATUS=raw") is True
    assert notifier.notify("READY=1", STATUS="both") is True
    notifier.close()

    assert _recv(receiver) == b"RELOADING=1\nMONOTONIC_USEC=123"
    assert _recv(receiver) == b"READY=1\nSTATUS=raw"
    assert _recv(receiver) == b"READY=1\nSTATUS=both"


def test_status_text_cannot_inject_another_assignment(path_socket):
    receiver, address = path_socket
    notifier = Notifier(address)
    # e.g. a device error message relayed into STATUS
    assert notifier.status("wheel: bad frame\nREADY=1\r\nWATCHDOG=1") is True
    notifier.close()

    data = _recv(receiver)
    assert data.count(b"\n") == 0
    assert data == b"STATUS=wheel: bad frame READY=1  WATCHDOG=1"


def test_notifier_reopens_after_close(path_socket):
    receiver, address = path_socket
    notifier = Notifier(address)
    notifier.close()
    notifier.close()  # idempotent
    assert notifier.watchdog() is True
    notifier.close()
    assert _recv(receiver) == b"WATCHDOG=1"


@pytest.mark.parametrize("environ", [{}, {"NOTIFY_SOCKET": ""}, {"NOTIFY_SOCKET": "@"}])
def test_without_notify_socket_every_call_is_a_noop(environ):
    notifier = Notifier.from_env(environ)
    assert not notifier.enabled
    assert notifier.ready("x") is False
    assert notifier.status("x") is False
    assert notifier.watchdog() is False
    assert notifier.stopping() is False
    assert notifier.notify(READY=1) is False
    assert notifier.notify("READY=1") is False
    assert notifier.failures == 0  # nothing was attempted, so nothing failed
    assert notifier._sock is None  # and no socket was opened
    notifier.close()


def test_unsupported_address_form_is_treated_as_no_socket():
    notifier = Notifier.from_env({"NOTIFY_SOCKET": "vsock:2:1234", "WATCHDOG_USEC": "10000000"})
    assert not notifier.enabled
    assert notifier.ready() is False
    assert notifier.watchdog_interval() is None


def test_empty_notification_is_not_sent(path_socket):
    receiver, address = path_socket
    notifier = Notifier(address)
    assert notifier.notify() is False
    assert notifier.notify("") is False
    assert notifier.watchdog() is True
    notifier.close()
    assert _recv(receiver) == b"WATCHDOG=1"  # the empty ones never reached the socket


def test_reads_process_environment_by_default(monkeypatch, path_socket):
    receiver, address = path_socket
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    monkeypatch.setenv("WATCHDOG_USEC", "3000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    notifier = Notifier.from_env()
    assert notifier.watchdog_interval() == 1.5
    assert notifier.ready() is True
    notifier.close()
    assert _recv(receiver) == b"READY=1"

    monkeypatch.delenv("NOTIFY_SOCKET")
    assert Notifier.from_env().enabled is False


def test_send_failure_is_counted_not_raised(tmp_path):
    missing = tmp_path / "nobody-listens.sock"
    notifier = Notifier(str(missing))
    assert notifier.enabled
    assert notifier.ready() is False
    assert notifier.watchdog() is False
    assert notifier.failures == 2
    assert isinstance(notifier.last_error, FileNotFoundError)
    assert "failures=2" in repr(notifier)
    notifier.close()


def test_socket_closed_by_systemd_is_a_counted_failure(tmp_path):
    path = tmp_path / "n.sock"
    receiver = _receiver()
    receiver.bind(str(path))
    notifier = Notifier(str(path))
    assert notifier.watchdog() is True
    receiver.close()  # systemd went away; its socket file stays behind
    assert notifier.watchdog() is False
    assert isinstance(notifier.last_error, ConnectionRefusedError)
    assert notifier.failures == 1
    notifier.close()


def test_full_receive_queue_does_not_block_the_caller(path_socket):
    """systemd not draining its socket must cost a counted failure, not a stall."""
    _receiver_sock, address = path_socket  # never read: its queue fills up
    notifier = Notifier(address)
    results: list[bool] = []

    def flood() -> None:
        for _ in range(10_000):
            results.append(notifier.watchdog())
            if not results[-1]:
                break

    worker = threading.Thread(target=flood, daemon=True)
    worker.start()
    worker.join(timeout=20)  # upper bound only; a non-blocking send finishes at once
    assert not worker.is_alive(), "send blocked on a full notify socket"
    assert results[-1] is False
    assert results.count(True) >= 1
    assert notifier.failures == 1
    assert isinstance(notifier.last_error, BlockingIOError)
    notifier.close()


# -- watchdog_interval -------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"WATCHDOG_USEC": "10000000"}, 5.0),  # WatchdogSec=10 → ping every 5 s
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "4242"}, 5.0),
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "4243"}, None),  # meant for another
        ({"WATCHDOG_USEC": "500000"}, 0.25),
        ({}, None),
        ({"WATCHDOG_USEC": ""}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-5"}, None),
        ({"WATCHDOG_USEC": "ten"}, None),
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "x"}, None),
    ],
)
def test_watchdog_interval(environ, expected):
    assert watchdog_interval(environ, pid=4242) == expected


def test_watchdog_interval_uses_own_pid_by_default():
    own = {"WATCHDOG_USEC": "8000000", "WATCHDOG_PID": str(os.getpid())}
    other = {"WATCHDOG_USEC": "8000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert watchdog_interval(own) == 4.0
    assert watchdog_interval(other) is None


def test_notifier_watchdog_interval_follows_environment(path_socket):
    _, address = path_socket
    env = {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "10000000"}
    assert Notifier.from_env(env).watchdog_interval() == 5.0
    assert Notifier.from_env({**env, "WATCHDOG_PID": "1"}, pid=2).watchdog_interval() is None
    # no socket to ping → no interval, whatever WATCHDOG_USEC says
    assert Notifier.from_env({"WATCHDOG_USEC": "10000000"}).watchdog_interval() is None


def test_child_process_inheriting_the_environment(path_socket):
    """A child sees the parent's WATCHDOG_PID, so it must not think it is watched.

    This is the leak WATCHDOG_PID exists for; the child still reaches the socket
    (NotifyAccess=main in the unit makes systemd ignore it there).
    """
    receiver, address = path_socket
    env = {
        **os.environ,
        "NOTIFY_SOCKET": address,
        "WATCHDOG_USEC": "10000000",
        "WATCHDOG_PID": str(os.getpid()),
    }
    code = (
        "from daemon.runtime.sdnotify import Notifier\n"
        "n = Notifier.from_env()\n"
        "print(n.watchdog_interval())\n"
        "print(n.ready('child'))\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.split() == ["None", "True"]
    assert _recv(receiver) == b"READY=1\nSTATUS=child"
