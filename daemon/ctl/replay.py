"""``tablectl replay``: captures through the real protocol and table, offline, events out."""

from __future__ import annotations

import argparse
import sys

from daemon.ctl.shared import EXIT_OK, EXIT_USAGE
from daemon.runtime.config import ConfigError, load


def cmd_replay(a: argparse.Namespace) -> int:
    from daemon.pipeline.capture import CaptureError
    from daemon.pipeline.capture import load as load_capture
    from daemon.pipeline.replay import replay

    try:
        settings = load(a.config) if a.config else None
        caps = [load_capture(p) for p in a.captures]
        r = replay(caps, settings)
    except (CaptureError, ConfigError, OSError) as e:
        print(f"tablectl replay: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = sys.stdout.buffer
    if sys.stdout.isatty() and not a.json:  # a person: one readable line per event
        from daemon.tools.describe import describe

        for ev in r.events:
            out.write(describe(ev, r.table.game.describe).encode() + b"\n")
    else:  # a pipe or --json: the events themselves, as the bus carries them
        for line in r.lines():
            out.write(line + b"\n")
    st = r.stats
    print(
        f"# {len(r.events)} events from {st.frames} frames ({st.malformed} malformed, "
        f"{st.unknown} unknown), {st.commands} commands ({len(st.refused)} refused)",
        file=sys.stderr,
    )
    for why in st.refused:
        print(f"#   refused: {why}", file=sys.stderr)
    return EXIT_OK
