"""Write tests/captures/shuffler-ref/: a shuffler's frames and the table's answers, by hand.

The frames are built with the driver's own encoder (``drivers/shuffler_ref.py``), so the
capture is what the reference protocol puts on the wire: a good shuffle that makes a
shoe, a wrong count that takes the cards out of play, a deck order that must never be
read, a jam during a hand (voided, wagers returned), the door opening and closing.
"""

from __future__ import annotations

from pathlib import Path

from daemon.pipeline.capture import escape, format_time
from drivers.shuffler_ref import encode_frame

HERE = Path(__file__).parent / "shuffler-ref"
T0 = 1_793_563_200.0
RANKS = ",".join(["32"] * 13)


def main() -> None:
    t = T0
    lines = [
        "# what: a counted shuffle makes a shoe; a wrong count, a deck order, a jam mid-hand, the door",
        "# driver: shuffler-ref",
        "# game: baccarat",
        "# name: shuffler",
        "# table: cap",
        "# game.require_shuffle: true",
        '# game.start_burn: "none"',
        "# source: tests/captures/make_shuffler_captures.py (frames from the driver's encoder)",
    ]

    def rx(body: str, dt: float = 1.0) -> None:
        nonlocal t
        t += dt
        lines.append(f"{format_time(t)} rx {escape(encode_frame(body.encode()))}")

    def cmd(text: str, dt: float = 1.0) -> None:
        nonlocal t
        t += dt
        lines.append(f"{format_time(t)} cmd {text}")

    cmd("shoe.new actor=dealer1 role=dealer")  # refused: no counted shuffle yet
    rx("S;41;8")
    rx("M;41;416;415", 40)  # the count is wrong: the cards are out of play
    cmd("shoe.new actor=dealer1 role=dealer")  # still refused
    rx("S;42;8", 60)
    rx("D;" + ",".join(["AS", "KD", "7H"] * 4))  # a deck order: dropped, never read
    rx(f"C;42;8;416;{RANKS}", 40)
    cmd("shoe.new actor=dealer1 role=dealer")
    cmd("betting.open actor=croupier role=dealer source=timer", 2)
    cmd("betting.close actor=croupier role=dealer source=timer", 8)
    rx("J;ELEVATOR", 2)  # a jam during the hand: void, wagers returned
    rx("O;OPEN", 5)
    rx("O;CLOSED", 20)
    (HERE / "shuffles.log").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
