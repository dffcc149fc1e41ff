"""Write the result-correction captures: a game's own capture cut after a result, then a
supervisor's ``result.correct`` of that result, a dealer's (refused: not journaled), an
impossible correction (refused), and the capture going on (``docs/captures.md``).

Each capture's correction names its result by seq, found by replaying the cut capture
through the real table; run this, then ``pytest tests/captures --regen-captures``.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from daemon.pipeline.capture import parse, parse_time  # noqa: E402
from daemon.pipeline.replay import replay  # noqa: E402

#: (written, source, lines kept before the correction, after, result type, good, bad input)
CAPTURES = [
    (
        "shoe-line/correction",
        "shoe-line/full-shoe-first-card-burn",
        200,
        60,
        "hand.result",
        "player=9S,KD",
        "player=9S,KD,5D",
    ),
    (
        "dragon-tiger/correction",
        "dragon-tiger/full-shoe",
        200,
        60,
        "hand.result",
        "dragon=KD",
        "tiger=2C,3C",
    ),
    (
        "cammegh-ss2/correction",
        "cammegh-ss2/synthetic-normal",
        60,
        40,
        "spin.result",
        "number=17",
        "number=37",
    ),
    ("dice-ref/correction", "dice-ref/rounds", 40, 30, "dice.result", "faces=4,4,4", "faces=1,2,7"),
    (
        "tile-line/correction",
        "tile-line/random-rounds",
        120,
        60,
        "round.result",
        "dice=1,1,1",
        "tiles=wd,wd,wd,1p,1p,2p,2p,3p,3p,4p,4p,5p",
    ),
]


def _time(t: float) -> str:
    dt = datetime.fromtimestamp(t, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def make(out: str, src: str, keep: int, after: int, result: str, good: str, bad: str) -> None:
    text = (HERE / f"{src}.log").read_text()
    head = [x for x in text.splitlines() if x.startswith("#") and not x.startswith("# what:")]
    body = [x for x in text.splitlines() if x.strip() and not x.startswith("#")]
    cap = parse("\n".join(head + body[:keep]) + "\n")
    seq = max(e.seq for e in replay([cap]).events if e.type == result)
    t = parse_time(body[keep - 1].split()[0])
    cmds = [
        f"cmd result.correct seq={seq} inputs={good} reason=read_wrong,_seen_on_the_video "
        "ref=INC-0412 actor=pit-boss role=supervisor",
        f"cmd result.correct seq={seq} inputs={good} reason=x ref=y actor=dealer1 role=dealer",
        f"cmd result.correct seq={seq} inputs={bad} reason=x ref=y actor=pit-boss role=supervisor",
    ]
    lines = [f"{_time(t + 0.001 * (i + 1))} {c}" for i, c in enumerate(cmds)]
    what = (
        f"# what: {src}.log cut after a {result} (seq {seq}), corrected by a supervisor "
        f"({good}); the dealer's correction and an impossible one ({bad}) refused; then "
        f"the capture goes on\n"
    )
    dst = HERE / f"{out}.log"
    dst.write_text(what + "\n".join(head + body[:keep] + lines + body[keep : keep + after]) + "\n")
    print(f"wrote {dst.relative_to(HERE)} (corrects seq {seq})")


if __name__ == "__main__":
    for c in CAPTURES:
        make(*c)
