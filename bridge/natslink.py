"""The bridge's dealings with NATS that are not about a table: who it is, which servers it
accepts, which errors mean "try again" and which "give up", and the floor's stream.

Apart from ``bridge/core.py`` (which follows the tables and stores their events) so that
each stays one job and under 400 lines.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.js.api import StorageType, StreamConfig

from bridge.config import Nats

log = structlog.get_logger("tabled.bridge")

#: what a publish can meet while NATS or JetStream is away or restarting: retried
RETRY = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    asyncio.TimeoutError,
)


#: what a server or TLS says when it will never let this bridge in as configured
REFUSED = (
    nats.errors.AuthorizationError,
    nats.errors.InvalidUserCredentialsError,
    nats.errors.SecureConnRequiredError,
    nats.errors.SecureConnWantedError,
    nats.errors.SecureConnFailedError,
    ssl.SSLError,
)


def store_full(e: BaseException) -> bool:
    """JetStream refused a publish for want of room (max bytes, messages, or its storage)."""
    text = str(e).lower()
    return any(
        w in text
        for w in ("maximum bytes", "maximum messages", "insufficient resources", "storage")
    )


class NatsUnreachable(Exception):
    """The bridge cannot start: NATS refused it or did not answer."""


#: the oldest nats-server the bridge runs against (docs/floor.md, Server versions;
#: docs/decisions.md): 2.12 brought atomic batch publish, which a table's backlog goes as
#: (an older server would store a batch's messages one by one, only the first of them
#: conditional), after 2.11's expected last sequence of a wildcard subject
#: (``Nats-Expected-Last-Subject-Sequence-Subject``, one table's subjects), 2.10's sources
#: that take a publish without ``Nats-Expected-Stream`` (2.10.14) and the clustered
#: expected-sequence fixes (nats-server #4320, #5794)
MIN_SERVER = (2, 12, 0)


def server_version(text: str) -> tuple[int, int, int] | None:
    """``2.11.3`` (or ``2.12.0-RC.1``) as numbers; None for what is not a version."""
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]))


def too_old(text: str) -> str | None:
    """Why a server of version ``text`` will not do, or None when it will."""
    v = server_version(text)
    if v is not None and v >= MIN_SERVER:
        return None
    return (
        f"nats-server {text or '(no version)'} is older than "
        f"{'.'.join(map(str, MIN_SERVER))}, which the bridge needs "
        "(docs/floor.md, Server versions): upgrade the server"
    )


def refusal(e: BaseException) -> bool:
    """A "-ERR" a server sends a login it refuses comes as a plain nats Error."""
    text = str(e).lower()
    return (
        isinstance(e, REFUSED)
        or "authorization violation" in text
        or ("authentication" in text and "expired" in text)
    )


def reason(e: BaseException) -> str:
    if isinstance(e, nats.errors.AuthorizationError) or "authorization violation" in str(e).lower():
        return "Authorization Violation: the server refused the login (user, password, creds)"
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if text != type(e).__name__ else text


def nats_identity(n: Nats, base: Path) -> dict[str, Any]:
    """nats-py's connect options for ``[nats]``'s login and TLS (files relative to ``base``)."""
    opts: dict[str, Any] = {}
    if n.creds:
        opts["user_credentials"] = str(base / n.creds)
    if n.nkey_seed:
        opts["nkeys_seed"] = str(base / n.nkey_seed)
    if n.token_file:
        opts["token"] = (base / n.token_file).read_text("utf-8").strip()
    if n.user and n.password_file:
        opts["user"] = n.user
        opts["password"] = (base / n.password_file).read_text("utf-8").rstrip("\r\n")
    if n.tls is not None:
        ctx = ssl.create_default_context(cafile=str(base / n.tls.ca) if n.tls.ca else None)
        if n.tls.cert and n.tls.key:
            ctx.load_cert_chain(str(base / n.tls.cert), str(base / n.tls.key))
        opts["tls"] = ctx
        if n.tls.hostname:
            opts["tls_hostname"] = n.tls.hostname
    return opts


#: the JetStream API not answering yet (a cluster still electing its meta leader, a server
#: still recovering its store): asked again after these waits, the last one repeating
NOT_READY_WAITS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0)


async def ensure_stream(js: Any, n: Nats) -> int:
    """The floor's stream as ``[nats]`` says, once JetStream answers; returns how many times
    it was asked again first. A start while the cluster has no leader yet (all its servers
    started together, or a quorum still coming back) waits for one with a warning each
    time instead of ending the bridge: systemd would only start it into the same wait."""
    waits = 0
    while True:
        try:
            await _ensure_stream(js, n)
            return waits
        except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError) as e:
            delay = NOT_READY_WAITS[min(waits, len(NOT_READY_WAITS) - 1)]
            waits += 1
            log.warning(
                "JetStream is not answering yet; asking again",
                stream=n.stream,
                error=f"{type(e).__name__}: {e}",
                times=waits,
                again_in_s=delay,
            )
            await asyncio.sleep(delay)


async def _ensure_stream(js: Any, n: Nats) -> None:
    """The stream created if missing, its window and bounds kept (one attempt)."""
    want = StreamConfig(
        name=n.stream,
        subjects=[f"{n.prefix}.>"],
        storage=StorageType.FILE,
        num_replicas=n.replicas,
        duplicate_window=n.duplicate_window,
        max_age=n.max_age,
        max_bytes=n.max_bytes or -1,
        # a table's backlog goes as atomic batches (bridge/publish.py); heads are read by
        # direct get (bridge/store.py)
        allow_atomic=True,
        allow_direct=True,
    )
    try:
        try:
            info = await js.stream_info(n.stream)
        except nats.js.errors.NotFoundError:
            await js.add_stream(want)
            log.info("stream created", stream=n.stream, subjects=want.subjects)
            return
        have = info.config
        if (
            have.duplicate_window,
            have.max_age,
            have.max_bytes or -1,
            bool(have.allow_atomic),
            bool(have.allow_direct),
        ) != (want.duplicate_window, want.max_age, want.max_bytes, True, True):
            await js.update_stream(want)
            log.info("stream updated", stream=n.stream)
    except nats.js.errors.ServiceUnavailableError:
        raise  # JetStream not ready yet: ensure_stream asks again
    except nats.js.errors.APIError as e:
        # the server refuses the stream [nats] describes (replicas = 3 on one server, a
        # subject another stream holds): a config to mend, said in one line (issue 33)
        raise NatsUnreachable(
            f"stream {n.stream} (subjects {n.prefix}.>, replicas = {n.replicas}): the server "
            f"refused it: {e.description or e}"
            + (
                "; replicas above 1 need a JetStream cluster of at least that many servers"
                if n.replicas > 1
                else ""
            )
            + "; mend [nats] in the bridge's config (docs/floor.md)"
        ) from None
