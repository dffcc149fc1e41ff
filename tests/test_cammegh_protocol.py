"""Cammegh SlingShot 2 and Mercury 360 protocols: bytes in, readings out.

Frames are decoded whole, split at every byte, a byte at a time, with garbage
around them and joined (the pymodbus framer tests); hypothesis feeds random
bytes and randomly split valid streams; both real SS2 captures are replayed.
The protocol facts are in ``docs/protocols/cammegh.md``.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_harness import feed_all, pieces

from drivers.cammegh import (
    DOUBLE_ZERO,
    FAULT_CODES,
    M360Driver,
    M360Options,
    M360Protocol,
    SS2Driver,
    SS2Options,
    SS2Protocol,
    command,
    decode_log_page,
    flag_names,
    log_page_checksum,
    poll,
    read_log_page,
    read_tuning,
    set_mode,
    set_tuning,
    user_start,
)
from drivers.readings import (
    BonusValue,
    DeviceReply,
    GameEvent,
    Malformed,
    Reading,
    Unknown,
    WheelFault,
    WheelStatus,
    WinningNumber,
)

CAPTURES = Path(__file__).parent / "captures" / "cammegh-ss2"
RESULTS = (WheelStatus, WinningNumber)


def feed(proto, data: bytes, now: float = 0.0) -> list[Reading]:
    return proto.feed(data, now)


def one(proto, data: bytes, now: float = 0.0) -> Reading:
    out = proto.feed(data, now)
    assert len(out) == 1, out
    return out[0]


def status(frame: bytes, **kw) -> WheelStatus:
    return WheelStatus(frame=frame, **kw)


# --- SS2: every frame type -----------------------------------------------------------


def test_status_frame_from_the_capture():
    r = one(SS2Protocol(), b"*X;2;002;31;0;146;1\r\n")
    assert r == WheelStatus(
        frame=b"*X;2;002;31;0;146;1",
        state=2,
        spin=2,
        last_number=31,
        flags=0,
        rpm=14.6,
        direction="anticlockwise",
    )
    assert r.ball_period is None and r.extended_flags is None


def test_status_frame_fields():
    r = one(SS2Protocol(), b"*X;4;146; 9;0;158;0\r\n")
    assert (r.state, r.spin, r.last_number, r.rpm, r.direction) == (4, 146, 9, 15.8, "clockwise")
    r = one(SS2Protocol(), b"*X;6;001;  ;0;000;0\r\n")
    assert r.last_number is None and r.rpm == 0.0
    r = one(SS2Protocol(), b"*X;5;158; 0;0;170;0\r\n")
    assert r.last_number == 0


@pytest.mark.parametrize("digit", "0123456789ABCDEFabcdef")
def test_every_flag_digit_is_a_bit_mask(digit):
    r = one(SS2Protocol(), f"*X;3;010;17;{digit};170;0\r\n".encode())
    assert isinstance(r, WheelStatus)
    assert r.flags == int(digit, 16)
    assert len(flag_names(r.flags)) == bin(int(digit, 16)).count("1")


@pytest.mark.parametrize("state", range(1, 8))
def test_states_one_to_seven(state):
    r = one(SS2Protocol(), f"*X;{state};010;17;0;170;0\r\n".encode())
    assert isinstance(r, WheelStatus) and r.state == state


def test_state_seven_ball_not_detected():
    r = one(SS2Protocol(), b"*X;7;099;12;1;180;1\r\n")
    assert r == status(
        b"*X;7;099;12;1;180;1",
        state=7,
        spin=99,
        last_number=12,
        flags=1,
        rpm=18.0,
        direction="anticlockwise",
    )


@pytest.mark.parametrize(
    ("line", "number"),
    [(b" 7\r\n", 7), (b"23\r\n", 23), (b" 0\r\n", 0), (b"36\r\n", 36), (b" 1\n", 1), (b" 9\r", 9)],
)
def test_bare_winning_number_keeps_the_leading_space(line, number):
    r = one(SS2Protocol(), line)
    assert r == WinningNumber(frame=line.rstrip(b"\r\n"), number=number)


def test_double_zero_is_37_only_on_a_double_zero_wheel():
    assert isinstance(one(SS2Protocol(), b"00\r\n"), Malformed)
    assert one(SS2Protocol(double_zero=True), b"00\r\n").number == DOUBLE_ZERO == 37
    assert isinstance(one(SS2Protocol(), b"37\r\n"), Malformed)
    assert one(SS2Protocol(double_zero=True), b"37\r\n").number == 37
    r = one(SS2Protocol(double_zero=True), b"*X;5;010;00;0;170;0\r\n")
    assert r.last_number == 37
    assert isinstance(one(SS2Protocol(), b"*X;5;010;00;0;170;0\r\n"), Malformed)
    assert isinstance(one(SS2Protocol(double_zero=True), b"38\r\n"), Malformed)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"*Y;3;120\r\n", BonusValue(frame=b"*Y;3;120", index=3, value=120)),
        (b"*Y;6;255;12\r\n", BonusValue(frame=b"*Y;6;255;12", index=6, value=255, licence_days=12)),
        (b"*Y;1;000;0\r\n", BonusValue(frame=b"*Y;1;000;0", index=1, value=0, licence_days=0)),
        (b"*Y;1;999\r\n", BonusValue(frame=b"*Y;1;999", index=1, value=999, licence_days=0)),
    ],
)
def test_bonus_frames(line, expected):
    assert one(SS2Protocol(), line) == expected


@pytest.mark.parametrize(
    "line",
    [
        b"*Y;0;120\r\n",
        b"*Y;7;120\r\n",
        b"*Y;1;256\r\n",
        b"*Y;1;12\r\n",
        b"*Y;1;120;31\r\n",
        b"*Y;1\r\n",
    ],
)
def test_bad_bonus_frames(line):
    assert isinstance(one(SS2Protocol(), line), Malformed)


# --- SS2: replies matched to the command that asked --------------------------------------

REPLIES = [
    (b"*o 1159\r\n", b"*o 1159\r\n", "*o 1159", "1159"),
    (b"*O\r\n", b"*O 6 1 40 1159\r\n", "*O", "6 1 40 1159"),
    (b"*O\r\n", b"*o BUSY\r\n", "*O", "BUSY"),
    (b"*P 1\r\n", b"*P NO\r\n", "*P 1", "NO"),
    (b"*P 0\r\n", b"*P OK\r\n", "*P 0", "OK"),
    (b"*R\r\n", b"*R OK\r\n", "*R", "OK"),
    (b"*K\r\n", b"*K CAM\r\n", "*K", "CAM"),
    (b"*u 1\r\n", b"*u OK\r\n", "*u 1", "OK"),
    (b"*S\r\n", b"*S V2.50\r\n", "*S", "V2.50"),
    (
        b"*V\r\n",
        b"*V V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel (c) 03/12/18\r\n",
        "*V",
        "V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel (c) 03/12/18",
    ),
    (b"*F\r\n", b"*F BUSY\r\n", "*F", "BUSY"),
    (b"*F\r\n", b"*F 0\r\n", "*F", "0"),
    (b"*T C\r\n", b"*T c 8465\r\n", "*T C", "c 8465"),
    (b"*T s 16.0 18.0\r\n", b"*T OK\r\n", "*T s 16.0 18.0", "OK"),
    (b"*A\r\n", b"*A 17\r\n", "*A", "17"),
    (b"*d g\r\n", b"*d g 12:30:05 - 13/11/25\r\n", "*d g", "g 12:30:05 - 13/11/25"),
    (b"*d s h 12\r\n", b"*d OK\r\n", "*d s h 12", "OK"),
    (b"*I 4\r\n", b"*I 4\r\n", "*I 4", "4"),
    (b"*q 1\r\n", b"*q OK\r\n", "*q 1", "OK"),
    (b"*W\r\n", b"*W BUSY\r\n", "*W", "BUSY"),
    (b"*M\r\n", b"*M BUSY\r\n", "*M", "BUSY"),
    (b"*s r 3\r\n", b"*s BUSY\r\n", "*s r 3", "BUSY"),
]


@pytest.mark.parametrize(("sent", "reply", "asked", "text"), REPLIES)
def test_reply_names_the_command_that_asked(sent, reply, asked, text):
    p = SS2Protocol()
    assert p.sent(sent, 1.0) == []
    r = one(p, reply, 1.2)
    assert r == DeviceReply(frame=reply.rstrip(b"\r\n"), command=asked, text=text)


@pytest.mark.parametrize(("sent", "reply", "asked", "text"), REPLIES)
def test_unasked_reply_is_kept_as_question_mark_letter(sent, reply, asked, text):
    r = one(SS2Protocol(), reply)
    assert isinstance(r, DeviceReply) and r.command == "?" + reply[1:2].decode()
    assert r.text == text


def test_tuning_replies_match_the_parameter_not_only_the_letter():
    p = SS2Protocol()
    p.sent(b"*T C\r\n*T D\r\n", 0.0)
    assert one(p, b"*T d 15\r\n", 0.1).command == "*T D"
    assert one(p, b"*T c 8465\r\n", 0.2).command == "*T C"
    assert one(p, b"*T c 8465\r\n", 5.0).command == "?T"  # nothing waits any more


def test_fifo_order_and_interleaved_status():
    """As in the capture: *P 1 and *u 1 sent, status frames between their replies."""
    p = SS2Protocol()
    p.sent(b"*P 1\r\n", 0.0)
    p.sent(b"*u 1\r\n", 0.4)
    out = feed(p, b"*X;2;147;21;0;158;0\r\n*u OK\r\n*X;2;147;21;0;158;0\r\n*P NO\r\n", 0.5)
    assert [type(r) for r in out] == [WheelStatus, DeviceReply, WheelStatus, DeviceReply]
    assert (out[1].command, out[3].command) == ("*u 1", "*P 1")


def test_a_command_without_reply_expires():
    """The capture sends *v, *A and *O that are never answered: they must not take later replies."""
    p = SS2Protocol()
    p.sent(b"*A\r\n", 0.0)
    assert one(p, b"*A 12\r\n", 60.0).command == "?A"


def test_polls_are_not_waiting_for_a_reply():
    p = SS2Protocol()
    p.sent(poll() * 3, 0.0)
    assert isinstance(one(p, b"*X;6;001;  ;0;000;0\r\n", 0.1), WheelStatus)
    assert one(p, b"*R OK\r\n", 0.2).command == "?R"


def test_fast_polls_do_not_push_a_command_out():
    p = SS2Protocol()
    p.sent(b"*V\r\n", 0.0)
    for i in range(1, 41):  # polling every 100 ms, the fastest allowed
        p.sent(poll(), i / 10)
        assert isinstance(one(p, b"*X;6;001;  ;0;000;0\r\n", i / 10 + 0.05), WheelStatus)
    assert one(p, b"*V V2.50\r\n", 4.1).command == "*V"


def test_unknown_letter_is_unknown_unless_asked():
    r = one(SS2Protocol(), b"*Z 12\r\n")
    assert isinstance(r, Unknown) and "*Z" in r.reason
    p = SS2Protocol()
    p.sent(b"*v\r\n", 0.0)
    assert one(p, b"*v 1.0\r\n", 0.1) == DeviceReply(frame=b"*v 1.0", command="*v", text="1.0")


def test_fault_during_play_is_a_wheel_fault():
    r = one(SS2Protocol(), b"*F 5\r\n")
    assert r == WheelFault(frame=b"*F 5", code=5, meaning="motor")


def test_self_test_answers_are_replies_and_faults():
    p = SS2Protocol()
    p.sent(b"*F\r\n", 0.0)
    out = feed(p, b"*F 2\r\n", 30.0) + feed(p, b"*F 21\r\n", 31.0) + feed(p, b"*F 0\r\n", 32.0)
    assert out == [
        DeviceReply(frame=b"*F 2", command="*F", text="2"),
        WheelFault(frame=b"*F 2", code=2, meaning="no ball"),
        DeviceReply(frame=b"*F 21", command="*F", text="21"),
        WheelFault(frame=b"*F 21", code=21, meaning="sensor 0 stuck off"),
        DeviceReply(frame=b"*F 0", command="*F", text="0"),
    ]
    # the self-test is over: a later *F is a fault during play again
    assert feed(p, b"*F 100\r\n", 400.0) == [
        WheelFault(frame=b"*F 100", code=100, meaning="timed out")
    ]


def test_fault_codes_table():
    assert FAULT_CODES[6] == "encoder failed / not calibrated"
    assert {7, 8, 11, 12, 13, 21, 22, 23, 100} <= set(FAULT_CODES)
    assert one(SS2Protocol(), b"*F 9\r\n").meaning == "unknown fault code 9"
    assert isinstance(one(SS2Protocol(), b"*F fire\r\n"), Malformed)


def test_ss2_w_reply_is_never_a_winning_number():
    r = one(SS2Protocol(), b"*W 17\r\n")
    assert isinstance(r, DeviceReply) and r.command == "?W"


# --- SS2: log pages ------------------------------------------------------------------------


def page(data: bytes, check: int | None = None) -> bytes:
    c = log_page_checksum(data) if check is None else check
    return b"*s " + data + f"{c:02X}".encode() + b"\r\n"


PAGE_DATA = bytes((i % 93) + 0x21 for i in range(250)) + b"~~*~~~"  # holds '*' and '~'


def test_log_page_good_checksum():
    assert len(PAGE_DATA) == 256
    p = SS2Protocol()
    p.sent(read_log_page(3), 0.0)
    r = one(p, page(PAGE_DATA), 0.5)
    assert r == DeviceReply(frame=page(PAGE_DATA)[:-2], command="*s r 3", text=PAGE_DATA.decode())
    values = decode_log_page(r.text)
    assert values[:3] == [0, 1, 2] and values[-1] is None and values[-4] == 9


def test_log_page_with_echoed_page_number():
    frame = b"*s r 3 " + PAGE_DATA + f"{log_page_checksum(PAGE_DATA):02x}".encode() + b"\r\n"
    r = one(SS2Protocol(), frame)
    assert isinstance(r, DeviceReply) and r.text == PAGE_DATA.decode()


def test_log_page_bad_checksum_is_malformed():
    bad = (log_page_checksum(PAGE_DATA) + 1) % 256
    r = one(SS2Protocol(), page(PAGE_DATA, bad))
    assert isinstance(r, Malformed) and "checksum" in r.reason


def test_log_page_wrong_length_is_malformed():
    r = one(SS2Protocol(), page(PAGE_DATA[:-1]))
    assert isinstance(r, Malformed) and "255" in r.reason


def test_log_page_checksum_is_the_sum_of_the_sent_bytes():
    assert log_page_checksum(b"!" * 256) == (0x21 * 256) % 256 == 0
    assert log_page_checksum(b"\x22" + b"!" * 255) == 1


# --- SS2: what must never become a result ----------------------------------------------------

MALFORMED = [
    b"*X;2;002;31;0;146\r\n",  # truncated
    b"*X;2;002;31;0;146;1;0\r\n",  # a field too many for an SS2
    b"*X;0;002;31;0;146;1\r\n",
    b"*X;8;002;31;0;146;1\r\n",
    b"*X;9;002;31;0;146;1\r\n",
    b"*X;2;257;31;0;146;1\r\n",
    b"*X;2;02;31;0;146;1\r\n",
    b"*X;2;002;37;0;146;1\r\n",
    b"*X;2;002;99;0;146;1\r\n",
    b"*X;2;002;07;0;146;1\r\n",
    b"*X;2;002;3 ;0;146;1\r\n",
    b"*X;2;002;31;G;146;1\r\n",
    b"*X;2;002;31;10;146;1\r\n",
    b"*X;2;002;31;0;14a;1\r\n",
    b"*X;2;002;31;0;146;2\r\n",
    b"*X;2;002;31;0;146;\r\n",
    b"*X;2;00\xb2;31;0;146;1\r\n",  # non-ASCII
    b"*X;2;002;31;0;146;1\x07\r\n",  # control character
    b"*X;2 WARNING detected! Sending error signal...\r\n",  # controller log text (capture)
    b"*X\r\n",
    b"*\r\n",
    b"*1\r\n",
    b"*u:OK\r\n",
    b"hello\r\n",
    b"\xff\xfe\r\n",
    b"7\r\n",
    b"  \r\n",
    b"ab\r\n",
    b" 7 \r\n",
]


@pytest.mark.parametrize("line", MALFORMED)
def test_malformed_frames(line):
    out = feed(SS2Protocol(), line)
    assert out and all(isinstance(r, Malformed) and r.reason for r in out), out
    assert not any("decoder error" in r.reason for r in out)


def test_half_frame_at_eof_is_reported():
    p = SS2Protocol()
    assert feed(p, b"*X;2;002;31;0") == []
    out = p.eof()
    assert len(out) == 1 and isinstance(out[0], Malformed)
    assert p.eof() == []


def test_flood_is_reported_once_and_dropped():
    p = SS2Protocol()
    out = feed(p, b"*" + b"A" * 5000)
    assert len(out) == 1 and isinstance(out[0], Malformed) and "longer" in out[0].reason
    assert feed(p, b"AAAA\r\n*X;2;002;31;0;146;1\r\n")[-1].state == 2


def test_sensor_event_lines_are_unknown():
    assert isinstance(one(SS2Protocol(), b"bs 1\r\n"), Unknown)
    assert isinstance(one(SS2Protocol(), b"bn 17\r\n"), Unknown)


def test_resync_inside_a_corrupted_line_from_the_capture():
    out = feed(SS2Protocol(), b"*X;4;14*X;*X;4;146; 9;0;158;0\r\n")
    assert [type(r) for r in out] == [Malformed, Malformed, WheelStatus]
    assert out[2].spin == 146 and out[2].last_number == 9


# --- framing: whole, split, byte by byte, garbage, joined ----------------------------------

# (name, command sent before, frame, expected readings)
FRAMES: list[tuple[str, bytes, bytes, list[Reading]]] = [
    (
        "status",
        b"",
        b"*X;3;010;17;A;170;0\r\n",
        [
            status(
                b"*X;3;010;17;A;170;0",
                state=3,
                spin=10,
                last_number=17,
                flags=10,
                rpm=17.0,
                direction="clockwise",
            )
        ],
    ),
    ("bare number", b"", b" 7\r\n", [WinningNumber(frame=b" 7", number=7)]),
    (
        "bonus",
        b"",
        b"*Y;2;045;07\r\n",
        [BonusValue(frame=b"*Y;2;045;07", index=2, value=45, licence_days=7)],
    ),
    (
        "reply",
        b"*T C\r\n",
        b"*T c 8465\r\n",
        [DeviceReply(frame=b"*T c 8465", command="*T C", text="c 8465")],
    ),
    (
        "fault",
        b"",
        b"*F 4\r\n",
        [WheelFault(frame=b"*F 4", code=4, meaning="wrong ball direction")],
    ),
    (
        "page",
        b"*s r 1\r\n",
        page(PAGE_DATA),
        [DeviceReply(frame=page(PAGE_DATA)[:-2], command="*s r 1", text=PAGE_DATA.decode())],
    ),
    (
        "lf only",
        b"",
        b"*X;6;001;  ;0;000;0\n",
        [
            status(
                b"*X;6;001;  ;0;000;0",
                state=6,
                spin=1,
                last_number=None,
                flags=0,
                rpm=0.0,
                direction="clockwise",
            )
        ],
    ),
]
FRAME_IDS = [f[0] for f in FRAMES]


def run(chunks: list[bytes], before: bytes = b"", proto=None) -> list[Reading]:
    p = proto or SS2Protocol()
    if before:
        p.sent(before, 0.0)
    return feed_all(p, chunks, 0.1)


@pytest.mark.parametrize(("name", "before", "frame", "expected"), FRAMES, ids=FRAME_IDS)
def test_frame_whole(name, before, frame, expected):
    assert run([frame], before) == expected


@pytest.mark.parametrize(("name", "before", "frame", "expected"), FRAMES, ids=FRAME_IDS)
def test_frame_split_at_every_byte(name, before, frame, expected):
    for i in range(1, len(frame)):
        assert run([frame[:i], frame[i:]], before) == expected, i


@pytest.mark.parametrize(("name", "before", "frame", "expected"), FRAMES, ids=FRAME_IDS)
def test_frame_one_byte_at_a_time(name, before, frame, expected):
    assert run([frame[i : i + 1] for i in range(len(frame))], before) == expected


GARBAGE = b"\x00\xff\x13noise*"


@pytest.mark.parametrize(("name", "before", "frame", "expected"), FRAMES, ids=FRAME_IDS)
def test_frame_with_garbage_lines_before_and_after(name, before, frame, expected):
    data = GARBAGE + b"\r\n" + frame + GARBAGE + b"\r\n" + b"\xfe\xfd"
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        out = run(chunks, before)
        assert [r for r in out if not isinstance(r, Malformed)] == expected
        assert [r for r in out if isinstance(r, Malformed)] != []


@pytest.mark.parametrize(
    ("name", "before", "frame", "expected"),
    [f for f in FRAMES if f[2].startswith(b"*")],
    ids=[f[0] for f in FRAMES if f[2].startswith(b"*")],
)
def test_frame_after_unterminated_garbage_resyncs_on_star(name, before, frame, expected):
    out = run([b"\x00\xffjunk" + frame], before)
    assert out[0] == Malformed(frame=b"\x00\xffjunk", reason="bytes before the '*' of a frame")
    assert out[1:] == expected


def test_bad_checksum_page_then_good_frame():
    bad = page(PAGE_DATA, (log_page_checksum(PAGE_DATA) + 7) % 256)
    out = run([bad + b"*X;3;010;17;A;170;0\r\n"])
    assert isinstance(out[0], Malformed) and isinstance(out[1], WheelStatus) and len(out) == 2


def test_two_frames_joined():
    for (_, b1, f1, e1), (_, b2, f2, e2) in zip(FRAMES, FRAMES[1:] + FRAMES[:1], strict=True):
        data = f1 + f2
        p = SS2Protocol()
        p.sent(b1 + b2, 0.0)
        assert run([data], proto=p) == e1 + e2
        p = SS2Protocol()
        p.sent(b1 + b2, 0.0)
        assert run([data[i : i + 1] for i in range(len(data))], proto=p) == e1 + e2


# --- hypothesis -----------------------------------------------------------------------------


def could_hold_a_result(data: bytes) -> bool:
    """A status needs '*X;'; a bare number needs a line of exactly two digit/space characters."""
    if b"*X;" in data:
        return True
    return any(re.fullmatch(rb"[ 0-9]{2}", line) for line in re.split(rb"[\r\n]", data))


NOISE = st.binary(max_size=300) | st.lists(
    st.sampled_from(
        [
            b"*",
            b"X",
            b";",
            b"\r",
            b"\n",
            b" ",
            b"7",
            b"0",
            b"F",
            b"*X;",
            b"*F ",
            b"*s ",
            b"*Y;",
            b"\xff",
            b"~",
            b"*W ",
            b"*S",
            b"*N",
            b"1;",
            b"??",
        ]
    ),
    max_size=60,
).map(b"".join)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=NOISE, cuts=st.lists(st.integers(0, 400), max_size=8), sent=st.binary(max_size=40))
def test_random_bytes_never_raise_and_never_invent_a_result(data, cuts, sent):
    for p in (SS2Protocol(), SS2Protocol(double_zero=True)):
        p.sent(sent, 0.0)
        out = feed_all(p, pieces(data, cuts), 0.5)
        assert all(isinstance(r, Reading) for r in out)
        assert not any(isinstance(r, Malformed) and "decoder error" in r.reason for r in out)
        if not could_hold_a_result(data):
            assert not any(isinstance(r, RESULTS) for r in out)


@settings(max_examples=300)
@given(data=NOISE, cuts=st.lists(st.integers(0, 400), max_size=8))
def test_mercury_random_bytes_never_raise(data, cuts):
    out = feed_all(M360Protocol("extended"), pieces(data, cuts), 0.5)
    assert not any(isinstance(r, Malformed) and "decoder error" in r.reason for r in out)
    if b"*X;" not in data and b"*W" not in data and not could_hold_a_result(data):
        assert not any(isinstance(r, RESULTS) for r in out)


@st.composite
def ss2_frame(draw) -> bytes:
    kind = draw(st.sampled_from(["status", "bare", "bonus", "reply", "fault"]))
    if kind == "status":
        win = draw(st.sampled_from(["  "] + [f"{n:>2}" for n in range(37)]))
        return (
            f"*X;{draw(st.integers(1, 7))};{draw(st.integers(0, 256)):03d};{win};"
            f"{draw(st.sampled_from('0123456789abcdefABCDEF'))};{draw(st.integers(0, 999)):03d};"
            f"{draw(st.integers(0, 1))}"
        ).encode()
    if kind == "bare":
        return f"{draw(st.integers(0, 36)):>2}".encode()
    if kind == "bonus":
        return f"*Y;{draw(st.integers(1, 6))};{draw(st.integers(0, 255)):03d}".encode()
    if kind == "reply":
        return draw(st.sampled_from([b"*u OK", b"*P NO", b"*T c 8465", b"*S V2.50", b"*R OK"]))
    return f"*F {draw(st.sampled_from([1, 2, 5, 23, 100]))}".encode()


@settings(max_examples=300)
@given(
    frames=st.lists(ss2_frame(), min_size=1, max_size=20),
    ends=st.lists(st.sampled_from([b"\r\n", b"\n", b"\r"]), min_size=20, max_size=20),
    cuts=st.lists(st.integers(0, 2000), max_size=30),
)
def test_valid_streams_split_randomly_decode_identically(frames, ends, cuts):
    data = b"".join(f + e for f, e in zip(frames, ends, strict=False))
    whole = SS2Protocol().feed(data, 1.0)
    assert len(whole) == len(frames)
    assert not any(isinstance(r, Malformed) for r in whole)
    p = SS2Protocol()
    split: list[Reading] = []
    for c in pieces(data, cuts):
        split += p.feed(c, 1.0)
    assert split == whole


# --- the real captures ---------------------------------------------------------------------


def read_capture(path: Path) -> tuple[dict[str, str], list[tuple[float, str, bytes]]]:
    """``# key: value`` headers, then ``<timestamp> <rx|tx> <bytes with C escapes>``."""
    header: dict[str, str] = {}
    rows: list[tuple[float, str, bytes]] = []
    epoch = datetime(2000, 1, 1)
    for line in path.read_text(encoding="ascii").splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            header[key.strip()] = value.strip()
            continue
        if not line:
            continue
        stamp, direction, escaped = line.split(" ", 2)  # the frame may start with a space
        assert direction in ("rx", "tx")
        raw = escaped.encode("latin-1").decode("unicode_escape").encode("latin-1")
        rows.append(((datetime.fromisoformat(stamp) - epoch).total_seconds(), direction, raw))
    return header, rows


def replay(rows) -> list[Reading]:
    p = SS2Protocol()
    out: list[Reading] = []
    for now, direction, raw in rows:
        if direction == "tx":
            assert p.sent(raw, now) == []
        else:
            out += p.feed(raw, now)
    return out + p.eof()


def capture(name: str) -> Path:
    path = CAPTURES / name
    assert path.exists(), f"real capture {path} is missing from the repository"
    return path


STATUS_RE = re.compile(r"\*X;([1-7]);\d{3};(?:  |[ \d]\d);[0-9A-Fa-f];\d{3};[01]\\r\\n$")
BARE_RE = re.compile(r"^\S+ rx [ \d]\d\\r\\n$")
# The controller logged some of its own messages as if the wheel sent them.
CONTROLLER_LOG_RE = re.compile(r"^\S+ rx \*X;\d [A-Za-z][^;]*\\r\\n$")
CORRUPTED = "*X;4;14*X;*X;4;146; 9;0;158;0"


def independent_counts(path: Path) -> Counter:
    c: Counter = Counter()
    for line in path.read_text(encoding="ascii").splitlines():
        if line.startswith("#") or " rx " not in line:
            continue
        m = STATUS_RE.search(line)
        if m:
            c["status"] += 1
            c[f"state {m.group(1)}"] += 1
        c["bare"] += bool(BARE_RE.match(line))
        c["controller log"] += bool(CONTROLLER_LOG_RE.match(line))
        c["corrupted"] += CORRUPTED in line
        c["replies"] += bool(re.match(r"^\S+ rx \*[A-WYZa-z]", line))
    return c


@pytest.mark.parametrize("name", ["studio-selftest-2025-09.log", "studio-settings-2025-11.log"])
def test_real_capture_replays(name):
    path = capture(name)
    header, rows = read_capture(path)
    assert "SlingShot 2" in header["device"]
    readings = replay(rows)
    kinds = Counter(type(r).__name__ for r in readings)
    want = independent_counts(path)

    assert kinds["WinningNumber"] == want["bare"]
    statuses = [r for r in readings if isinstance(r, WheelStatus)]
    assert len(statuses) == want["status"]
    assert sum(r.state == 5 for r in statuses) == want["state 5"]
    for s in range(1, 8):
        assert sum(r.state == s for r in statuses) == want[f"state {s}"]

    # Every Malformed is explained: the controller's own log text written as rx,
    # and the two cut-off frames before the good one on the corrupted line.
    malformed = [r for r in readings if isinstance(r, Malformed)]
    log_text = [r for r in malformed if re.fullmatch(rb"\*X;\d [A-Za-z][^;]*", r.frame)]
    fragments = [r for r in malformed if r.frame in (b"*X;4;14", b"*X;")]
    assert len(log_text) == want["controller log"]
    assert len(fragments) == 2 * want["corrupted"]
    assert len(malformed) == len(log_text) + len(fragments)

    replies = [r for r in readings if isinstance(r, DeviceReply)]
    assert len(replies) == want["replies"]
    assert not [r for r in replies if r.command.startswith("?")]  # every reply matched
    for r in replies:
        if r.command.startswith("*T "):
            assert r.text.split()[0] == r.command[3].lower()
    assert kinds.keys() <= {"WheelStatus", "WinningNumber", "DeviceReply", "Malformed"}


def test_selftest_capture_counts():
    """The numbers of the September capture, so a change in decoding shows here."""
    _, rows = read_capture(capture("studio-selftest-2025-09.log"))
    kinds = Counter(type(r).__name__ for r in replay(rows))
    assert kinds == Counter(WheelStatus=17650, WinningNumber=184, DeviceReply=230, Malformed=223)


def test_settings_capture_counts():
    _, rows = read_capture(capture("studio-settings-2025-11.log"))
    readings = replay(rows)
    assert Counter(type(r).__name__ for r in readings) == Counter(WheelStatus=181, DeviceReply=75)
    texts = {r.command: r.text for r in readings if isinstance(r, DeviceReply)}
    assert texts["*V"].startswith("V2.50 Cammegh / Syoptic - SlingShot 2")
    assert texts["*T J"] == "j 6705 3386 26 1"


def test_bare_number_matches_the_next_state_five():
    """In the capture the bare line comes just before the status frames enter state 5."""
    _, rows = read_capture(capture("studio-selftest-2025-09.log"))
    pending = None
    checked = 0
    for r in replay(rows):
        if isinstance(r, WinningNumber):
            pending = r.number
        elif isinstance(r, WheelStatus) and r.state == 5 and pending is not None:
            assert r.last_number == pending
            pending = None
            checked += 1
    assert checked > 150


# --- Mercury 360 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"*S\r\n", GameEvent(frame=b"*S", what="started")),
        (b"*N\r\n", GameEvent(frame=b"*N", what="no-more-bets")),
        (b"*W 17\r\n", WinningNumber(frame=b"*W 17", number=17)),
        (b"*W  7\r\n", WinningNumber(frame=b"*W  7", number=7)),
        (b"*W 07\r\n", WinningNumber(frame=b"*W 07", number=7)),
        (b"*W 7\r\n", WinningNumber(frame=b"*W 7", number=7)),
        (b"*W 00\r\n", WinningNumber(frame=b"*W 00", number=0)),
        (b"12\r\n", WinningNumber(frame=b"12", number=12)),
    ],
)
def test_mercury_basic(line, expected):
    assert one(M360Protocol("basic"), line) == expected


@pytest.mark.parametrize(
    "line", [b"*W 37\r\n", b"*W xx\r\n", b"*W\r\n", b"*W 123\r\n", b"*N 1\r\n"]
)
def test_mercury_basic_malformed(line):
    expected = Unknown if line.startswith(b"*N") else Malformed
    assert isinstance(one(M360Protocol("basic"), line), expected)


def test_mercury_double_zero():
    assert one(M360Protocol("basic", double_zero=True), b"*W 00\r\n").number == 37
    assert one(M360Protocol("basic", double_zero=True), b"*W  0\r\n").number == 0


def test_mercury_advanced():
    r = one(M360Protocol("advanced"), b"*X;3;012;17;0;254;0\r\n")
    assert r == status(
        b"*X;3;012;17;0;254;0",
        state=3,
        spin=12,
        last_number=17,
        flags=0,
        rpm=25.4,
        direction="clockwise",
    )
    assert one(M360Protocol("advanced"), b"*X;7;255;  ;8;000;1\r\n").state == 7


@pytest.mark.parametrize(
    "line",
    [
        b"*X;3;256;17;0;254;0\r\n",  # count is 0-255
        b"*X;3;012;17;0;015;0\r\n",  # 1.5 rpm reads 000
        b"*X;3;012;17;0;601;0\r\n",  # 60.1 rpm reads 000
        b"*X;8;012;17;0;254;0\r\n",
        b"*X;3;012;17;0;254;0;0112;0A;1;0C000\r\n",  # extended with a field missing
    ],
)
def test_mercury_advanced_malformed(line):
    assert isinstance(one(M360Protocol("advanced"), line), Malformed)


def test_mercury_extended():
    r = one(M360Protocol("extended"), b"*X;4;012;17;0;254;0;0112;0A;1;0C000;23\r\n")
    assert r == status(
        b"*X;4;012;17;0;254;0;0112;0A;1;0C000;23",
        state=4,
        spin=12,
        last_number=17,
        flags=0,
        rpm=25.4,
        direction="clockwise",
        extended_flags=0x112,
        ball_revolutions=10,
        ball_direction="anticlockwise",
        ball_period=1.5,
        pocket=23,
    )


def test_mercury_extended_unknown_fields():
    r = one(M360Protocol("extended"), b"*X;3;012;17;1;254;1;0040;03;?;?????;??\r\n")
    assert (r.ball_direction, r.ball_period, r.pocket) == ("unknown", None, None)
    assert (r.ball_revolutions, r.extended_flags, r.flags) == (3, 0x40, 1)
    r = one(M360Protocol("extended"), b"*X;5;013;22;0;200;0;0100;0f;0;08000; 5\r\n")
    assert (r.ball_direction, r.ball_period, r.pocket, r.ball_revolutions) == (
        "clockwise",
        1.0,
        5,
        15,
    )


@pytest.mark.parametrize(
    "line",
    [
        b"*X;3;012;17;0;254;0;0040;03;2;?????;??\r\n",
        b"*X;3;012;17;0;254;0;0040;03;?;??1??;??\r\n",
        b"*X;3;012;17;0;254;0;040;03;?;?????;??\r\n",
        b"*X;3;012;17;0;254;0;0040;3;?;?????;??\r\n",
        b"*X;3;012;17;0;254;0;0040;03;?;?????;?\r\n",
        b"*X;3;012;17;0;254;0;0040;03;?;?????;40\r\n",
        b"*X;3;012;17;0;254;0;0040;03;?;?????;??;1\r\n",
        b"*X;3;012;17;0;254;0;004G;03;?;?????;??\r\n",
    ],
)
def test_mercury_extended_malformed(line):
    assert isinstance(one(M360Protocol("extended"), line), Malformed)


def test_mercury_x_command_returns_the_level():
    p = M360Protocol("advanced")
    p.sent(b"*X\r\n", 0.0)
    out = feed(p, b"*X;2;001;  ;0;000;0\r\n*X 2\r\n", 0.1)
    assert isinstance(out[0], WheelStatus)
    assert out[1] == DeviceReply(frame=b"*X 2", command="*X", text="2", quiet=True)
    assert isinstance(one(M360Protocol("advanced"), b"*X 2\r\n"), Malformed)


def test_mercury_unknown_frame():
    assert isinstance(one(M360Protocol("basic"), b"*Q 1\r\n"), Unknown)


# --- drivers, options and commands -----------------------------------------------------------


def test_ss2_driver_push_defaults():
    d = SS2Driver(SS2Options())
    assert d.name == "cammegh-ss2" and d.transport == "serial"
    assert (d.serial_defaults.baudrate, d.serial_defaults.bytesize) == (9600, 8)
    assert (d.serial_defaults.parity, d.serial_defaults.stopbits) == ("N", 1)
    assert d.stale_after == 3.0 and d.poll() is None
    assert d.on_connect() == [b"*V\r\n", b"*q 1\r\n"]
    assert isinstance(d.protocol(), SS2Protocol)
    assert d.void_acknowledgement() is None
    assert SS2Driver(SS2Options(acknowledge_void=True)).void_acknowledgement() == b"*R\r\n"


def test_ss2_driver_poll_mode():
    d = SS2Driver(msgspec.convert({"status_mode": "poll", "poll_interval": 0.2}, SS2Options))
    assert d.poll() == (0.2, b"*X\r\n")
    assert b"*q 1\r\n" not in d.on_connect()
    d = SS2Driver(SS2Options(operating_mode=1159))
    assert d.on_connect() == [b"*V\r\n", b"*o 1159\r\n", b"*q 1\r\n"]


@pytest.mark.parametrize(
    "raw",
    [
        {"status_mode": "poll", "poll_interval": 0.05},
        {"status_mode": "sometimes"},
        {"status_mode": "poll", "poll_interval": 2.0, "stale_after": 1.0},
        {"operating_mode": 1031},  # push without bit 128
        {"operating_mode": 70000},
        {"stale_after": 0},
        {"pol_interval": 1.0},
    ],
)
def test_ss2_options_refused(raw):
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(raw, SS2Options)


def test_m360_driver_and_options():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({}, M360Options)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"level": "expert"}, M360Options)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"level": "basic", "status_mode": "poll"}, M360Options)
    d = M360Driver(msgspec.convert({"level": "extended"}, M360Options))
    assert d.name == "cammegh-m360" and d.stale_after is None and d.poll() is None
    assert d.on_connect() == [b"*X\r\n"]
    p = d.protocol()
    assert isinstance(p, M360Protocol) and p.level == "extended"
    assert M360Driver(M360Options(level="advanced", stale_after=5.0)).stale_after == 5.0


def test_command_helpers():
    assert poll() == b"*X\r\n"
    assert command("T", "C") == b"*T C\r\n"
    assert command("d", "s", "h", 12) == b"*d s h 12\r\n"
    assert read_tuning("c") == b"*T C\r\n"
    assert set_tuning("S", "16.0", "18.0") == b"*T s 16.0 18.0\r\n"
    assert read_log_page(3) == b"*s r 3\r\n"
    assert set_mode(1159) == b"*o 1159\r\n"
    assert user_start() == b"*u 1\r\n" and user_start(anticlockwise=True) == b"*u 3\r\n"


@pytest.mark.parametrize(
    "call",
    [
        lambda: command("XX"),
        lambda: command("1"),
        lambda: command("é"),
        lambda: command("T", "a b"),
        lambda: command("T", ""),
        lambda: command("T", "x\r\n*P 0"),
        lambda: command("T", -1),
        lambda: command("T", True),
        lambda: set_mode(65536),
        lambda: read_tuning("CC"),
        lambda: set_tuning("c"),
        lambda: read_log_page(-1),
    ],
)
def test_command_helpers_refuse_bad_input(call):
    with pytest.raises(ValueError):
        call()
