"""Dealer and table sessions: who deals, whether the table is open, its limits (issue 30).

Every game has them, so the table decides them (:func:`decide`, called by
``daemon.table.Table`` for the commands in :data:`COMMANDS`) and folds them (:func:`apply`)
into ``TableState.session``. Like everything else they are rebuilt from the journal: a
dealer signed in before a stop or a crash is still on duty after the restart (the start
journals nothing about them) until signed out, relieved, or the table closes.

Why a dealer may be signed in by the dealer role: it is the dealer's own station (or the
game server beside it) that knows who stands at the table; a staff system signs in with a
supervisor key. Opening, closing and limits are the pit's (supervisor). ``docs/security.md``
(Roles per command) has the map; ``docs/operations.md`` (Dealer and table sessions) the use.

Pure: no clock, no I/O; imports nothing of the table's at run time (the table imports this).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from daemon.table.decision import Decision, TableState
    from daemon.table.inputs import Command

#: a dealer's id: a staff number or a badge's code, as the house's staff system spells it
DEALER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,39}$")
#: one spot's limits, ``SPOT=MIN-MAX`` (``tie=5-500``)
SPOT = re.compile(r"^([a-z][a-z0-9_]{0,31})=(\d{1,12})-(\d{1,12})$")

#: the event types this module folds
TYPES = frozenset(
    {"dealer.signed_in", "dealer.signed_out", "table.opened", "table.closed", "table.limits"}
)


class Session(msgspec.Struct, frozen=True):
    """The table's session as the journal leaves it."""

    #: the dealer on duty; None: none signed in
    dealer: str | None = None
    #: rounds settled (results) since that dealer signed in
    rounds: int = 0
    #: True open, False closed, None: never opened or closed on this journal
    open: bool | None = None
    #: ``{"min": N, "max": N, "spots": {spot: [min, max]}}``; empty: none set
    limits: dict[str, Any] = {}


def decide(t: TableState, c: Command, d: Decision) -> None:
    """One session command: its events, or ``d.refused`` saying why not."""
    s: Session = t.session
    a = c.args
    if c.name == "dealer.sign-in":
        dealer = str(a.get("dealer", ""))
        if not DEALER_ID.match(dealer):
            d.refused = (
                f"dealer.sign-in: {dealer!r} is not a dealer id (letters, digits, _ . @ -; "
                "at most 40, starting with a letter or digit)"
            )
        elif s.open is False:
            d.refused = "dealer.sign-in: the table is closed; open it first (tablectl table open)"
        elif s.dealer == dealer:
            d.refused = f"dealer.sign-in: {dealer} is already signed in"
        else:
            if s.dealer is not None:  # a relief: the dealer on duty hands over
                d.add(
                    "dealer.signed_out",
                    dealer=s.dealer,
                    by=c.actor,
                    reason=f"relieved by {dealer}",
                    rounds=s.rounds,
                )
            d.add("dealer.signed_in", dealer=dealer, by=c.actor, source=c.source)
    elif c.name == "dealer.sign-out":
        named = a.get("dealer")
        if s.dealer is None:
            d.refused = "dealer.sign-out: no dealer is signed in"
        elif named is not None and str(named) != s.dealer:
            d.refused = (
                f"dealer.sign-out: {named} is not signed in (the dealer on duty is {s.dealer})"
            )
        else:
            reason = str(a.get("reason") or "signed out")
            d.add("dealer.signed_out", dealer=s.dealer, by=c.actor, reason=reason, rounds=s.rounds)
    elif c.name == "table.open":
        if s.open:
            d.refused = "table.open: the table is already open"
        else:
            d.add("table.opened", by=c.actor, limits=s.limits)
    elif c.name == "table.close":
        if s.open is False:
            d.refused = "table.close: the table is already closed"
            return
        reason = str(a.get("reason") or "closed")
        if s.dealer is not None:
            d.add(
                "dealer.signed_out",
                dealer=s.dealer,
                by=c.actor,
                reason="table closed",
                rounds=s.rounds,
            )
        d.add("table.closed", by=c.actor, reason=reason)
    elif c.name == "table.limits":
        limits, why = parse_limits(a.get("min"), a.get("max"), a.get("spot"))
        if why is not None:
            d.refused = f"table.limits: {why}"
        elif limits == s.limits:
            d.refused = "table.limits: these limits are already in force"
        else:
            d.add("table.limits", by=c.actor, source="command", **limits)


#: why a badge is taken as it is [ours]
R_BADGE = (
    "[ours] a badge read at the table signs its dealer in (relieving the dealer on duty), "
    "or out when it is the dealer on duty's; what a reader cannot do is refused by an alarm"
)


def badge(t: TableState, device: str, code: str, d: Decision, alarm: Any) -> None:
    """A staff badge read on ``device``: its dealer signs in, or out when on duty.

    A reading cannot be answered like a command, so what cannot be done (a code that is
    no dealer id, a closed table) raises a ``badge-refused`` alarm saying why (``alarm``:
    ``daemon.table.raise_or_repeat``), for whoever watches the table.
    """
    s: Session = t.session
    why = None
    if not DEALER_ID.match(code):
        why = f"badge code {code!r} read on {device} is not a dealer id"
    elif s.open is False:
        why = f"badge {code} read on {device}: the table is closed (tablectl table open)"
    if why is not None:
        alarm(
            t,
            d,
            "badge-refused",
            why,
            rule=R_BADGE,
            action="check the badge and the table (tablectl status), sign the dealer in with "
            "tablectl dealer sign-in if needed, then clear the alarm",
            severity="warning",
            device=device,
        )
        return
    if s.dealer == code:
        d.add("dealer.signed_out", dealer=code, by=device, reason="badge", rounds=s.rounds)
        return
    if s.dealer is not None:
        d.add(
            "dealer.signed_out",
            dealer=s.dealer,
            by=device,
            reason=f"relieved by {code}",
            rounds=s.rounds,
        )
    d.add("dealer.signed_in", dealer=code, by=device, source="badge")


def parse_limits(low: Any, high: Any, spots: Any) -> tuple[dict[str, Any], str | None]:
    """The limits a command or ``[limits]`` gives, or why they are not limits."""
    out: dict[str, Any] = {}
    for key, v in (("min", low), ("max", high)):
        if v is None:
            continue
        n = _amount(v)
        if n is None:
            return {}, f"{key} must be a whole positive amount, not {v!r}"
        out[key] = n
    if "min" in out and "max" in out and out["min"] > out["max"]:
        return {}, f"min {out['min']} is above max {out['max']}"
    per: dict[str, list[int]] = {}
    items = [] if spots is None else spots if isinstance(spots, list) else [spots]
    for item in items:
        if isinstance(item, str) and (m := SPOT.match(item.strip())):
            name, lo, hi = m.group(1), int(m.group(2)), int(m.group(3))
        else:
            return {}, f"spot {item!r} is not SPOT=MIN-MAX (e.g. tie=5-500)"
        if lo <= 0 or lo > hi:
            return {}, f"spot {name}: min {lo} must be positive and not above max {hi}"
        if name in per:
            return {}, f"spot {name} is given twice"
        per[name] = [lo, hi]
    if not out and not per:
        return {}, "give --min, --max or --spot SPOT=MIN-MAX"
    return {**out, "spots": per}, None


def _amount(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v.strip())
    return v if isinstance(v, int) and v > 0 else None


def apply(s: Session, type_: str, data: dict[str, Any]) -> Session:
    """Fold one session event."""
    if type_ == "dealer.signed_in":
        return msgspec.structs.replace(s, dealer=data["dealer"], rounds=0)
    if type_ == "dealer.signed_out":
        return msgspec.structs.replace(s, dealer=None, rounds=0)
    if type_ == "table.opened":
        return msgspec.structs.replace(s, open=True)
    if type_ == "table.closed":
        return msgspec.structs.replace(s, open=False, dealer=None, rounds=0)
    if type_ == "table.limits":
        limits = {k: data[k] for k in ("min", "max", "spots") if k in data}
        return msgspec.structs.replace(s, limits=limits)
    return s


def counted(s: Session) -> Session:
    """A round settled: one more for the dealer on duty."""
    return s if s.dealer is None else msgspec.structs.replace(s, rounds=s.rounds + 1)


def summary(s: Session) -> dict[str, Any]:
    """``tablectl status``'s session part."""
    state = {True: "open", False: "closed", None: "not opened"}[s.open]
    return {"dealer": s.dealer, "dealer_rounds": s.rounds, "table": state, "limits": s.limits}
