"""Properties every device protocol keeps, checked with hypothesis.

For each sans-I/O protocol (the serial shoe in its three encodings, with and
without ``drop_repeats``; the USB HID scanner's keyboard reports; the
reference shuffler; the reference dice shaker; the Cammegh SlingShot 2 and
Mercury 360):

1. **Random bytes never raise and never invent a reading.** A *valid-kind*
   reading is one that means something to the table, i.e. anything but
   ``Malformed`` and (where a protocol has it) ``Unknown``. Per protocol, the
   property is made exact by two halves:

   * *silence*: input that cannot hold a frame gives no valid-kind reading
     at all (shoe-line: no ASCII letter or digit; shuffler: no STX; dice: no
     ``0x7A``; HID: no Enter key pressed);
   * *traceability*: every valid-kind reading comes from a complete frame
     that is really in the input, and is exactly what the protocol's own
     frame decoder makes of that frame (shoe-line: a whole CR/LF-delimited
     line; shuffler: STX body ETX and a matching XOR; dice: a whole frame
     with its trailer and checksum; HID: a code of mappable keys).

2. **Mutated valid frames never raise** (a byte flipped, inserted or
   deleted, several times), and what still comes out is traceable.
3. **Split invariance**: a valid stream fed in pieces cut at random points
   (and, for one fixed stream per protocol, at every point and one byte at a
   time) gives exactly the readings it gives fed whole.

Cammegh random-byte and SS2 split properties already live in
``tests/test_cammegh_protocol.py`` (``test_random_bytes_never_raise_and_never_invent_a_result``,
``test_mercury_random_bytes_never_raise``,
``test_valid_streams_split_randomly_decode_identically``); here only what it
lacks: mutation for both models and split invariance for the Mercury 360.

Hypothesis runs derandomized when ``CI`` is set, so CI sees the same
examples every run; locally it explores new ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_harness import feed_all, pieces

from drivers import dice_ref, framing, shuffler_ref
from drivers.base import Protocol
from drivers.cammegh import M360Protocol, SS2Protocol
from drivers.card_codes import ENCODINGS, encode
from drivers.cards import DECK
from drivers.hid_scanner import MAX_CODE, HidKeyboardProtocol, HidScannerOptions, key_char
from drivers.readings import Malformed, Reading, Unknown
from drivers.shoe_line import ShoeLineOptions, ShoeLineProtocol, line_reading
from drivers.tile_line import TileLineOptions, TileLineProtocol
from drivers.tile_readings import ALL_TILES

CI = bool(os.environ.get("CI"))


def fast(n: int = 150) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=CI,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def valid_kind(r: Reading) -> bool:
    return not isinstance(r, Malformed | Unknown)


# --- mutation ---------------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with 1-6 bytes flipped, inserted or deleted."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete"]))
        i = draw(st.integers(0, max(0, len(b) - (op != "insert"))))
        if op == "flip" and b:
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            b.insert(i, draw(st.integers(0, 255)))
        elif b:
            del b[i]
    return bytes(b)


# --- the protocols ----------------------------------------------------------------------------

ENDS = st.sampled_from([b"\r\n", b"\n", b"\r"])


def complete_lines(data: bytes) -> set[bytes]:
    """Every whole line of ``data`` (ended by CR or LF), as the line framer cuts them."""
    parts = data.replace(b"\r", b"\n").split(b"\n")
    return {p for p in parts[:-1] if p}


@dataclass(frozen=True)
class Case:
    """One protocol under test."""

    name: str
    make: Callable[[], Protocol]
    frame: st.SearchStrategy[bytes]  # one valid frame, with its terminator if it has one
    noise: st.SearchStrategy[bytes]
    #: False: this input cannot hold any frame, so it must give no valid-kind reading.
    could_hold: Callable[[bytes], bool]
    #: True: ``r`` is a valid-kind reading made from a frame really present in ``data``.
    traced: Callable[[Reading, bytes], bool]


# shoe-line ---------------------------------------------------------------------------------


def shoe_options(encoding: str, drop_repeats: bool = False) -> ShoeLineOptions:
    return ShoeLineOptions(encoding=encoding, drop_repeats=drop_repeats)  # type: ignore[arg-type]


@st.composite
def shoe_code(draw: st.DrawFn, encoding: str) -> bytes:
    kind = draw(st.sampled_from(["card", "card", "card", "face-up", "cut", "error"]))
    if kind == "cut":
        return b"CUT"
    if kind == "error":
        return b"ERR"
    code = encode(draw(st.sampled_from(DECK)), encoding, draw(st.sampled_from("ABCDE")))  # type: ignore[arg-type]
    if encoding != "boxed" and draw(st.booleans()):
        code = code.lower()
    return code.encode() + (b"!" if kind == "face-up" else b"")


def shoe_noise(encoding: str) -> st.SearchStrategy[bytes]:
    tokens = [b"T", b"H", b"10", b"A", b"S", b"Q", b"1", b"3", b"0", b"!", b" ", b"\t"]
    tokens += [b"\r", b"\n", b"\r\n", b"CUT", b"ERR", b"A3020", b"E4130", b"\xff", b"\x00", b"~"]
    return st.binary(max_size=300) | st.lists(
        st.sampled_from(tokens) | shoe_code(encoding), max_size=60
    ).map(b"".join)


def shoe_case(encoding: str, drop_repeats: bool = False) -> Case:
    o = shoe_options(encoding, drop_repeats)

    def traced(r: Reading, data: bytes) -> bool:
        return r.frame in complete_lines(data) and r == line_reading(r.frame, o)

    return Case(
        f"shoe-line/{encoding}" + ("/drop-repeats" if drop_repeats else ""),
        lambda: ShoeLineProtocol(o),
        st.tuples(shoe_code(encoding), ENDS).map(b"".join),
        shoe_noise(encoding),
        lambda data: any(chr(c).isalnum() for c in data if c < 128),
        traced,
    )


# tile-line ---------------------------------------------------------------------------------

TILE_OPTIONS = TileLineOptions(codes={"T10": "wd"})
TILE_CODES = [*sorted(ALL_TILES), "5z", "7Z", "T10", "ERR", "ERR07"]


@st.composite
def tile_code(draw: st.DrawFn) -> bytes:
    c = draw(st.sampled_from(TILE_CODES))
    return (c.upper() if draw(st.booleans()) else c).encode()


def tile_traced(r: Reading, data: bytes) -> bool:
    return r.frame in complete_lines(data) and r == TileLineProtocol(TILE_OPTIONS).line(r.frame)


TILES = Case(
    "tile-line",
    lambda: TileLineProtocol(TILE_OPTIONS),
    st.tuples(tile_code(), ENDS).map(b"".join),
    st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"9p", b"wd", b"5", b"z", b"\r\n", b"\n", b"ERR", b"\xff", b" ", b"~"])
        | tile_code(),
        max_size=60,
    ).map(b"".join),
    lambda data: any(chr(c).isalnum() for c in data if c < 128),
    tile_traced,
)


# shuffler-ref ------------------------------------------------------------------------------

SHUFFLER_BODIES = [
    b"V;Acme;RS-1;2.4.1;000123",
    b"Q;IDLE",
    b"Q;FAULT;jam",
    b"T;PASS",
    b"T;FAIL;3",
    b"G;OK",
    b"G;NO;door open",
    b"S;12;8",
    b"C;12;8;416",
    b"C;12;1;52;" + b",".join([b"4"] * 13),
    b"M;12;416;415",
    b"J;input",
    b"J",
    b"O;OPEN",
    b"O;CLOSED",
    b"F;3",
    b"F;42;mystery",
    b"D;AS;KH;2C",  # deck order: withheld, an Unknown
]


@st.composite
def shuffler_frame(draw: st.DrawFn) -> bytes:
    """STX body ETX, the checksum in upper or lower case, CR LF or not."""
    body = draw(st.sampled_from(SHUFFLER_BODIES))
    check = b"%02X" % framing.stx_checksum(body)
    if draw(st.booleans()):
        check = check.lower()
    return b"\x02" + body + b"\x03" + check + draw(st.sampled_from([b"\r\n", b""]))


def shuffler_traced(r: Reading, data: bytes) -> bool:
    body = r.frame
    head = b"\x02" + body + b"\x03"
    want = framing.stx_checksum(body)
    i = data.find(head)
    while i >= 0:
        tail = data[i + len(head) : i + len(head) + 2]
        if len(tail) == 2 and all(c in b"0123456789abcdefABCDEF" for c in tail):
            if int(tail, 16) == want:
                return r == shuffler_ref.parse_body(body)
        i = data.find(head, i + 1)
    return False


SHUFFLER = Case(
    "shuffler-ref",
    shuffler_ref.ShufflerRefProtocol,
    shuffler_frame(),
    st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"\x02", b"\x03", b"\r\n", b"O;OPEN", b"S;1;8", b"3F", b";", b"\xff"])
        | shuffler_frame(),
        max_size=40,
    ).map(b"".join),
    lambda data: 0x02 in data,
    shuffler_traced,
)


# dice-ref ----------------------------------------------------------------------------------


@st.composite
def dice_frame(draw: st.DrawFn) -> bytes:
    f = dice_ref.encode_frame
    kind = draw(st.sampled_from("ASRNFVQT"))
    if kind == "R":
        return f(b"R", bytes(draw(st.lists(st.integers(1, 6), min_size=3, max_size=3))))
    if kind == "A":
        return f(b"A", bytes([ord(draw(st.sampled_from("SQVT"))), draw(st.integers(0, 4))]))
    if kind == "S":
        return f(b"S")
    if kind == "N":
        return f(b"N", bytes([draw(st.integers(1, 3))]))
    if kind == "F":
        return f(b"F", bytes([draw(st.integers(1, 9))]))
    if kind == "V":
        return f(b"V", b"Acme;DS-3;1.0.2;000042")
    if kind == "Q":
        return f(b"Q", bytes([draw(st.integers(0, 4))]))
    return f(b"T", bytes([draw(st.integers(0, 9))]))


def dice_traced(r: Reading, data: bytes) -> bool:
    raw = r.frame
    ok = (
        raw in data
        and len(raw) >= dice_ref.OVERHEAD
        and raw[0] == dice_ref.SOF
        and raw[-1] == dice_ref.EOF
        and len(raw) == raw[1] + dice_ref.OVERHEAD
        and raw[-2] == dice_ref.checksum(raw[2], raw[3:-2])
    )
    return ok and r == dice_ref.parse_frame(dice_ref.Frame(raw[2], raw[3:-2], raw))


DICE = Case(
    "dice-ref",
    dice_ref.DiceRefProtocol,
    dice_frame(),
    st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"\x7a", b"\x55", b"\x03", b"R", b"\x00", b"\x20"]) | dice_frame(),
        max_size=40,
    ).map(b"".join),
    lambda data: dice_ref.SOF in data,
    dice_traced,
)


# Cammegh (mutation and Mercury split only; see the module docstring) --------------------------


@st.composite
def m360_frame(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["S", "N", "W", "bare", "advanced", "extended"]))
    end = draw(ENDS)
    if kind in ("S", "N"):
        return f"*{kind}".encode() + end
    if kind == "W":
        return f"*W {draw(st.integers(0, 36)):>2}".encode() + end
    if kind == "bare":
        return f"{draw(st.integers(0, 36)):>2}".encode() + end
    win = draw(st.sampled_from(["  "] + [f"{n:>2}" for n in range(37)]))
    rpm = draw(st.sampled_from([0, *range(20, 601, 37)]))
    text = (
        f"*X;{draw(st.integers(1, 7))};{draw(st.integers(0, 255)):03d};{win};"
        f"{draw(st.sampled_from('0123456789abcdefABCDEF'))};{rpm:03d};{draw(st.integers(0, 1))}"
    )
    if kind == "extended":
        pocket = draw(st.sampled_from(["??", *(f"{n:02d}" for n in range(37))]))
        period = draw(st.sampled_from(["?????", "0C000", "08000", "1F3A0"]))
        text += (
            f";{draw(st.integers(0, 0x1FF)):04X};{draw(st.integers(0, 255)):02x};"
            f"{draw(st.sampled_from('01?'))};{period};{pocket}"
        )
    return text.encode() + end


@st.composite
def ss2_frame(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["status", "bare", "bonus", "reply"]))
    end = draw(ENDS)
    if kind == "status":
        win = draw(st.sampled_from(["  "] + [f"{n:>2}" for n in range(37)]))
        text = (
            f"*X;{draw(st.integers(1, 7))};{draw(st.integers(0, 256)):03d};{win};"
            f"{draw(st.sampled_from('0123456789abcdef'))};{draw(st.integers(0, 999)):03d};"
            f"{draw(st.integers(0, 1))}"
        )
    elif kind == "bare":
        text = f"{draw(st.integers(0, 36)):>2}"
    elif kind == "bonus":
        text = f"*Y;{draw(st.integers(1, 6))};{draw(st.integers(0, 255)):03d}"
    else:
        text = draw(st.sampled_from(["*u OK", "*P NO", "*T c 8465", "*S V2.50", "*F 5"]))
    return text.encode() + end


def cammegh_case(name: str, make: Callable[[], Protocol], frame: st.SearchStrategy[bytes]) -> Case:
    # Random bytes and traceability for Cammegh are tests/test_cammegh_protocol.py's; here a
    # valid-kind reading need only be whole (its frame is in the input).
    return Case(name, make, frame, st.binary(max_size=200), lambda d: True, lambda r, d: True)


SHOES = [shoe_case(e) for e in ENCODINGS] + [shoe_case("rank-suit", drop_repeats=True)]
BYTE_CASES = [*SHOES, SHUFFLER, DICE, TILES]
CAMMEGH = [
    cammegh_case("cammegh-ss2", SS2Protocol, ss2_frame()),
    cammegh_case("cammegh-m360", lambda: M360Protocol("extended"), m360_frame()),
]


def ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


#: drivers whose protocol is not a byte stream tested by a :class:`Case` here, and why
ELSEWHERE = {
    "hid-scanner": "8-byte keyboard reports: the test_hid_* properties below",
    "gpio-panel": "pin edges, no bytes: tests/test_gpio_panel.py",
}


def untested_drivers(drivers: dict[str, type]) -> list[str]:
    """The registered drivers whose module holds no protocol a case here builds."""
    import sys

    built = {type(c.make()) for c in [*BYTE_CASES, *CAMMEGH]}
    out = []
    for name, cls in sorted(drivers.items()):
        module = vars(sys.modules[cls.__module__]).values()
        if name not in ELSEWHERE and not built & {x for x in module if isinstance(x, type)}:
            out.append(name)
    return out


def test_every_registered_driver_s_protocol_has_a_case():
    """A new driver gets a case here (``docs/architecture.md``, add a device driver)."""
    from drivers.base import load_drivers

    assert untested_drivers(load_drivers()) == []
    assert untested_drivers({"acme": HidScannerOptions}) == ["acme"]  # the check can fail


def no_decoder_error(out: list[Reading]) -> None:
    assert all(isinstance(r, Reading) for r in out)
    assert not any(
        isinstance(r, Malformed) and ("decoder error" in r.reason or "protocol error" in r.reason)
        for r in out
    ), [r for r in out if isinstance(r, Malformed)]


# --- 1. random bytes --------------------------------------------------------------------------


@pytest.mark.parametrize("case", BYTE_CASES, ids=ids(BYTE_CASES))
@fast(100)
@given(data=st.data())
def test_random_bytes_never_raise_and_never_invent(case: Case, data: st.DataObject) -> None:
    raw = data.draw(case.noise, label="bytes")
    cuts = data.draw(st.lists(st.integers(0, 400), max_size=8), label="cuts")
    out = feed_all(case.make(), pieces(raw, cuts))
    no_decoder_error(out)
    valid = [r for r in out if valid_kind(r)]
    if not case.could_hold(raw):
        assert valid == []
    for r in valid:
        assert case.traced(r, raw), f"{r!r} is not a frame of the input"


@pytest.mark.parametrize("case", SHOES, ids=ids(SHOES))
def test_shoe_input_without_letters_or_digits_gives_only_malformed(case: Case) -> None:
    """The silence half, with every byte value that is not a letter or a digit."""
    allowed = bytes(c for c in range(256) if not (c < 128 and chr(c).isalnum()))
    raw = (allowed + b"\r\n") * 3 + b" ! \r\n!!\n\t\r" + allowed[::-1]
    out = feed_all(case.make(), [raw])
    assert out and all(isinstance(r, Malformed) for r in out)


#: issue 18 #8: control characters around a code (VT, FF, TAB, 0x1C-0x1F) that
#: ``str.strip()`` would remove; the protocol page says only spaces are stripped.
CONTROL_AROUND = [b"\x1cKH\x1f", b"\x0bQD\x0c", b"\tAS\x1d", b"\x1e2C\x1e"]


@pytest.mark.parametrize("line", CONTROL_AROUND, ids=repr)
def test_control_characters_around_a_code_are_malformed_never_a_card(line: bytes) -> None:
    p = ShoeLineProtocol(shoe_options("rank-suit"))
    (r,) = p.feed(line + b"\r\n", 0.0)
    assert isinstance(r, Malformed) and r.reason == "unprintable bytes" and r.frame == line
    # the scanner shares the verdict: the same code means the same on either wire
    assert isinstance(line_reading(line, shoe_options("rank-suit")), Malformed)


@fast(100)
@given(
    code=st.sampled_from([b"KH", b"10D", b"as", b"ERR", b"CUT"]),
    before=st.binary(max_size=3),
    after=st.binary(max_size=3),
)
def test_only_spaces_are_stripped_from_a_code(code: bytes, before: bytes, after: bytes) -> None:
    """Any byte but a space around a code spoils it; spaces alone never do."""
    o = shoe_options("rank-suit")
    ctrl = bytes(range(32)) + b"\x7f"
    before, after = (bytes(c for c in x if c in ctrl and c not in b"\r\n") for x in (before, after))
    r = line_reading(before + code + after, o)
    if before or after:
        assert isinstance(r, Malformed), r
    assert not isinstance(line_reading(b"  " + code + b" ", o), Malformed)


# --- 2. mutated valid frames ------------------------------------------------------------------


@pytest.mark.parametrize("case", BYTE_CASES + CAMMEGH, ids=ids(BYTE_CASES + CAMMEGH))
@fast(100)
@given(data=st.data())
def test_mutated_valid_frames_never_raise(case: Case, data: st.DataObject) -> None:
    frames = data.draw(st.lists(case.frame, min_size=1, max_size=8), label="frames")
    raw = data.draw(mutated(b"".join(frames)), label="mutated")
    cuts = data.draw(st.lists(st.integers(0, 400), max_size=6), label="cuts")
    out = feed_all(case.make(), pieces(raw, cuts))
    no_decoder_error(out)
    for r in out:
        if valid_kind(r):
            assert case.traced(r, raw), f"{r!r} is not a frame of the input"
            assert r.frame in raw


# --- 3. split invariance ------------------------------------------------------------------------


SPLIT_CASES = [*BYTE_CASES, CAMMEGH[1]]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=ids(SPLIT_CASES))
@fast(100)
@given(data=st.data())
def test_valid_stream_split_anywhere_decodes_the_same(case: Case, data: st.DataObject) -> None:
    frames = data.draw(st.lists(case.frame, min_size=1, max_size=15), label="frames")
    if data.draw(st.booleans(), label="repeat"):
        frames = [f for f in frames for _ in (0, 1)]  # each frame twice (what drop_repeats drops)
    stream = b"".join(frames)
    p = case.make()
    whole = feed_all(p, [stream])
    assert not any(isinstance(r, Malformed) for r in whole), whole
    if "drop-repeats" not in case.name:
        assert len(whole) == len(frames)
    cuts = data.draw(st.lists(st.integers(0, 5000), max_size=30), label="cuts")
    q = case.make()
    assert feed_all(q, pieces(stream, cuts)) == whole
    assert getattr(q, "repeats_dropped", 0) == getattr(p, "repeats_dropped", 0)


FIXED_STREAMS: dict[str, bytes] = {
    "shoe-line/rank-suit": b"TH\r\nas\n10D!\rCUT\r\nKC\r\nKC\r\nERR\r\n",
    "shoe-line/suit-rank": b"HT\r\nsa\nD10!\rCUT\r\nCK\r\nCK\r\nERR\r\n",
    "shoe-line/boxed": b"A3020\r\nC1130\nB2100!\rCUT\r\nE4010\r\nE4010\r\n",
    "shoe-line/rank-suit/drop-repeats": b"TH\r\nTH\r\nas\nAS\n10D\r10D\rCUT\r\nKC\r\n",
    "shuffler-ref": b"".join(framing.encode_stx_frame(b) for b in SHUFFLER_BODIES),
    "dice-ref": b"".join(
        [
            dice_ref.encode_frame(b"S"),
            dice_ref.encode_frame(b"R", bytes([3, 5, 6])),
            dice_ref.encode_frame(b"N", bytes([2])),
            dice_ref.encode_frame(b"V", b"Acme;DS-3;1.0.2;000042"),
            dice_ref.encode_frame(b"R", bytes([1, 1, 1])),
        ]
    ),
    "tile-line": b"9p\r\nWD\n5z\rT10\r\nERR07\r\n1p\r\n",
    "cammegh-m360": b"*S\r\n*N\r\n*W 17\r\n*X;4;012;17;0;254;0;0112;0A;1;0C000;23\r\n"
    b" 7\r\n*X;3;012;17;1;254;1;0040;03;?;?????;??\r\n",
}


@pytest.mark.parametrize("case", SPLIT_CASES, ids=ids(SPLIT_CASES))
def test_fixed_stream_split_at_every_point_and_byte_by_byte(case: Case) -> None:
    stream = FIXED_STREAMS[case.name]
    whole = feed_all(case.make(), [stream])
    assert whole and not any(isinstance(r, Malformed) for r in whole)
    for i in range(len(stream) + 1):
        assert feed_all(case.make(), [stream[:i], stream[i:]]) == whole, f"split at {i}"
    assert feed_all(case.make(), [stream[i : i + 1] for i in range(len(stream))]) == whole


@fast(100)
@given(raw=SHUFFLER.noise, cuts=st.lists(st.integers(0, 400), max_size=10))
def test_shuffler_any_bytes_split_anywhere_decode_the_same(raw: bytes, cuts: list[int]) -> None:
    """The shuffler framer is a byte-at-a-time machine: even garbage decodes the same."""
    whole = feed_all(shuffler_ref.ShufflerRefProtocol(), [raw])
    assert feed_all(shuffler_ref.ShufflerRefProtocol(), pieces(raw, cuts)) == whole


@pytest.mark.parametrize(
    ("make", "line", "cut"),
    [
        (lambda: ShoeLineProtocol(ShoeLineOptions()), b" " * 70 + b"TH\r\n", 66),
        (SS2Protocol, b"~" * 600 + b"*X;2;002;31;0;146;1\r\n", 520),
    ],
    ids=["shoe-line", "cammegh-ss2"],
)
def test_a_line_longer_than_the_bound_decodes_the_same_however_it_is_read(make, line, cut):
    """A read ending past the bound (64 / 512 bytes) inside the line drops it; one whole read keeps it."""
    whole = feed_all(make(), [line])
    split = feed_all(make(), [line[:cut], line[cut:]])
    assert [r for r in whole if valid_kind(r)] == [r for r in split if valid_kind(r)]
    assert not any(valid_kind(r) for r in whole)  # longer than the bound: never a reading


def test_dice_frame_carrying_a_frame_in_its_data_decodes_the_same_however_it_is_read() -> None:
    frame = dice_ref.encode_frame(b"R", bytes([3, 5]) + dice_ref.encode_frame(b"S"))
    whole = [r for r in feed_all(dice_ref.DiceRefProtocol(), [frame]) if valid_kind(r)]
    # the documented rule: a whole good frame inside a candidate's span wins (faces are
    # 1-6, so a real result never carries one) — the same verdict for every split
    assert [type(r).__name__ for r in whole] == ["DiceShaking"]
    for cut in range(1, len(frame)):
        split = feed_all(dice_ref.DiceRefProtocol(), [frame[:cut], frame[cut:]])
        assert [r for r in split if valid_kind(r)] == whole, cut


# --- the HID scanner: keyboard reports, not bytes ---------------------------------------------

HID_OPTIONS = msgspec.convert(
    {"vendor_id": 0x05E0, "product_id": 0x1200, "encoding": "suit-rank"}, HidScannerOptions
)
HID_ENTERS = (0x28, 0x58)
HID_ALPHABET = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890!@#$%^&*()")


def hid_report(*keys: int, mod: int = 0) -> bytes:
    return bytes([mod, 0, *keys, *([0] * (6 - len(keys)))])


def hid_typed(text: str) -> list[bytes]:
    """Each key pressed then released, then Enter: what a scanner sends for one code."""
    out = []
    for ch in text:
        if ch.isalpha():
            usage, shift = 0x04 + ord(ch.lower()) - ord("a"), ch.isupper()
        elif ch in "1234567890":
            usage, shift = 0x1E + "1234567890".index(ch), False
        else:
            usage, shift = 0x1E + "!@#$%^&*()".index(ch), True
        out += [hid_report(usage, mod=0x02 if shift else 0), hid_report()]
    return [*out, hid_report(0x28), hid_report()]


@st.composite
def hid_code(draw: st.DrawFn) -> list[bytes]:
    code = encode(draw(st.sampled_from(DECK)), "suit-rank")
    code = draw(st.sampled_from([code, code + "!", "CUT", "ERR", "S10", "X9"]))
    return hid_typed(code)


def hid_run(reports: list[bytes]) -> tuple[list[Reading], HidKeyboardProtocol]:
    p = HidKeyboardProtocol(HID_OPTIONS)
    out: list[Reading] = []
    for i, r in enumerate(reports):
        out += p.feed(r, i * 0.01)
    return out + p.eof(), p


def hid_traced(r: Reading) -> bool:
    text = r.frame.decode("ascii")
    return (
        0 < len(text) <= MAX_CODE
        and set(text) <= HID_ALPHABET
        and r == line_reading(r.frame, HID_OPTIONS)
    )


def without_enter(report: bytes) -> bytes:
    return report[:2] + bytes(0 if k in HID_ENTERS else k for k in report[2:])


#: key usages a scanner types, with Enter, ErrorRollOver, a modifier and anything else mixed in
HID_USAGE = st.sampled_from(
    [0, 0, 0, 0, 0, 0x04, 0x07, 0x0B, 0x16, 0x1E, 0x27, 0x28, 0x58, 0x01, 0xE1]
)
HID_REPORT = (
    st.tuples(
        st.sampled_from([0, 0x02, 0x20]) | st.integers(0, 255),
        st.just(0) | st.integers(0, 255),
        st.lists(HID_USAGE, min_size=6, max_size=6),
    ).map(lambda t: bytes([t[0], t[1], *t[2]]))
    | st.binary(min_size=8, max_size=8)
    | st.binary(max_size=12)
)


@fast(200)
@given(st.lists(HID_REPORT, max_size=60), st.booleans())
def test_hid_random_reports_never_raise_and_never_invent(reports: list[bytes], enter: bool):
    if not enter:
        reports = [without_enter(r) for r in reports]
    out, _ = hid_run(reports)
    valid = [r for r in out if valid_kind(r)]
    if not enter:
        assert valid == []  # no Enter pressed: nothing was scanned
    assert all(hid_traced(r) for r in valid), valid


@fast(100)
@given(data=st.data())
def test_hid_mutated_reports_never_raise(data: st.DataObject) -> None:
    codes = data.draw(st.lists(hid_code(), min_size=1, max_size=5), label="codes")
    raw = data.draw(mutated(b"".join(r for code in codes for r in code)), label="mutated")
    reports = [raw[i : i + 8] for i in range(0, len(raw), 8)]
    out, _ = hid_run(reports)
    assert all(hid_traced(r) for r in out if valid_kind(r))


@fast(100)
@given(data=st.data())
def test_hid_a_report_sent_again_changes_nothing(data: st.DataObject) -> None:
    """The "split" of a report stream: a keyboard may repeat its state; keys held are not typed again."""
    codes = data.draw(st.lists(hid_code(), min_size=1, max_size=6), label="codes")
    reports = [r for code in codes for r in code]
    once, _ = hid_run(reports)
    assert len(once) == len(codes) and all(valid_kind(r) for r in once)
    repeats = data.draw(st.lists(st.integers(1, 3), min_size=len(reports), max_size=len(reports)))
    again, _ = hid_run([r for r, n in zip(reports, repeats, strict=True) for _ in range(n)])
    assert again == once


def test_hid_key_alphabet_is_what_key_char_can_type() -> None:
    typed = {key_char(u, s) for u in range(256) for s in (False, True)} - {None}
    assert typed == HID_ALPHABET
