"""The shared framers of ``drivers/framing.py``: any split of the byte stream gives the same
frames, a frame over the limit is one counted Malformed and never a frame, memory stays
bounded, and a withheld frame's bytes are never kept.

Every line and STX/ETX protocol of ``drivers/`` frames through these, so their own property
tests (``tests/test_protocol_properties.py``) rest on what is proved here.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_harness import pieces

from drivers.framing import (
    ETX,
    STX,
    LineFramer,
    StxFramer,
    Withheld,
    encode_stx_frame,
    stx_checksum,
)
from drivers.readings import Malformed

CI = bool(os.environ.get("CI"))


def fast(n: int = 200) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=CI,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def run(framer: Any, chunks: list[bytes]) -> list[Any]:
    out: list[Any] = []
    for c in chunks:
        out += framer.feed(c)
    return out + list(framer.eof())


# --- lines ------------------------------------------------------------------------------

# printable text and the bytes that matter to a line framer, so terminators are frequent
LINE_BYTES = st.lists(
    st.one_of(
        st.sampled_from([b"\r", b"\n", b"\r\n", b"\n\r", b"\x00", b"\xff"]),
        st.binary(min_size=1, max_size=40).map(lambda b: bytes(c % 0x5F + 0x20 for c in b)),
    ),
    max_size=20,
).map(b"".join)


@fast()
@given(data=LINE_BYTES, cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_lines_are_the_same_however_the_stream_is_split(data: bytes, cuts: list[int]) -> None:
    whole = run(LineFramer(max_line=32), [data])
    assert run(LineFramer(max_line=32), pieces(data, cuts)) == whole
    assert run(LineFramer(max_line=32), [bytes([b]) for b in data]) == whole


@fast()
@given(data=LINE_BYTES, cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_no_line_over_the_limit_and_memory_bounded(data: bytes, cuts: list[int]) -> None:
    framer = LineFramer(max_line=16)
    for chunk in pieces(data, cuts):
        for item in framer.feed(chunk):
            if isinstance(item, bytes):
                assert 0 < len(item) <= 16 and b"\r" not in item and b"\n" not in item
        assert len(framer._buf) <= 16


def test_a_long_line_is_one_malformed_then_framing_goes_on() -> None:
    data = b"A" * 40 + b"\r\nOK\r\n"
    for chunks in ([data], [bytes([b]) for b in data]):
        out = run(LineFramer(max_line=16), chunks)
        assert [type(x) for x in out] == [Malformed, bytes]
        assert out[0].reason == "line longer than 16 bytes" and out[1] == b"OK"


def test_cr_lf_is_one_terminator_and_blank_lines_are_dropped() -> None:
    assert LineFramer().feed(b"a\r\nb\rc\n\r\n\nd") == [b"a", b"b", b"c"]


def test_lines_puts_each_malformed_in_its_place() -> None:
    out: list[Any] = []
    for line in LineFramer(max_line=4).lines(b"ab\r\ntoo long\r\ncd\r\n", out):
        out.append(line.upper())
    assert out == [b"AB", Malformed(frame=b"too ", reason="line longer than 4 bytes"), b"CD"]


def test_a_half_line_at_the_end_of_the_link_is_reported() -> None:
    framer = LineFramer()
    assert framer.feed(b"*X;4") == []
    assert framer.eof() == [Malformed(frame=b"*X;4", reason="frame cut short by end of link")]
    assert framer.eof() == []


# --- STX/ETX ----------------------------------------------------------------------------

BODIES = st.binary(min_size=1, max_size=24).map(lambda b: bytes(c % 0x5F + 0x20 for c in b))
STX_PIECES = st.lists(
    st.one_of(
        BODIES.map(encode_stx_frame),
        BODIES.map(lambda b: b"D;" + b).map(encode_stx_frame),  # withheld
        BODIES.map(lambda b: b"\x02" + b + b"\x0300\r\n"),  # a bad checksum (mostly)
        st.sampled_from([b"\x02", b"\x03", b"\r\n", b"\x00", b"\x02" + b"x" * 40 + b"\x03"]),
        st.binary(max_size=8),
    ),
    max_size=12,
).map(b"".join)


def stx(**kw: Any) -> StxFramer:
    return StxFramer(max_body=32, withheld=frozenset(b"D"), max_withheld=64, **kw)


@fast()
@given(data=STX_PIECES, cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_stx_frames_are_the_same_however_the_stream_is_split(data: bytes, cuts: list[int]) -> None:
    whole = run(stx(), [data])
    assert run(stx(), pieces(data, cuts)) == whole
    assert run(stx(), [bytes([b]) for b in data]) == whole


@fast()
@given(bodies=st.lists(BODIES, max_size=8), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_good_frames_come_back_whole_and_in_order(bodies: list[bytes], cuts: list[int]) -> None:
    data = b"".join(encode_stx_frame(b) for b in bodies)
    assert run(StxFramer(max_body=32), pieces(data, cuts)) == bodies


@fast()
@given(data=STX_PIECES)
def test_no_stx_body_over_the_limit_and_nothing_withheld_is_kept(data: bytes) -> None:
    for item in run(stx(), [data]):
        if isinstance(item, bytes):
            assert len(item) <= 32 and not item.startswith(b"D")
        elif isinstance(item, Malformed) and item.reason.endswith("(withheld frame)"):
            assert item.frame == b"D"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x02" + b"x" * 33 + b"\x0300", "frame longer than 32 bytes"),
        (
            b"\x02S;1\x0300",
            f"bad checksum: frame says 00, its bytes give {stx_checksum(b'S;1'):02X}",
        ),
        (b"\x02S;1\x03ZZ", "checksum b'ZZ' is not two hex digits"),
        (b"\x02S;\x01\x03", "control or non-ASCII byte 0x01 in frame"),
        (b"\x02S;1", "frame cut short by a new STX"),
        (b"junk\r\n", "4 bytes outside a frame"),
    ],
)
def test_each_bad_stx_frame_says_what_is_wrong(data: bytes, reason: str) -> None:
    out = run(stx(), [data + encode_stx_frame(b"OK")])
    assert [m.reason for m in out if isinstance(m, Malformed)] == [reason]
    assert out[-1] == b"OK"


def test_a_withheld_frame_is_counted_never_read() -> None:
    order = b"D;" + b"AS,KH," * 8  # longer than max_body, within max_withheld
    out = run(stx(), [encode_stx_frame(order), encode_stx_frame(b"S;1")])
    assert out == [Withheld(b"D"), b"S;1"]
    out = run(stx(), [b"\x02" + order + order])  # no ETX within max_withheld
    assert out == [Malformed(frame=b"D", reason="frame longer than 64 bytes (withheld frame)")]


def test_stx_constants_and_encoding() -> None:
    assert (STX, ETX) == (0x02, 0x03)
    assert encode_stx_frame(b"Q") == b"\x02Q\x0351\r\n"
