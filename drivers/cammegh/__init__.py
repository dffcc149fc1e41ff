"""Cammegh roulette wheels: SlingShot 2 (automatic) and Mercury 360 (manual, in-rim reader).

Both speak ``*``-framed ASCII lines ended by CR LF at 9600 8N1 with no checksum
on live frames, plus one frame without ``*``: the bare winning-number line
(`` 7``, ``23``). The same letters mean different things on different models
(``*X`` polls the status on an SS2 but returns the protocol level on a
Mercury 360), so each model has its own protocol class.

Sources, cited in comments as:

* [dev] Cammegh *SS2 Series Developers Information* (V2.07; V2.10 page images),
* [int] Cammegh *Mercury 360 Integration Configuration Guide*,
* [cap] real SS2 traffic, ``tests/captures/cammegh-ss2/`` (firmware V2.50),
* [ours] a decision of this driver where the vendor says nothing; each is
  listed in ``docs/protocols/cammegh.md``.

Nothing here raises on received bytes: every line becomes a reading, and
garbage becomes :class:`~drivers.readings.Malformed` with a reason.

The package by job: :mod:`.facts` (the vendor's tables), :mod:`.commands` (the
bytes written), :mod:`.replies` (a reply matched to the command that asked),
:mod:`.frames` (the frame grammar), :mod:`.protocol` (what both models share),
:mod:`.tools` (a technician's sessions and the log pages, for ``tablectl wheel``),
:mod:`.ss2` and :mod:`.m360` (each model's protocol, options and driver). This
module re-exports the public names, so ``drivers.cammegh:SS2Driver`` stays the
entry point and callers import from ``drivers.cammegh``.
"""

from drivers.cammegh.commands import (
    command,
    identify,
    poll,
    power,
    read_log_page,
    read_tuning,
    restart,
    self_test,
    sensor_events,
    set_mode,
    set_tuning,
    status_output,
    user_start,
)
from drivers.cammegh.facts import (
    BALL_PERIOD_HZ,
    FAULT_CODES,
    LOG_PAGE_BYTES,
    LOG_UNUSED,
    M360_EXTENDED_FLAGS,
    M360_FLAGS,
    M360_STATES,
    MODE_BITS,
    SS2_FLAGS,
    SS2_STATES,
    Level,
    decode_log_page,
    fault_meaning,
    flag_names,
    log_page_checksum,
)
from drivers.cammegh.m360 import M360Driver, M360Options, M360Protocol
from drivers.cammegh.ss2 import SS2_COMMANDS, SS2Driver, SS2Options, SS2Protocol
from drivers.readings import DOUBLE_ZERO

__all__ = [
    "BALL_PERIOD_HZ",
    "DOUBLE_ZERO",
    "FAULT_CODES",
    "LOG_PAGE_BYTES",
    "LOG_UNUSED",
    "M360_EXTENDED_FLAGS",
    "M360_FLAGS",
    "M360_STATES",
    "MODE_BITS",
    "SS2_COMMANDS",
    "SS2_FLAGS",
    "SS2_STATES",
    "Level",
    "M360Driver",
    "M360Options",
    "M360Protocol",
    "SS2Driver",
    "SS2Options",
    "SS2Protocol",
    "command",
    "decode_log_page",
    "fault_meaning",
    "flag_names",
    "identify",
    "log_page_checksum",
    "poll",
    "power",
    "read_log_page",
    "read_tuning",
    "restart",
    "self_test",
    "sensor_events",
    "set_mode",
    "set_tuning",
    "status_output",
    "user_start",
]
