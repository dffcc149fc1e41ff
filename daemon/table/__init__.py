"""The table tier: what every game shares, and the API games are written against.

``from daemon.table import …`` is how a game (ours or a third party's) imports the table:
this ``__init__`` is that API, and only that — each name is defined in the module of its job
beside it: the inputs (``inputs.py``), commands and roles (``command_spec.py``), the state
and :class:`Decision` (``decision.py``), alarms (``alarms.py``), the :class:`Game` protocol
and its optional members' defaults (``game.py``), the commands every table takes
(``table_commands.py``) and :class:`Table`, the decide/apply around one game (``table.py``).
The modules here import each other by their own names, never through this package (it
may not be initialised yet when they load).
"""

from daemon.table.alarms import (
    R_NOISE,
    active_alarm,
    device_fault,
    line_noise_alarm,
    raise_alarm,
    raise_or_repeat,
)
from daemon.table.command_spec import ARGS_MAX_BYTES, REASON, ROLES, Arg, CommandSpec, spec
from daemon.table.decision import Alarm, Decision, TableState
from daemon.table.game import Game, GameDefaults
from daemon.table.inputs import Command, DeviceHealth, DeviceReading, Input
from daemon.table.table import Table
from daemon.table.table_commands import SESSION_COMMANDS

__all__ = [
    "ARGS_MAX_BYTES", "REASON", "ROLES", "R_NOISE", "SESSION_COMMANDS", "Alarm", "Arg", "Command",
    "CommandSpec", "Decision", "DeviceHealth", "DeviceReading", "Game", "GameDefaults", "Input",
    "Table", "TableState", "active_alarm", "device_fault", "line_noise_alarm", "raise_alarm",
    "raise_or_repeat", "spec",
]
