"""The reference shuffler protocol: framing, every frame, the withheld deck order, and the
simulator through a real pty with the real serial transport and the daemon's DeviceRunner.

Framing is checked the pymodbus way: every stream whole, split at every byte,
one byte at a time, with garbage before and after, a bad checksum then a good
frame, and frames joined — the same readings every way.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runner_inputs import Inputs

from daemon.runtime.devices import DeviceRunner
from drivers.framing import encode_stx_frame as encode_frame
from drivers.framing import stx_checksum as checksum
from drivers.readings import DeviceReply, Malformed, Reading, Unknown
from drivers.serial import SerialSettings, SerialTransport
from drivers.shuffler_readings import (
    ShuffleCountMismatch,
    ShuffleDone,
    ShufflerDoorClosed,
    ShufflerDoorOpen,
    ShufflerFault,
    ShufflerJam,
    ShuffleStarted,
)
from drivers.shuffler_ref import (
    MAX_BODY,
    SELF_TEST,
    STATUS,
    VERSION,
    ShufflerRefDriver,
    ShufflerRefOptions,
    ShufflerRefProtocol,
    command,
    start_shuffle,
)
from drivers.sim.pty import PtyLink

GUARD = 5.0  # seconds: only a hang ever reaches it
EIGHT_DECKS = ",".join(["32"] * 13)

# (frame on the wire, the reading it must become)
FRAMES: list[tuple[bytes, Reading]] = [
    (
        command("V", "Acme", "RS-1", "2.4.1", "000123"),
        DeviceReply(
            frame=b"V;Acme;RS-1;2.4.1;000123",
            command="version",
            text="Acme RS-1 firmware 2.4.1 serial 000123",
        ),
    ),
    (command("Q", "READY"), DeviceReply(frame=b"Q;READY", command="status", text="ready", quiet=True)),
    (
        command("Q", "FAULT", "motor"),
        DeviceReply(frame=b"Q;FAULT;motor", command="status", text="fault: motor", quiet=True),
    ),
    (command("T", "PASS"), DeviceReply(frame=b"T;PASS", command="self-test", text="pass")),
    (
        command("T", "FAIL", 3),
        DeviceReply(frame=b"T;FAIL;3", command="self-test", text="fail: 3 card count sensor fault"),
    ),
    (command("G", "OK"), DeviceReply(frame=b"G;OK", command="start-shuffle", text="accepted")),
    (
        command("G", "NO", "DOOR OPEN"),
        DeviceReply(frame=b"G;NO;DOOR OPEN", command="start-shuffle", text="refused: DOOR OPEN"),
    ),
    (command("S", 41, 8), ShuffleStarted(frame=b"S;41;8", shuffle_id=41, decks=8)),
    (
        command("C", 41, 8, 416, EIGHT_DECKS),
        ShuffleDone(
            frame=b"C;41;8;416;" + EIGHT_DECKS.encode(),
            shuffle_id=41,
            decks=8,
            cards=416,
            rank_counts=dict.fromkeys("A23456789TJQK", 32),
        ),
    ),
    (
        command("C", 42, 6, 311),
        ShuffleDone(frame=b"C;42;6;311", shuffle_id=42, decks=6, cards=311, rank_counts=None),
    ),
    (
        command("M", 43, 416, 415),
        ShuffleCountMismatch(frame=b"M;43;416;415", shuffle_id=43, expected=416, counted=415),
    ),
    (command("J", "ELEVATOR"), ShufflerJam(frame=b"J;ELEVATOR", where="ELEVATOR")),
    (command("J"), ShufflerJam(frame=b"J", where="")),
    (command("O", "OPEN"), ShufflerDoorOpen(frame=b"O;OPEN")),
    (command("O", "CLOSED"), ShufflerDoorClosed(frame=b"O;CLOSED")),
    (command("F", 5), ShufflerFault(frame=b"F;5", code=5, meaning="motor fault")),
    (
        command("F", 77, "belt slipping"),
        ShufflerFault(frame=b"F;77;belt slipping", code=77, meaning="belt slipping"),
    ),
    (command("F", 78), ShufflerFault(frame=b"F;78", code=78, meaning="unknown fault")),
    (command("X", 1), Unknown(frame=b"X;1", reason="unknown frame type 'X'")),
]
STREAM = b"".join(f for f, _ in FRAMES)
EXPECTED = [r for _, r in FRAMES]


def feed(data: bytes, chunks: list[bytes] | None = None) -> list[Reading]:
    p = ShufflerRefProtocol()
    out: list[Reading] = []
    for c in chunks if chunks is not None else [data]:
        out += p.feed(c, 0.0)
    return out + p.eof()


def good(readings: list[Reading]) -> list[Reading]:
    return [r for r in readings if not isinstance(r, Malformed)]


# --- framing ---------------------------------------------------------------------------------


def test_checksum_is_xor_of_the_body() -> None:
    assert checksum(b"Q") == 0x51
    assert command("Q") == b"\x02Q\x0351\r\n"
    assert encode_frame(b"S;1;8") == b"\x02S;1;8\x03" + b"%02X" % checksum(b"S;1;8") + b"\r\n"


@pytest.mark.parametrize(
    ("frame", "reading"), FRAMES, ids=[r.__class__.__name__ for _, r in FRAMES]
)
def test_every_frame_type(frame: bytes, reading: Reading) -> None:
    assert feed(frame) == [reading]


def test_whole_stream_and_frames_joined() -> None:
    assert feed(STREAM) == EXPECTED


def test_split_at_every_byte() -> None:
    for i in range(len(STREAM) + 1):
        assert feed(STREAM, [STREAM[:i], STREAM[i:]]) == EXPECTED, i


def test_one_byte_at_a_time() -> None:
    assert feed(STREAM, [bytes([b]) for b in STREAM]) == EXPECTED


def test_garbage_before_and_after() -> None:
    got = feed(b"\xff\x00noise\r\n" + STREAM + b"trailing junk")
    assert got[0] == Malformed(frame=b"\xff\x00noise", reason="7 bytes outside a frame")
    assert got[1:-1] == EXPECTED
    assert got[-1] == Malformed(frame=b"trailing junk", reason="13 bytes outside a frame")


def test_bad_checksum_then_good_frame() -> None:
    bad = b"\x02S;41;8\x0300\r\n"
    got = feed(bad + command("S", 41, 8))
    assert got[0] == Malformed(
        frame=b"S;41;8",
        reason=f"bad checksum: frame says 00, its bytes give {checksum(b'S;41;8'):02X}",
    )
    assert got[1:] == [ShuffleStarted(frame=b"S;41;8", shuffle_id=41, decks=8)]


def test_lower_case_checksum_accepted_and_crlf_optional() -> None:
    frame = b"\x02J;ELEVATOR\x03" + b"%02x" % checksum(b"J;ELEVATOR")
    assert feed(frame + frame) == [ShufflerJam(frame=b"J;ELEVATOR", where="ELEVATOR")] * 2


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        (b"\x02S;1;8\x03ZZ", "checksum b'ZZ' is not two hex digits"),
        (b"\x02S;1;8", "frame cut short by end of link"),
        (b"\x02S;1;8\x036", "frame cut short by end of link"),
        (b"\x02S;1\x02", "frame cut short by a new STX"),
        (b"\x02S;1\x07;8\x0300", "control or non-ASCII byte 0x07 in frame"),
    ],
)
def test_broken_frames(wire: bytes, reason: str) -> None:
    got = feed(wire)
    assert isinstance(got[0], Malformed) and got[0].reason == reason
    assert good(got) == []


def test_resync_on_stx_recovers_the_next_frame() -> None:
    got = feed(b"\x02S;1;" + command("O", "OPEN"))
    assert got == [
        Malformed(frame=b"S;1;", reason="frame cut short by a new STX"),
        ShufflerDoorOpen(frame=b"O;OPEN"),
    ]


def test_length_bound() -> None:
    long = command("J", "x" * (MAX_BODY + 10))
    got = feed(long + command("J", "IN"))
    assert isinstance(got[0], Malformed) and "longer than" in got[0].reason
    assert len(got[0].frame) <= 32
    assert good(got) == [ShufflerJam(frame=b"J;IN", where="IN")]


@pytest.mark.parametrize(
    "frame",
    [
        command("S", 1),  # a field missing
        command("S", 1, 0),  # zero decks
        command("S", 1, 13),  # more decks than any shoe takes
        command("S", "x", 8),
        command("S", -1, 8),
        command("C", 1, 8, 416, "32,32"),  # too few rank counts
        command("C", 1, 8, 415, EIGHT_DECKS),  # counts add up to 416
        command("M", 1, 416, 416),  # no mismatch at all
        command("O", "AJAR"),
        command("Q", "SLEEPING"),
        command("T", "MAYBE"),
        command("G", "PERHAPS"),
        command("V", "only", "three", "fields"),
        encode_frame(b"s;1;8"),  # the type is a capital letter
        encode_frame(b"S1;8"),
        encode_frame(b""),
    ],
)
def test_wrong_fields_are_malformed(frame: bytes) -> None:
    (r,) = feed(frame)
    assert isinstance(r, Malformed), r


def test_commands() -> None:
    assert STATUS == command("Q") and VERSION == command("V") and SELF_TEST == command("T")
    assert start_shuffle() == b"\x02G\x0347\r\n"
    assert start_shuffle(8) == encode_frame(b"G;8")


# --- the deck order is never read ----------------------------------------------------------

ORDER = ",".join(["AS", "KH", "7D", "TC"] * 104)  # 416 cards: longer than any kept frame


def carries_order(r: Reading) -> bool:
    return (
        any(code.encode() in msgspec.json.encode(r) for code in ("AS,KH", "KH,7D", "7D,TC"))
        or b"AS,KH" in r.frame
    )


@pytest.mark.parametrize(
    "wire",
    [
        command("D", ORDER),  # good checksum
        b"\x02D;" + ORDER.encode() + b"\x0300\r\n",  # bad checksum
        b"\x02D;" + ORDER.encode() + b"\x03",  # cut short in its checksum
        b"\x02D;" + ORDER.encode(),  # cut short by a new STX (below) or end of link
        b"\x02D;" + (ORDER * 20).encode() + b"\x0300\r\n",  # longer than any bound
        b"\x02D;" + ORDER.encode()[:40] + b"\x07\x01\x0300",  # control bytes inside
    ],
)
def test_deck_order_frame_never_becomes_a_reading(wire: bytes) -> None:
    after = command("S", 2, 8)
    for chunks in ([wire + after], [bytes([b]) for b in wire + after]):
        p = ShufflerRefProtocol()
        got: list[Reading] = []
        for c in chunks:
            got += p.feed(c, 0.0)
        got += p.eof()
        assert not any(carries_order(r) for r in got), got
        assert all(r.frame in (b"D", b"S;2;8") for r in got), got
        assert got[-1] == ShuffleStarted(frame=b"S;2;8", shuffle_id=2, decks=8)


def test_deck_order_is_counted_as_unknown() -> None:
    p = ShufflerRefProtocol()
    got = p.feed(command("D", ORDER) + command("D", "AS"), 0.0)
    assert [type(r) for r in got] == [Unknown, Unknown]
    assert all(r.frame == b"D" and "never published" in r.reason for r in got)
    assert p.deck_orders_dropped == 2


# --- fuzz --------------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=64), max_size=20))
def test_random_bytes_never_raise(chunks: list[bytes]) -> None:
    for r in feed(b"", chunks):
        assert isinstance(r, Reading)


frame_items = st.sampled_from(FRAMES)
junk = st.binary(max_size=40).map(lambda b: b.replace(b"\x02", b""))


@given(st.lists(st.tuples(junk, frame_items), max_size=8), junk, st.data())
@settings(max_examples=200)
def test_frames_survive_any_junk_between_them_in_any_split(
    items: list[tuple[bytes, tuple[bytes, Reading]]], tail: bytes, data: st.DataObject
) -> None:
    wire = b"".join(j + f for j, (f, _) in items) + tail
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    assert good(feed(wire, chunks)) == [r for _, (_, r) in items]


# --- the simulator through a real pty, the serial transport and the DeviceRunner ------------


@contextlib.asynccontextmanager
async def simulated(poll_interval: float | None = None, **sim: Any):
    link = PtyLink()
    driver = ShufflerRefDriver(ShufflerRefOptions(poll_interval=poll_interval))
    simulator = driver.simulator({"shuffle_time": 0.02, "follow_table": False, **sim})
    simulator.attach(link)
    inputs = Inputs()
    runner = DeviceRunner("shuffler", driver, inputs)
    runner.on_link.append(lambda up: link.opened.set() if up else link.opened.clear())
    # Malformed and unknown frames are counted, not submitted: wake the waiters on bytes too.
    runner.taps.append(lambda direction, data, mono: inputs.changed.set())
    transport = SerialTransport(link.path, SerialSettings(), reconnect_min=0.01, reconnect_max=0.05)
    runner.transport = transport
    tasks = [asyncio.create_task(simulator.run()), asyncio.create_task(transport.run(runner))]
    try:
        await inputs.until(lambda: runner.identity is not None)
        yield simulator, runner, inputs
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        runner.close()
        link.close()


async def test_sim_identity_status_and_a_clean_shuffle() -> None:
    async with simulated(poll_interval=0.05, seed=7) as (_sim, runner, inputs):
        assert runner.identity == "tabled reference shuffler simulator firmware 1.0 serial SIM-7"
        await inputs.until(lambda: any(r.command == "status" for r in inputs.readings(DeviceReply)))
        runner.send(start_shuffle(6))
        await inputs.until(lambda: bool(inputs.readings(ShuffleDone)))
        replies = [r.text for r in inputs.readings(DeviceReply) if r.command == "start-shuffle"]
        assert replies == ["accepted"]
        (started,) = inputs.readings(ShuffleStarted)
        (done,) = inputs.readings(ShuffleDone)
        assert (started.shuffle_id, started.decks) == (1, 6)
        assert (done.shuffle_id, done.decks, done.cards) == (1, 6, 312)
        assert done.rank_counts == dict.fromkeys("A23456789TJQK", 24)
        runner.send(SELF_TEST)
        await inputs.until(
            lambda: any(r.command == "self-test" for r in inputs.readings(DeviceReply))
        )
        assert runner.counters.malformed == 0 and runner.counters.unknown == 0


async def test_sim_wrong_count_and_leaked_deck_order() -> None:
    async with simulated(faults=["wrong-count"]) as (sim, runner, inputs):
        runner.send(start_shuffle())
        await inputs.until(lambda: bool(inputs.readings(ShuffleCountMismatch)))
        (m,) = inputs.readings(ShuffleCountMismatch)
        assert (m.expected, m.counted) == (416, 415)
        assert not inputs.readings(ShuffleDone)

        wire = bytearray()
        runner.taps.append(lambda direction, data, mono: wire.extend(data))
        sim.inject("deck-order")
        runner.send(start_shuffle())
        await inputs.until(lambda: runner.counters.unknown == 1)
        assert [d.cards for d in inputs.readings(ShuffleDone)] == [416]
        assert runner.counters.malformed == 0
        # The order really was on the wire, and nothing the runner passed on holds any of it.
        start = wire.index(b"\x02D;") + 3
        order = wire[start : wire.index(b"\x03", start)].decode().split(",")
        assert len(order) == 416
        pairs = [f"{a},{b}".encode() for a, b in itertools.pairwise(order)]
        for r in inputs.readings():
            shown = msgspec.json.encode(r)
            assert not any(p in shown for p in pairs), r


@pytest.mark.parametrize(
    ("fault", "expect"),
    [
        ("jam", ShufflerJam(frame=b"J;ELEVATOR", where="ELEVATOR")),
        ("fault", ShufflerFault(frame=b"F;5;motor fault", code=5, meaning="motor fault")),
    ],
)
async def test_sim_stops_on_a_fault_until_a_self_test(fault: str, expect: Reading) -> None:
    async with simulated(faults=[fault]) as (_sim, runner, inputs):
        runner.send(start_shuffle())
        await inputs.until(lambda: expect in inputs.readings())
        runner.send(start_shuffle())
        await inputs.until(lambda: len(inputs.readings(DeviceReply)) >= 3)
        assert inputs.readings(DeviceReply)[-1].text == "refused: FAULT"
        runner.send(SELF_TEST)
        runner.send(start_shuffle())
        await inputs.until(lambda: bool(inputs.readings(ShuffleDone)))


async def test_sim_door_open_aborts_the_shuffle() -> None:
    async with simulated(faults=["door-open"]) as (_sim, runner, inputs):
        runner.send(start_shuffle())
        await inputs.until(lambda: bool(inputs.readings(ShufflerDoorClosed)))
        assert inputs.readings(ShufflerDoorOpen) and not inputs.readings(ShuffleDone)


async def test_sim_wire_faults_are_counted_and_the_link_goes_on() -> None:
    async with simulated() as (sim, runner, inputs):
        sim.inject("garbage")
        sim.inject("bad-checksum")
        runner.send(STATUS)  # its reply comes after noise, with a bad checksum
        await inputs.until(lambda: runner.counters.malformed == 2)
        assert runner.last_malformed is not None and runner.last_malformed[1] == b"Q;IDLE"
        assert "bad checksum" in runner.last_malformed[0]
        runner.send(start_shuffle())
        await inputs.until(lambda: bool(inputs.readings(ShuffleDone)))
        assert [r.command for r in inputs.readings(DeviceReply)] == ["version", "start-shuffle"]


def test_a_technicians_commands_are_sent_by_name_and_text_is_refused():
    """The framed protocol takes only its named commands (`tablectl device shuffler --list`):
    a text line would be garbage to the machine, refused before it is journaled."""
    from drivers.shuffler_ref import SELF_TEST, STATUS, VERSION, ShufflerRefDriver, start_shuffle

    drv = ShufflerRefDriver(ShufflerRefDriver.Options())
    sent = {n: drv.encode_command(text) for n, (text, _) in drv.named_commands.items()}
    assert sent == {
        "status": STATUS,
        "version": VERSION,
        "self-test": SELF_TEST,
        "shuffle": start_shuffle(),
    }
    with pytest.raises(ValueError, match="takes self-test, shuffle, status, version"):
        drv.encode_command("G;8")
