"""What the dealer's buttons ask the table: a panel's :class:`~drivers.readings.ButtonPressed`
becomes a table :class:`~daemon.table.Command` with source ``button``, exactly what a control
command is (roles checked, journaled, refused with a reason).

The map lives daemon-side because a button's meaning is the table's, not the wiring's
(``docs/protocols/gpio-panel.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from daemon.table.inputs import Command
from drivers.readings import ButtonPressed

#: button → (command, args)
BUTTON_COMMANDS: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "close_betting": ("betting.close", {}),
    "cut_card": ("shoe.cut-card", {}),
    "card_exposed": ("card.exposed", {}),
    "request_void": ("hand.void", {"reason": "void button on the dealer's panel"}),
    "new_shoe": ("shoe.new", {}),
}


def button_submit(submit: Callable[..., Any], device: str) -> Callable[..., Any]:
    """A panel's ``submit``: each press as the table command its button stands for."""

    def send(press: ButtonPressed, reply: bool = False) -> Any:
        command, args = BUTTON_COMMANDS[press.button]
        cmd = Command(command, dict(args), device, press.role, source="button", mono=press.at)
        return submit(cmd, reply=reply)

    return send
