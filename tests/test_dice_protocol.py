"""The dice-ref shaker protocol: bytes in, readings out (sans-I/O).

Every frame whole, split, one byte at a time, with garbage before and after,
a bad checksum then a good frame, frames joined (the pymodbus framer tests);
hypothesis feeds random splits and noise. Also the driver's plumbing and the
simulator's answers to host commands.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_harness import feed_all, pieces

from drivers.base import driver_class
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault
from drivers.dice_ref import (
    MAX_DATA,
    OVERHEAD,
    SELF_TEST,
    SHAKE,
    SHOWN,
    STATUS,
    VERSION,
    DiceRefDriver,
    DiceRefOptions,
    DiceRefProtocol,
    Frame,
    Framer,
    checksum,
    encode_frame,
)
from drivers.readings import DeviceReply, Malformed, Reading, Unknown
from drivers.sim.dice import DiceSimulator


def feed(*chunks: bytes) -> list[Reading]:
    return feed_all(DiceRefProtocol(), list(chunks), 0.0)


def good(rs: list[Reading]) -> list[Reading]:
    return [r for r in rs if not isinstance(r, Malformed)]


RESULT = encode_frame(b"R", bytes([3, 5, 6]))
SHAKING = encode_frame(b"S")
STACKED = encode_frame(b"N", bytes([1]))
FAULT = encode_frame(b"F", bytes([2]))
VERSION_REPLY = encode_frame(b"V", b"ACME;DS-3;1.2.0;SN0042")


# -- frames -------------------------------------------------------------------------------------


def test_frame_layout_is_the_zj_doll_dice_box_frame():
    """0x7A, length, command, data, (length + command + data) mod 256, 0x55."""
    assert RESULT == bytes([0x7A, 3, ord("R"), 3, 5, 6, (3 + ord("R") + 14) % 256, 0x55])
    assert SHAKE == bytes([0x7A, 0, ord("S"), ord("S"), 0x55])
    assert checksum(0xFF, bytes([0xFF, 0xFF])) == (2 + 0xFF * 3) % 256
    with pytest.raises(ValueError):
        encode_frame(b"V", bytes(MAX_DATA + 1))


@pytest.mark.parametrize(
    ("frame", "want"),
    [
        (SHAKING, DiceShaking(frame=SHAKING)),
        (RESULT, DiceResult(frame=RESULT, faces=(3, 5, 6))),
        (STACKED, DiceNotFlat(frame=STACKED, reason="stacked", code=1)),
        (
            encode_frame(b"N", bytes([2])),
            DiceNotFlat(frame=encode_frame(b"N", bytes([2])), reason="leaning", code=2),
        ),
        (
            encode_frame(b"N", bytes([9])),
            DiceNotFlat(frame=encode_frame(b"N", bytes([9])), reason="unknown", code=9),
        ),
        (FAULT, ShakerFault(frame=FAULT, code=2, meaning="lid opened during a shake")),
        (
            encode_frame(b"F", bytes([200])),
            ShakerFault(frame=encode_frame(b"F", bytes([200])), code=200, meaning="unknown fault"),
        ),
        (
            VERSION_REPLY,
            DeviceReply(
                frame=VERSION_REPLY,
                command="version",
                text="ACME DS-3 firmware 1.2.0 serial SN0042",
            ),
        ),
    ],
)
def test_each_frame_becomes_its_reading(frame, want):
    assert feed(frame) == [want]


@pytest.mark.parametrize(
    ("cmd", "data", "text", "command"),
    [
        (b"Q", bytes([0]), "idle", "status"),
        (b"Q", bytes([3, 1]), "fault: 1 shaker motor fault", "status"),
        (b"T", bytes([0]), "pass", "self-test"),
        (b"T", bytes([3]), "fail: 3 camera fault", "self-test"),
        (b"A", b"S\x00", "accepted", "shake"),
        (b"A", b"S\x01", "refused: busy", "shake"),
        (b"A", b"X\x04", "refused: unknown command", "?X"),
    ],
)
def test_replies(cmd, data, text, command):
    (r,) = feed(encode_frame(cmd, data))
    assert isinstance(r, DeviceReply) and (r.command, r.text) == (command, text)


@pytest.mark.parametrize(
    "faces", [(0, 3, 5), (3, 7, 1), (2, 3), (1, 2, 3, 4), (), (255, 1, 1), (6,) * 32]
)
def test_a_result_claims_whatever_faces_it_carries(faces):
    """Not Malformed: the table must see the claim and raise an alarm naming the faces."""
    f = encode_frame(b"R", bytes(faces))
    assert feed(f) == [DiceResult(frame=f, faces=faces)]


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (encode_frame(b"S", b"x"), "S frame: 1 data bytes, expected 0"),
        (encode_frame(b"N", b""), "N frame: 0 data bytes, expected 1"),
        (encode_frame(b"F", b"\x01\x02"), "F frame: 2 data bytes, expected 1"),
        (encode_frame(b"V", b"ACME\x01;DS;1;2"), "not printable"),
        (encode_frame(b"V", b"ACME DS-3"), "expected vendor;model;firmware;serial"),
        (encode_frame(b"Q", bytes([9])), "unknown state 9"),
        (encode_frame(b"A", b"S"), "A frame: 1 data bytes, expected 2"),
    ],
)
def test_wrong_fields_are_malformed(frame, reason):
    (r,) = feed(frame)
    assert isinstance(r, Malformed) and reason in r.reason and r.frame == frame


def test_unknown_command_is_unknown():
    f = encode_frame(b"Z", b"\x01")
    assert feed(f) == [Unknown(frame=f, reason="unknown frame command 0x5A")]


# -- framing: splits, garbage, checksums -------------------------------------------------------

STREAM = [SHAKING, STACKED, SHAKING, RESULT, FAULT, VERSION_REPLY]
WANT = good(feed(b"".join(STREAM)))


def test_joined_frames():
    assert len(WANT) == len(STREAM) and not any(isinstance(r, Malformed) for r in WANT)
    assert feed(b"".join(STREAM)) == WANT


def test_split_in_half_and_one_byte_at_a_time():
    whole = b"".join(STREAM)
    for cut in range(len(whole) + 1):
        assert feed(whole[:cut], whole[cut:]) == WANT
    assert feed(*(whole[i : i + 1] for i in range(len(whole)))) == WANT


def test_garbage_before_and_after_is_counted_once_per_run():
    rs = feed(b"\x00\xffhello", RESULT, b"\r\n\x13garbage")
    assert good(rs) == [DiceResult(frame=RESULT, faces=(3, 5, 6))]
    bad = [r for r in rs if isinstance(r, Malformed)]
    assert [r.reason for r in bad] == ["7 bytes outside a frame", "10 bytes outside a frame"]


def test_bad_checksum_then_a_good_frame():
    broken = bytearray(RESULT)
    broken[-2] ^= 0x01
    rs = feed(bytes(broken), RESULT)
    assert isinstance(rs[0], Malformed) and "bad checksum" in rs[0].reason
    assert rs[1:] == [DiceResult(frame=RESULT, faces=(3, 5, 6))]  # reported once, not twice


def test_wrong_trailer_resyncs_and_finds_the_frame_inside():
    broken = RESULT[:-1] + b"\x00"
    rs = feed(broken + RESULT)
    assert good(rs) == [DiceResult(frame=RESULT, faces=(3, 5, 6))]


def test_a_start_byte_in_noise_does_not_hold_back_the_next_frame():
    """A 0x7A in noise promising 32 data bytes must not delay the result behind it."""
    p = DiceRefProtocol()
    rs = p.feed(b"\x7a\x20" + RESULT, 0.0)
    assert good(rs) == [DiceResult(frame=RESULT, faces=(3, 5, 6))]
    too_long = p.feed(b"\x7a\xff" + SHAKING, 0.0)  # a length over 32 is no frame at all
    assert good(too_long) == [DiceShaking(frame=SHAKING)]


def test_frame_cut_short_by_the_end_of_the_link():
    p = DiceRefProtocol()
    assert p.feed(RESULT[:4], 0.0) == []
    (m,) = p.eof()
    assert isinstance(m, Malformed) and "cut short" in m.reason
    assert p.feed(RESULT, 0.0) == [DiceResult(frame=RESULT, faces=(3, 5, 6))]


def test_a_flood_is_bounded():
    p = DiceRefProtocol()
    rs = p.feed(bytes(range(0x7B, 0x100)) * 100, 0.0)  # no start byte at all
    assert rs and all(isinstance(r, Malformed) and len(r.frame) <= SHOWN for r in rs)
    assert len(p.framer._buf) == 0 and len(p.framer._junk) <= SHOWN
    assert p.feed(RESULT, 0.0)[-1] == DiceResult(frame=RESULT, faces=(3, 5, 6))


# -- hypothesis ------------------------------------------------------------------------------

VALID = st.one_of(
    st.just(SHAKING),
    st.builds(lambda f: encode_frame(b"R", bytes(f)), st.lists(st.integers(0, 255), max_size=6)),
    st.builds(lambda c: encode_frame(b"N", bytes([c])), st.integers(0, 255)),
    st.builds(lambda c: encode_frame(b"F", bytes([c])), st.integers(0, 255)),
    st.builds(lambda s: encode_frame(b"Q", bytes([s])), st.integers(0, 4)),
    st.just(VERSION_REPLY),
)
#: noise without the start byte: whatever it is, it cannot hide a frame behind it.
NOISE = st.binary(max_size=40).map(lambda b: b.replace(b"\x7a", b""))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NOISE, VALID), max_size=8), NOISE, st.lists(st.integers(0, 999)))
def test_frames_survive_any_split_and_noise(pairs, tail, cuts):
    data = b"".join(n + f for n, f in pairs) + tail
    want = good(feed(b"".join(f for _, f in pairs)))
    assert len(want) == len(pairs)
    assert good(feed(*pieces(data, cuts))) == want


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 999), max_size=10))
def test_any_bytes_never_raise_and_memory_stays_bounded(data, cuts):
    p = DiceRefProtocol()
    for chunk in pieces(data, cuts):
        for r in p.feed(chunk, 0.0):
            assert isinstance(r, Reading)
            assert len(r.frame) <= max(SHOWN, MAX_DATA + OVERHEAD)
        assert len(p.framer._buf) < MAX_DATA + OVERHEAD
        assert len(p.framer._junk) <= SHOWN
    assert all(isinstance(r, Malformed) for r in p.eof())


# -- the driver and the simulator's answers ----------------------------------------------------


def test_driver_plumbing():
    cls = driver_class("dice-ref")
    assert cls is DiceRefDriver
    d = DiceRefDriver(DiceRefOptions())
    assert d.on_connect() == [VERSION] and d.poll() is None
    assert DiceRefDriver(msgspec.convert({"poll_interval": 5}, DiceRefOptions)).poll() == (
        5.0,
        STATUS,
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"poll": 5}, DiceRefOptions)
    assert isinstance(d.simulator({"seed": 3}), DiceSimulator)
    with pytest.raises(ValueError, match="unknown field `sed`"):
        d.simulator({"sed": 3})


class Wire:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)


def ask(sim: DiceSimulator, command: bytes) -> Any:
    (f,) = Framer().feed(command)
    assert isinstance(f, Frame)
    (r,) = feed(sim.answer(f))
    return r


def test_simulator_answers_every_command():
    sim = DiceSimulator(seed=3)
    sim.attach(Wire())
    assert ask(sim, VERSION).text == "TABLED DICE-SIM firmware 1.0 serial SIM-3"
    assert ask(sim, STATUS).text == "idle"
    assert ask(sim, SELF_TEST).text == "pass"
    assert ask(sim, SHAKE).text == "accepted" and sim.busy
    assert ask(sim, SHAKE).text == "refused: busy"
    assert ask(sim, STATUS).text == "shaking"
    assert ask(sim, encode_frame(b"X")).text == "refused: unknown command"
