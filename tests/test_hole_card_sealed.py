"""The hole card stays secret on every side path until it is turned over (issue 28, item 1).

Each case is a capture replayed offline through the real shoe-line protocol, the real
line-noise meter, the real table and an in-memory journal sealed as the daemon seals it
(``daemon/pipeline/replay.py``): what the bus, a replay and ``tablectl recall`` would read is the
published bytes. The hole card's code (``QD``) appears once in each capture; no published
byte, no alarm the table holds (``tablectl status``) and no console-log line may carry it
before the event that turns it over, and afterwards every sealed value is opened and
agrees with the journal's secret rows.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import structlog

from daemon.journal import read_for_state, read_with_secrets
from daemon.journal.events import canonical
from daemon.pipeline.capture import parse
from daemon.pipeline.replay import Replayer, replay

HOLE = "QD"
HEAD = """# driver: shoe-line
# game: blackjack
# name: shoe
# table: bj
# game.start_burn: "{burn}"
# game.decks: {decks}
# game.decision_seconds: 600
"""


def _cap(body: str, *, burn: str = "none", decks: int = 8) -> Replayer:
    lines, t = [], 0.0
    for row in body.strip().splitlines():
        if not row.strip():
            continue
        t += 0.5
        kind, _, rest = row.strip().partition(" ")
        lines.append(f"2026-12-05T10:00:{t:06.3f}Z {kind} {rest}")
    text = HEAD.format(burn=burn, decks=decks) + "\n".join(lines) + "\n"
    return replay([parse(text, "<test>")])


ROUND = """
cmd shoe.new actor=d role=dealer
cmd betting.open actor=gs role=dealer
cmd betting.close boxes=1 actor=gs role=dealer
"""
NOISE = "\n".join(["rx \\x01\\x02\\r\\n"] * 7)


def _reveal_at(r: Replayer) -> int:
    """The seq of the event that turns the hole card over (its reveal, a void opening it)."""
    for ev in r.events:
        if ev.type == "dealer.hole_card" or (ev.type == "hand.void" and ev.data.get("hole")):
            return ev.seq
    raise AssertionError(f"the hole card was never turned over: {[e.type for e in r.events]}")


def _assert_hidden_until_reveal(r: Replayer) -> None:
    at = _reveal_at(r)
    start = next(e.seq for e in r.events if e.type == "betting.closed")
    for ev, raw in zip(r.events, r.lines(), strict=True):
        if start <= ev.seq < at:
            assert HOLE.encode() not in raw, f"seq {ev.seq} {ev.type} publishes the hole card"
    rev = next(e for e in r.events if e.seq == at)
    assert HOLE in canonical(rev.data).decode()
    _assert_opened(r)


def _assert_opened(r: Replayer) -> None:
    """Every sealed event is opened, after the reveal, by values that rebuild the journal."""
    secrets = {seq: s for seq, _, _, s in read_with_secrets(r.journal.db) if s is not None}
    opened: dict[str, dict[str, Any]] = {}
    for ev in r.events:
        if ev.type == "secret.opened":
            for o in ev.data["opened"]:
                opened[o["sealed"]] = o
    for ev in r.events:
        sealed = ev.data.get("sealed")
        if sealed is None:
            continue
        o = opened[sealed]
        assert hashlib.sha256(bytes.fromhex(o["salt"]) + canonical(o["data"])).hexdigest() == sealed
        assert secrets[ev.seq]["sealed"] == {"salt": o["salt"], "data": o["data"]}
    # the state rebuilt from the journal is the state the table played on
    t = r.table.initial()
    for type_, data in read_for_state(r.journal.db):
        t = r.table.apply(t, type_, data)
    assert msgspec.to_builtins(t) == msgspec.to_builtins(r.state)


def _no_hole_in_status(r: Replayer) -> None:
    """What ``tablectl status`` shows of the table: its alarms and the game's summary."""
    shown = msgspec.json.encode(
        [msgspec.to_builtins(r.state.alarms), r.table.game.summary(r.state.game)]
    )
    assert HOLE.encode() not in shown


def test_a_hole_card_read_while_an_earlier_card_waits_is_held_sealed() -> None:
    r = _cap(
        ROUND
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx ZZ\\r\\n
rx QD\\r\\n
"""
    )
    held = [e for e in r.events if e.type == "card.held"]
    assert len(held) == 1 and held[0].data["sealed"]
    _no_hole_in_status(r)
    r2 = _more(
        r,
        "cmd card.enter card=7S actor=pit role=supervisor\ncmd box.stand box=1 actor=gs role=dealer",
    )
    _assert_hidden_until_reveal(r2)


def test_a_hole_card_entered_by_a_supervisor_is_sealed_in_the_command_and_the_resume() -> None:
    r = _cap(
        ROUND
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx 7S\\r\\n
rx ZZ\\r\\n
cmd card.enter card=QD actor=pit role=supervisor
"""
    )
    _no_hole_in_status(r)
    cmd = [e for e in r.events if e.type == "operator.command" and e.data["name"] == "card.enter"]
    assert cmd and cmd[0].data["sealed"]
    r2 = _more(r, "cmd box.stand box=1 actor=gs role=dealer")
    _assert_hidden_until_reveal(r2)


def test_a_hole_card_beyond_the_inventory_is_sealed_in_the_alarm_and_the_pause() -> None:
    r = _cap(
        ROUND.replace("cmd betting.open", "\n".join(["rx QD\\r\\n"] * 6) + "\ncmd betting.open")
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx 7S\\r\\n
rx QD\\r\\n
""",
        burn="fixed:6",
        decks=6,
    )
    kinds = [e.data["kind"] for e in r.events if e.type == "alarm.raised"]
    assert "card-count-exceeded" in kinds
    _no_hole_in_status(r)
    r2 = _more(
        r, "cmd card.accept actor=pit role=supervisor\ncmd box.stand box=1 actor=gs role=dealer"
    )
    _assert_hidden_until_reveal(r2)


def test_a_hole_card_read_while_the_line_is_noisy_is_sealed_in_the_suspect_alarm() -> None:
    r = _cap(
        ROUND
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx 7S\\r\\n
"""
        + NOISE
        + """
rx QD\\r\\n
"""
    )
    kinds = [e.data["kind"] for e in r.events if e.type == "alarm.raised"]
    assert kinds == ["line-noise", "card-suspect"], kinds
    _no_hole_in_status(r)
    r2 = _more(
        r, "cmd card.accept actor=pit role=supervisor\ncmd box.stand box=1 actor=gs role=dealer"
    )
    _assert_hidden_until_reveal(r2)


def test_noise_after_a_clean_hole_card_seals_the_recent_frames_of_the_line_noise_alarm() -> None:
    r = _cap(
        ROUND
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx 7S\\r\\n
rx QD\\r\\n
"""
        + NOISE
    )
    noise = [e for e in r.events if e.type == "alarm.raised" and e.data["kind"] == "line-noise"]
    assert noise and noise[0].data["sealed"]
    _no_hole_in_status(r)
    r2 = _more(r, "cmd box.stand box=1 actor=gs role=dealer")
    _assert_hidden_until_reveal(r2)


def test_the_line_noisy_log_line_quotes_no_frame() -> None:
    """The console log's "line noisy" warning said the decoded frames; the alarm lists them,
    sealed while a card is secret, and the log says how many (``daemon/runtime/devices.py``)."""
    from daemon.runtime.devices import DeviceRunner
    from drivers.base import driver_class

    drv = driver_class("shoe-line")(
        msgspec.convert({"encoding": "rank-suit"}, driver_class("shoe-line").Options)
    )
    got: list[Any] = []
    runner = DeviceRunner("shoe", drv, got.append, mono=lambda: 1.0, wall=lambda: 1.0)
    with structlog.testing.capture_logs() as logs:
        runner.on_data(b"QD\r\n" + b"\x01\x02\r\n" * 7, 1.0)
    noisy = [x for x in logs if x["event"] == "line noisy"]
    assert noisy, logs
    assert HOLE not in repr(logs)
    assert any(getattr(i.reading, "recent", None) == ("QD",) for i in got)  # the table's to seal


def _more(r: Replayer, body: str) -> Replayer:
    """Feed more lines to the same replayer (after the ones it has), at later times."""
    t0 = len(r.events) + 100.0
    lines = [
        f"2026-12-05T10:{int(t0 // 60) % 60:02d}:{t0 % 60 + i * 0.5:06.3f}Z {row.strip()}"
        for i, row in enumerate(x for x in body.strip().splitlines() if x.strip())
    ]
    r.feed(parse(HEAD.format(burn="none", decks=8) + "\n".join(lines) + "\n", "<more>"))
    return r


def test_an_altered_sealed_row_is_named_by_the_secret_check() -> None:
    """``tablectl verify`` and the start open every sealed row against its ``sealed``."""
    from daemon.games.blackjack.commitments import check_secrets

    r = _cap(
        ROUND + "\nrx 5C\\r\\n\nrx 9H\\r\\n\nrx 7S\\r\\n\nrx ZZ\\r\\n\n"
        "cmd card.enter card=QD actor=pit role=supervisor\n"
    )
    db = r.journal.db
    assert list(check_secrets(read_with_secrets(db))) == []
    seq = next(e.seq for e in r.events if e.type == "table.resumed")
    (body,) = db.execute("SELECT body FROM secrets WHERE seq = ?", (seq,)).fetchone()
    db.execute(
        "UPDATE secrets SET body = ? WHERE seq = ?",
        (bytes(body).replace(b'"QD"', b'"KD"'), seq),
    )
    problems = list(check_secrets(read_with_secrets(db)))
    assert problems and problems[0][0] == seq and "altered" in problems[0][1]


def test_a_hole_card_typed_in_lower_case_is_sealed_as_typed() -> None:
    """``tablectl card qd`` names the queen of diamonds as surely as ``QD``: the command's
    argument is sealed as typed (a typed word is matched as the whole value only, so an
    ``as`` in a sentence is never taken for the ace of spades: ``daemon/table/secrecy.py``)."""
    r = _cap(
        ROUND
        + """
rx 5C\\r\\n
rx 9H\\r\\n
rx 7S\\r\\n
rx ZZ\\r\\n
cmd card.enter card=qd actor=pit role=supervisor
"""
    )
    cmd = next(
        e for e in r.events if e.type == "operator.command" and e.data["name"] == "card.enter"
    )
    assert cmd.data["args"] == {"card": "(sealed)"}
    r2 = _more(r, "cmd box.stand box=1 actor=gs role=dealer")
    start = next(e.seq for e in r2.events if e.type == "betting.closed")
    at = _reveal_at(r2)
    for ev, raw in zip(r2.events, r2.lines(), strict=True):
        if start <= ev.seq < at:
            assert b"qd" not in raw.lower(), raw
    _assert_hidden_until_reveal(r2)


def test_a_word_typed_by_a_person_is_sealed_whole_never_inside_a_sentence() -> None:
    from daemon.journal.events import draft
    from daemon.table.secrecy import seal_drafts

    drafts = [
        draft("alarm.cleared", {"id": "A1", "by": "pit", "reason": "set aside as a burn card"}),
        draft(
            "operator.command",
            {
                "name": "card.enter",
                "args": {"card": "as"},
                "actor": "pit",
                "role": "supervisor",
                "source": "control",
            },
        ),
    ]
    assert seal_drafts(drafts, {"as", "AS"}, b"k", "n")
    assert drafts[0].data["reason"] == "set aside as a burn card"
    assert drafts[1].data["args"] == {"card": "(sealed)"}


def test_a_new_path_that_quotes_the_hole_card_is_sealed_without_a_line_of_its_own() -> None:
    """A game that grows a new way to quote the hole card (here, a careless alarm naming it
    as it is dealt, and another naming every card it holds) still publishes nothing of it:
    the seal is the table's, on every draft, not each event's (``daemon/table/secrecy.py``)."""
    from daemon.games.blackjack.table import BlackjackRules, BlackjackTable
    from daemon.pipeline.replay import REPLAY_SALT_KEY
    from daemon.table import Command, DeviceReading, Table, raise_alarm
    from drivers.readings import CardDrawn

    class Careless(BlackjackTable):
        def _hole_card(self, t, s, d, h, at):  # type: ignore[no-untyped-def]
            super()._hole_card(t, s, d, h, at)
            raise_alarm(t, d, "debug", f"hole card {h.card}", rule="-", action="-", card=h.card)

        def decide_piece(self, t, s, d, h, *how):  # type: ignore[no-untyped-def]
            super().decide_piece(t, s, d, h, *how)
            if s.held:
                d.add("device.reply", device="shoe", command="held", text=repr(s.held))

    game = Careless(BlackjackRules(start_burn="none"))
    game.salt_key = REPLAY_SALT_KEY
    table = Table(game, ["shoe"])
    state = table.initial()
    published: list[bytes] = []

    def run(inp: Any) -> None:
        nonlocal state
        d = table.decide(state, inp)
        for x in d.drafts:
            state = table.apply(state, x.type, x.data)
            published.append(canonical({k: v for k, v in x.data.items() if k != "secret"}))

    for name, args in (("shoe.new", {}), ("betting.open", {}), ("betting.close", {"boxes": "1"})):
        run(Command(name, args, "t", "supervisor"))
    for code in ("5C", "9H", "ZZ", "QD"):  # the hole card waits behind the unreadable one
        run(DeviceReading("shoe", _read(code), 1.0))
    run(Command("card.enter", {"card": "8C"}, "t", "supervisor"))
    assert state.game.round.commitment is not None  # QD is face down
    assert all(b"QD" not in p for p in published), [p for p in published if b"QD" in p]
    # and once more with the hole card read cleanly
    run(Command("box.stand", {"box": "1"}, "t", "supervisor"))
    for name, args in (("betting.open", {}), ("betting.close", {"boxes": "1"})):
        run(Command(name, args, "t", "supervisor"))
    n = len(published)
    for code in ("2C", "3H", "4S", "KD"):
        run(DeviceReading("shoe", _read(code), 1.0))
    assert all(b"KD" not in p for p in published[n:])
    assert isinstance(_read("KD"), CardDrawn)


def _read(code: str) -> Any:
    from drivers.readings import CardDrawn, CardUnreadable

    if code == "ZZ":
        return CardUnreadable(frame=b"ZZ", code="ZZ")
    return CardDrawn(frame=code.encode(), card=code)


def test_a_garbled_line_is_counted_not_quoted_while_a_card_is_secret() -> None:
    """A hole card garbled on the wire is no card to the table, but its bytes are: while a
    card is secret the device runner's log and ``tablectl devices`` count a malformed or
    unknown frame and say its length, not its bytes (``daemon/runtime/devices.py`` ``withhold``,
    wired by the daemon to the game's ``secret_in_play``)."""
    from daemon.runtime.devices import DeviceRunner
    from drivers.base import driver_class

    drv_cls = driver_class("shoe-line")
    drv = drv_cls(msgspec.convert({"encoding": "rank-suit"}, drv_cls.Options))
    runner = DeviceRunner("shoe", drv, lambda _i: None, mono=lambda: 1.0, wall=lambda: 1.0)
    secret = [True]
    runner.withhold = lambda: secret[0]
    with structlog.testing.capture_logs() as logs:
        runner.on_data(b"QD\x07\r\n", 1.0)
    assert any(x["event"] == "malformed frame" for x in logs), logs
    assert HOLE not in repr(logs) and HOLE.encode().hex() not in repr(logs)
    st = runner.status()
    assert st["malformed"] == 1 and HOLE.encode().hex() not in repr(st["last_malformed"])
    secret[0] = False  # turned over: a technician sees the bytes again
    assert HOLE.encode().hex() in runner.status()["last_malformed"]["frame"]
