"""One TOML file per table, validated into typed objects at load.

Every problem is reported, not just the first: a technician fixing a config
on a table PC should see the wrong type, the missing key and the typo in
one run. Each message names the file, the key path and the reason, e.g.
``demo.toml: devices[0].baudrate: expected an integer, got "fast"``.
Unknown keys are errors (a misspelt option silently ignored is a house rule
silently not applied). The checking in words is ``daemon/runtime/validate.py``'s (the
bridge's config uses it too); here are the sections, the checks across sections
(a driver's options, its simulator's, a rule its device cannot inform) and the
resolution of paths.
Why long: one schema read top to bottom, with its checks across sections.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from daemon.procedures.paytable import problems as paytable_problems
from daemon.runtime.validate import check, endpoint_problem
from drivers.base import DriverError, driver_class


class ConfigError(Exception):
    """All the problems found in one config file."""

    def __init__(self, path: str | Path, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__("\n".join(f"{Path(path).name}: {p}" for p in problems))


_Name = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")]


#: a table id is a topic prefix: no dots, so "<table>." never matches another table
_TableId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")]


class TableSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    id: _TableId
    game: str
    #: where the journal and runtime files go when not given elsewhere;
    #: relative paths are relative to the config file.
    state_dir: str | None = None
    runtime_dir: str | None = None


class DeviceConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: _Name
    driver: str
    #: a path (prefer /dev/serial/by-id/…), a pyserial URL (socket://…),
    #: a USB identity ``usb:VID:PID[:SERIAL]`` resolved at every connect,
    #: or ``sim`` for the driver's simulator on a pty.
    port: str
    baudrate: Annotated[int, msgspec.Meta(gt=0)] | None = None
    bytesize: Literal[5, 6, 7, 8] | None = None
    parity: Literal["N", "E", "O", "M", "S"] | None = None
    stopbits: Annotated[float, msgspec.Meta(ge=1, le=2)] | None = None
    stale_after: Annotated[float, msgspec.Meta(gt=0, le=86400)] | None = None
    #: malformed lines among the last 8 that make the line noisy (0: never; default 6).
    noise_limit: Annotated[int, msgspec.Meta(ge=0, le=8)] | None = None
    #: at most an hour: `inf` would mean a port that is never tried again
    reconnect_max: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 30.0
    options: dict[str, Any] = {}
    sim: dict[str, Any] = {}


class JournalSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    path: str = "journal.sqlite"
    snapshot_every: Annotated[int, msgspec.Meta(ge=10)] = 1000
    head_mark: str | None = None  # a second head mark, outside state_dir (journal/headmark.py)


class BusSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    publish: str = "tcp://127.0.0.1:7700"
    replay: str = "tcp://127.0.0.1:7701"
    heartbeat_interval: Annotated[float, msgspec.Meta(gt=0, le=60)] = 1.0
    #: publisher queue per subscriber; past it a slow one loses messages (repaired by replay)
    sndhwm: Annotated[int, msgspec.Meta(ge=1)] = 10000
    replay_hwm: Annotated[int, msgspec.Meta(ge=1)] = 1000
    replay_max: Annotated[int, msgspec.Meta(ge=1)] = 1_000_000
    max_connections: Annotated[int, msgspec.Meta(ge=1)] = 1000


class ControlSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: default: ``ipc://<runtime_dir>/control.sock``
    endpoint: str | None = None
    #: permission bits of the ipc socket file: who may talk to the daemon.
    mode: Annotated[int, msgspec.Meta(ge=0, le=0o777)] = 0o660
    #: the role of a peer of this socket: who can open the socket file is
    #: decided by its mode and group, so the socket itself stands for a role.
    #: The least by default: more is a choice made in the config (or a role socket).
    role: Literal["viewer", "dealer", "supervisor", "technician"] = "viewer"
    #: one more ipc socket per role, ``control-<role>.sock`` beside the main one,
    #: owned by the unix group given here (mode ``mode``): a technician in group
    #: ``tabled-tech`` can open only the technician socket. ``{}``: no role sockets.
    roles: dict[Literal["viewer", "dealer", "supervisor", "technician"], str] = {}


class LogSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    level: Literal["debug", "info", "warning", "error"] = "info"
    #: ``auto``: JSON lines when stdout is not a terminal (journald), console otherwise.
    format: Literal["auto", "json", "console"] = "auto"
    #: which committed events get a log line: ``all`` (the demo's live view), ``results``
    #: (results, voids, alarms, device and shoe changes: every card is in the journal
    #: anyway, and logging each costs the loop 7–10 %), or ``none``.
    events: Literal["all", "results", "none"] = "all"


class SecuritySection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Paths to key files only (never key material): see daemon/security/keyfiles.py and docs/config.md."""

    #: the table's CURVE secret certificate: CURVE on publish, replay and a tcp control socket
    server_key: str | None = None
    #: its public certificate, for clients; default: ``server_key`` without ``_secret``
    server_public: str | None = None
    #: directory of public certificates (``*.key``) allowed on publish and replay
    clients: str | None = None
    #: directory of public certificates allowed on a tcp control socket; each needs a role
    control_clients: str | None = None
    #: role of a control client by name (its file name without ``.key``); wins over its metadata
    roles: dict[str, Literal["viewer", "dealer", "supervisor", "technician"]] = {}
    #: tablectl's own secret certificate for a CURVE control socket (``--key`` wins)
    client_key: str | None = None
    #: Ed25519 secret key (PEM) that signs the journal head in every heartbeat
    checkpoint_key: str | None = None

    def __post_init__(self) -> None:
        if self.server_key is not None and self.clients is None:
            raise ValueError("server_key needs clients (the directory of allowed subscriber keys)")
        if self.server_key is None and (self.clients or self.control_clients or self.roles):
            raise ValueError("clients, control_clients and roles need server_key")


class MetricsSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: the Prometheus endpoint's port; none: no endpoint (0: any free port, for tests)
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] | None = None
    #: where it listens: loopback unless a scraper elsewhere must reach it
    address: str = "127.0.0.1"


class HooksSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: argv of the command run on alarms, devices lost/back, journal failing/recovered
    #: (the event as JSON on stdin); empty: no hook
    command: list[str] = []
    #: seconds a hook may run before it is killed
    timeout: Annotated[float, msgspec.Meta(gt=0, le=300)] = 10.0
    #: events waiting for the hook; past it the newest are dropped (and counted)
    queue: Annotated[int, msgspec.Meta(ge=1, le=10000)] = 100


_Amount = Annotated[int, msgspec.Meta(gt=0)]


class LimitsSection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The table's limits as the house sets them (whole amounts); journaled as ``table.limits``
    when they change (``daemon/table/sessions.py``, ``daemon/table/config_audit.py``)."""

    min: _Amount | None = None
    max: _Amount | None = None
    #: per bet spot: ``tie = [5, 500]``
    spots: dict[Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,31}$")], list[_Amount]] = {}

    def __post_init__(self) -> None:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        for spot, pair in self.spots.items():
            if len(pair) != 2 or pair[0] > pair[1]:
                raise ValueError(f"spots.{spot} must be [min, max] with min not above max")


class Config(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    table: TableSection
    devices: list[DeviceConfig] = []
    game: dict[str, Any] = {}
    limits: LimitsSection = LimitsSection()
    journal: JournalSection = JournalSection()
    bus: BusSection = BusSection()
    control: ControlSection = ControlSection()
    log: LogSection = LogSection()
    security: SecuritySection = SecuritySection()
    metrics: MetricsSection = MetricsSection()
    hooks: HooksSection = HooksSection()


class Settings(msgspec.Struct, frozen=True):
    """A validated config with paths resolved and typed game and driver options."""

    source: str
    config: Config
    game: Any
    device_options: dict[str, msgspec.Struct]
    state_dir: Path
    runtime_dir: Path
    journal_path: Path
    control_endpoint: str
    #: role → ipc endpoint of that role's socket (``control.roles``)
    role_endpoints: dict[str, str] = {}
    head_mark: Path | None = None  # [journal] head_mark or $TABLED_HEAD_MARK, resolved

    @property
    def table(self) -> str:
        return self.config.table.id


# -- checks across sections -------------------------------------------------------


def _check_rules_against(
    game: Any, needs: Mapping[str, str], i: int, drv: str, cls: Any, dev: dict[str, Any],
    errors: list[str],
) -> None:
    """A house rule the device cannot inform is refused, never silently ignored: the game
    says which keys need what (``needs``), the driver why it lacks it (``Driver.lacks``)."""
    if not isinstance(game, dict):
        return
    keys = [k for k in needs if k in game]
    if not keys:
        return
    driver = cls(msgspec.convert(dev.get("options", {}), cls.Options))
    for key in keys:
        why = driver.lacks(needs[key])
        if why is not None:
            errors.append(
                f"game.{key}: devices[{i}] ({drv}) {why}, so the rule could never "
                "be applied; remove the key"
            )


def _check_simulator(i: int, cls: Any, opts: dict[str, Any], sim: Any, errors: list[str]) -> None:
    """A simulator's own options, checked now (key by key against its typed ``Options``),
    not when the daemon starts it."""
    from drivers.sim import options_type

    sim_type = options_type(cls.name) or cls.Sim  # the GPIO panel's own
    before = len(errors)
    if isinstance(sim_type, type) and issubclass(sim_type, msgspec.Struct):
        check(sim, sim_type, f"devices[{i}].sim", errors)
    if len(errors) > before:
        return
    try:
        cls(msgspec.convert(opts, cls.Options)).simulator(sim)
    except NotImplementedError as e:
        errors.append(f"devices[{i}].port: {e}")
    except (ValueError, TypeError) as e:  # what only the simulator can tell
        errors.append(f"devices[{i}].sim: {e}")


def load(path: str | Path, env: dict[str, str] | None = None) -> Settings:
    """Read, validate and resolve one table config; raise :class:`ConfigError` listing every problem."""
    from daemon import games
    from daemon.runtime.transports import transport_problem

    env = dict(os.environ) if env is None else env
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(p, ["file not found"]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(p, [f"cannot read: {e}"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(p, [f"not valid TOML: {e}"]) from None

    errors: list[str] = []
    check(raw, Config, "", errors)
    # Game rules and driver options have their own schemas, chosen by name.
    table = raw.get("table") if isinstance(raw.get("table"), dict) else {}
    game_name = table.get("game")
    rules_type = None
    needs: Mapping[str, str] = {}
    if isinstance(game_name, str):
        game_cls = games.find(game_name)
        rules_type = None if game_cls is None else game_cls.Rules
        needs = {} if game_cls is None else game_cls.needs  # keys only some devices inform
        if rules_type is None:
            known = ", ".join(games.names()) or "none installed"
            errors.append(f'table.game: unknown game "{game_name}" (known: {known})')
        else:
            check(raw.get("game", {}), rules_type, "game", errors)
            errors += paytable_problems(game_name, rules_type, raw.get("game", {}))
    device_types: dict[str, Any] = {}
    names: set[str] = set()
    for i, dev in enumerate(raw.get("devices", []) if isinstance(raw.get("devices"), list) else []):
        if not isinstance(dev, dict):
            continue
        name = dev.get("name")
        if isinstance(name, str):
            if name in names:
                errors.append(f'devices[{i}].name: "{name}" is used by another device')
            names.add(name)
        drv = dev.get("driver")
        if isinstance(drv, str):
            try:
                cls = driver_class(drv)
            except DriverError as e:
                errors.append(f"devices[{i}].driver: {e}")
                continue
            before = len(errors)
            problem = transport_problem(cls, str(dev.get("port", "")))
            if problem is not None:
                errors.append(f"devices[{i}].driver: {problem}")
            opts = dev.get("options", {})
            if isinstance(opts, dict):  # not a table: the Config check above said so, once
                check(opts, cls.Options, f"devices[{i}].options", errors)
            device_types[str(name)] = cls.Options
            if len(errors) == before and isinstance(opts, dict):
                _check_rules_against(raw.get("game"), needs, i, drv, cls, dev, errors)
            if dev.get("port") == "sim" and len(errors) == before and isinstance(opts, dict):
                _check_simulator(i, cls, opts, dev.get("sim", {}), errors)
    for section, key in (("bus", "publish"), ("bus", "replay"), ("control", "endpoint")):
        value = raw.get(section, {}).get(key) if isinstance(raw.get(section), dict) else None
        if isinstance(value, str) and (problem := endpoint_problem(value)):
            errors.append(f"{section}.{key}: {problem}")
    if errors:
        raise ConfigError(p, errors)

    cfg = msgspec.convert(raw, Config)
    base = p.resolve().parent
    tid = cfg.table.id
    state_dir = _resolve(
        base, cfg.table.state_dir or env.get("TABLED_STATE_DIR") or f"../state/{tid}"
    )
    runtime_dir = _resolve(
        base, cfg.table.runtime_dir or env.get("TABLED_RUNTIME_DIR") or str(state_dir)
    )
    endpoint = cfg.control.endpoint or f"ipc://{runtime_dir / 'control.sock'}"
    if endpoint.startswith("ipc://") and len(endpoint) - 6 > 100:
        raise ConfigError(
            p,
            [
                f"control.endpoint: the ipc path {endpoint[6:]} is longer than the 100 bytes a "
                "unix socket allows; set control.endpoint or table.runtime_dir to a shorter path"
            ],
        )
    journal_path = _resolve(state_dir, cfg.journal.path)
    problems = _state_problems(state_dir, journal_path, cfg.journal.path)
    mark = cfg.journal.head_mark or env.get("TABLED_HEAD_MARK")
    head_mark = _resolve(base, mark) if mark else None
    if head_mark is not None and head_mark.is_relative_to(state_dir):  # restored with it
        problems.append(f"journal.head_mark: {head_mark} is inside table.state_dir; keep it out")
    if problems:
        raise ConfigError(p, problems)
    role_endpoints = {}
    if cfg.control.roles:
        if not endpoint.startswith("ipc://"):
            raise ConfigError(p, ["control.roles: role sockets need an ipc:// control.endpoint"])
        base_path = Path(endpoint[6:])
        role_endpoints = {
            role: f"ipc://{base_path.with_name(f'control-{role}.sock')}"
            for role in cfg.control.roles
        }
    return Settings(
        source=str(p),
        role_endpoints=role_endpoints,
        config=cfg,
        game=msgspec.convert(cfg.game, rules_type),
        device_options={
            d.name: msgspec.convert(d.options, device_types[d.name]) for d in cfg.devices
        },
        state_dir=state_dir,
        runtime_dir=runtime_dir,
        journal_path=journal_path,
        control_endpoint=endpoint,
        head_mark=head_mark,
    )


def _state_problems(state_dir: Path, journal: Path, given: str) -> list[str]:
    """What can be told from the config alone about where the journal goes."""
    out: list[str] = []
    for parent in (state_dir, *state_dir.parents):
        if parent.exists():
            if not parent.is_dir():
                out.append(f"table.state_dir: {state_dir}: {parent} is a file, not a directory")
            break
    if given.endswith(("/", "\\")) or Path(given).name in ("", ".", ".."):
        out.append(f"journal.path: {given!r} names a directory, not the journal's file")
    elif journal.is_dir():
        out.append(f"journal.path: {journal} is a directory, not the journal's file")
    elif journal == state_dir or state_dir.is_relative_to(journal):
        out.append(f"journal.path: {journal} is the state directory itself, not a file in it")
    return out


def prepare_state_dir(settings: Settings) -> None:
    """Make the state directory (owner-only) and check the daemon can write there.

    One line naming the key for each thing that would otherwise be a traceback later.
    """
    src = settings.source
    d = settings.state_dir
    jdir = settings.journal_path.parent
    for key, path in (("table.state_dir", d), ("journal.path", jdir)):
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except FileExistsError:
            raise ConfigError(src, [f"{key}: {path} exists and is not a directory"]) from None
        except OSError as e:
            raise ConfigError(src, [f"{key}: cannot create {path}: {e.strerror}"]) from None
        if not path.is_dir():
            raise ConfigError(src, [f"{key}: {path} is not a directory"])
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(
                src,
                [
                    f"{key}: {path} is not writable by this user (uid {os.getuid()}); "
                    "it must belong to the daemon's user"
                ],
            )


def _resolve(base: Path, value: str) -> Path:
    q = Path(value).expanduser()
    return q if q.is_absolute() else (base / q).resolve()


def effective(settings: Settings) -> dict[str, Any]:
    """The config as the daemon will run it, defaults filled in (``tablectl config check``)."""
    out: dict[str, Any] = msgspec.to_builtins(settings.config)
    out["game"] = msgspec.to_builtins(settings.game)
    for dev in out["devices"]:
        dev["options"] = msgspec.to_builtins(settings.device_options[dev["name"]])
    out["resolved"] = {
        "state_dir": str(settings.state_dir),
        "runtime_dir": str(settings.runtime_dir),
        "journal": str(settings.journal_path),
        "control": settings.control_endpoint,
        "head_marks": [str(m) for m in head_marks(settings)],  # what start and verify read
    }
    return out


def head_marks(settings: Settings) -> list[Path]:
    """The journal's head marks: beside it, and ``[journal] head_mark``."""
    from daemon.journal.headmark import paths

    return paths(str(settings.journal_path), [settings.head_mark] if settings.head_mark else [])
