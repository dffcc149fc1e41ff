"""``tablectl verify`` and ``tablectl recall``: the journal read on its own, no daemon needed.

Recall cuts the journal into games where the game's describer says one ends (its
results and voids) and names one by the describer's ``key`` (``shoe:hand``, a spin, a
round): it never looks at which game it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from daemon.ctl.shared import (
    EXIT_ATTENTION,
    EXIT_OK,
    EXIT_USAGE,
    default_config,
    print_json,
    settings,
)
from daemon.runtime.config import ConfigError


def _journal_path(a: argparse.Namespace) -> Path:
    if getattr(a, "journal", None):
        return Path(a.journal)
    return settings(a).journal_path


def cmd_verify(a: argparse.Namespace) -> int:
    """Exit 0 only when everything the journal holds was checked: a secret row left
    unopened (no game known, or a game without a check) is exit 1, said why (issue 33)."""
    from daemon.journal import verify_file

    path = _journal_path(a)
    if not path.exists():
        if a.json:
            print_json({"path": str(path), "ok": False, "failure": f"no journal at {path}"})
        print(f"no journal at {path}", file=sys.stderr)
        return EXIT_USAGE
    game, check = _secret_check(a)
    how = None
    r = verify_file(path, proof_check=_proof_check(a), secrets=check, marks=_marks(a))
    if r.secrets and not r.secrets_checked and game is None:
        game, check = _only_secret_game()
        if check is not None:  # the one installed game that journals secret rows
            how = "the only installed game with secret rows"
            r = verify_file(path, proof_check=_proof_check(a), secrets=check, marks=_marks(a))
    unchecked = bool(r.secrets and not r.secrets_checked)
    rc = EXIT_ATTENTION if r.failure is not None or unchecked else EXIT_OK
    if a.json:
        print_json(
            {
                "path": str(path),
                "ok": rc == EXIT_OK,
                "failure": r.failure,
                "events": r.checked,
                "head_seq": r.head_seq,
                "head_hash": r.head_hash,
                "snapshots": r.snapshots,
                "unsealed_snapshots": r.unsealed,
                "proofs": r.proofs,
                "secret_rows": r.secrets,
                "secrets_checked": r.secrets_checked,
                "game": game,
                "head_marks": r.marks,
                "head_marks_unread": [str(x) for x in r.marks_unread],
            }
        )
        return rc
    if r.failure is not None:
        print(f"FAILED: {r.failure}")
        return rc
    if not r.head_seq:
        print(f"ok: {path}: empty journal")
        return rc
    snaps = f"{r.snapshots} snapshot(s) proven by the chain"
    if r.unsealed:
        snaps += f", {r.unsealed} older unsealed one(s) not used"
    if r.proofs:
        snaps += f", {r.proofs} stored proof(s) matching it"
    if r.secrets and r.secrets_checked:
        snaps += f", {r.secrets} secret row(s) open their commitments"
        if how:
            snaps += f" (game {game}: {how})"
    elif r.secrets:
        why = f"{game} has no secret check" if game else "no game known"
        snaps += f", {r.secrets} secret row(s) NOT checked ({why}: pass --game)"
    if r.marks:
        snaps += f", head mark(s): {r.marks} (not behind them)"
    for unread in r.marks_unread:
        snaps += f", head mark {unread}: NOT checked"
    assert r.head_hash is not None
    print(
        f"{'ok' if rc == EXIT_OK else 'INCOMPLETE'}: {path}: {r.checked} events, chain intact, "
        f"{snaps}, head seq {r.head_seq} hash {r.head_hash[:16]}…"
    )
    return rc


def _only_secret_game() -> tuple[str | None, Any]:
    """The one installed game that journals secret rows and its check, else (None, None)."""
    from daemon import games

    found = [(n, c) for n, g in games.games().items() if (c := g.check_secrets) is not None]
    return found[0] if len(found) == 1 else (None, None)


def _marks(a: argparse.Namespace) -> list[Path] | None:
    """The head marks the start holds the journal against (the config's); None for a journal
    given by path (the mark beside it)."""
    if getattr(a, "journal", None):
        return None
    from daemon.runtime.config import head_marks

    return head_marks(settings(a))


def _proof_check(a: argparse.Namespace) -> Any:
    """Checks stored proofs' signatures with the table's checkpoint key (its ``.pub`` beside
    it: tablectl need not read the secret); None without a config naming one, or when that
    public key is not there (the proofs are then checked against the chain only)."""
    if getattr(a, "journal", None):
        return None
    from daemon.security import resolve, verify_checkpoint

    s = settings(a)
    key = s.config.security.checkpoint_key
    if key is None:
        return None
    public = Path(f"{resolve(Path(s.source).resolve().parent, key)}.pub")
    if not public.is_file():
        return None
    return lambda cp: verify_checkpoint(public, cp)


def _secret_check(a: argparse.Namespace) -> tuple[str | None, Any]:
    """The journal's game (``--game``, else the config's) and its check of secret rows, if any.

    A journal given by path may come from another table: a config that cannot
    be read then only means the secrets stay unchecked, said so in the result.
    """
    name = getattr(a, "game", None)
    if name is None and getattr(a, "journal", None) and not _config_named(a):
        return None, None  # a file from anywhere: not the default config's game (issue 33)
    if name is None:
        try:
            name = settings(a).config.table.game
        except (ConfigError, OSError):
            if not getattr(a, "journal", None):
                raise
            return None, None
    check = _game(a, name).check_secrets
    if check is None and not getattr(a, "journal", None):
        from daemon.journal import no_secrets  # the config's own journal: as its start holds it

        return name, no_secrets
    return name, check


def _config_named(a: argparse.Namespace) -> bool:
    """True when the user named a table or config (``--config``, ``-t``, ``$TABLED_CONFIG``)."""
    import os

    return bool(a.config or getattr(a, "table", None) or os.environ.get("TABLED_CONFIG"))


def _describer(a: argparse.Namespace) -> Any:
    """The reading of the journal's game: ``--game``, else the config's."""
    return _game(a, getattr(a, "game", None) or settings(a).config.table.game).describe


def _game(a: argparse.Namespace, name: str) -> Any:
    """The installed game class ``name``; an unknown one is a config error naming the games."""
    from daemon import games

    cls = games.find(name)
    if cls is None:
        known = ", ".join(games.names()) or "none installed"
        raise ConfigError(Path(a.config or default_config()), [f"unknown game {name!r} ({known})"])
    return cls


def cmd_recall(a: argparse.Namespace) -> int:
    from daemon.journal import connect, read_events

    path = _journal_path(a)
    describe = _describer(a)
    ends = sorted(describe.ends)
    marks = ",".join("?" * len(ends))
    db = connect(path, readonly=True)
    if a.hand:
        # one game, named by the game's key fields: SHOE:HAND for card games, a spin or round
        parts = a.hand.split(":")
        if len(parts) != len(describe.key) or not all(p.isdigit() for p in parts):
            print(
                f"tablectl recall: --hand {a.hand!r}: this game is named by "
                f"{':'.join(k.upper() for k in describe.key)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        cond = " AND ".join(f"json_extract(body, '$.data.{k}') = ?" for k in describe.key)
        rows = db.execute(
            f"SELECT seq FROM events WHERE type IN ({marks}) AND {cond} ORDER BY seq DESC LIMIT 1",
            (*ends, *map(int, parts)),
        ).fetchall()
    else:
        rows = db.execute(
            f"SELECT seq FROM events WHERE type IN ({marks}) ORDER BY seq DESC LIMIT ?",
            (*ends, a.last),
        ).fetchall()
    if not rows:
        if a.json:  # --json is kept: an empty list, not a sentence (issue 33)
            print_json([])
            return EXIT_OK if not a.hand else EXIT_ATTENTION
        if not a.hand:
            print("no games in the journal yet")
            return EXIT_OK
        last = db.execute(
            f"SELECT body FROM events WHERE type IN ({marks}) ORDER BY seq DESC LIMIT 1", ends
        ).fetchone()
        if last is None:
            print("no games in the journal yet")
            return EXIT_OK
        d = json.loads(last[0])["data"]
        ref = ":".join(str(d.get(k)) for k in describe.key)
        kind = (
            ":".join(k.upper() for k in describe.key)
            if len(describe.key) > 1
            else f"a {describe.key[0]} number"
        )
        print(
            f"no game {a.hand} in the journal: this table's games are named by {kind}; "
            f"the last is {ref}",
            file=sys.stderr,
        )
        return EXIT_ATTENTION
    first_end = rows[-1][0]
    prev = db.execute(
        f"SELECT MAX(seq) FROM events WHERE seq < ? AND type IN ({marks})",
        (first_end, *ends),
    ).fetchone()[0]
    played: list[dict[str, Any]] = []
    cur: dict[str, Any] = {"events": []}
    for ev in read_events(db, (prev or 0) + 1, rows[0][0]):
        cur["events"].append(msgspec.to_builtins(ev))
        if ev.type in describe.ends:
            cur["end"] = msgspec.to_builtins(ev)
            played.append(cur)
            cur = {"events": []}
    _corrections(db, played)
    if a.json:
        print_json(played)
        return EXIT_OK
    for g in played:
        print(_game_text(g, describe))
    return EXIT_OK


def _corrections(db: Any, played: list[dict[str, Any]]) -> None:
    """Each recalled result's corrections (``result.corrected``, ``daemon/table/corrections.py``),
    in order, under its game's ``corrections``: recall shows the result as corrected."""
    from daemon.journal.events import decode

    by_seq = {g["end"]["seq"]: g for g in played}
    if not by_seq:
        return
    rows = db.execute(
        "SELECT body FROM events WHERE type = 'result.corrected' AND "
        f"json_extract(body, '$.data.supersedes') IN ({','.join('?' * len(by_seq))}) ORDER BY seq",
        tuple(by_seq),
    ).fetchall()
    for (body,) in rows:
        ev = msgspec.to_builtins(decode(body))
        by_seq[ev["data"]["supersedes"]].setdefault("corrections", []).append(ev)


def _game_text(g: dict[str, Any], describe: Any) -> str:
    end = g["end"]
    lines = [f"seq {end['seq']}  {end['time']}  " + describe.recall(end["type"], end["data"])]
    for fix in g.get("corrections", ()):
        c = fix["data"]
        lines.append(
            f"    CORRECTED at seq {fix['seq']} {fix['time']} by {c['by']} ({c['reason']}; "
            f"ref {c['ref']}): " + describe.recall(c["result_type"], c["result"])
        )
    for ev in g["events"]:
        line = describe.step(ev["type"], ev["data"])
        if line is not None:
            lines.append(f"    {ev['seq']:>8}  {line}")
    if end["data"].get("dealer_on_duty"):  # the dealer on duty (daemon/table/sessions.py)
        lines[0] += f"  dealer {end['data']['dealer_on_duty']}"
    return "\n".join(lines)
