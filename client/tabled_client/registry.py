"""The envelope, the registry of event types and the decoder built from it.

``DATA`` starts as the shared catalogue (the table's, the shoe procedure's and the round
procedure's types: ``catalogue.SHARED``); every game adds its own through :func:`register`: the
in-repository games' as this client loads them (``tabled_client.games``), a third party's when
the daemon loads it (``daemon/games/__init__.py``) or a backend registers it. A type several
games share (``hand.result``: baccarat, Dragon Tiger, blackjack) has one Struct per game in
``VARIANTS``; its event's ``data`` is whichever of them it is (:func:`pick`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Union

import msgspec
from msgspec import Meta

from tabled_client.base import Data, Hex64
from tabled_client.catalogue import SHARED


class Event(msgspec.Struct, kw_only=True, frozen=True, tag_field="type"):
    """The envelope every event shares; ``type`` is the tag (``docs/events.md``)."""

    v: Annotated[int, Meta(ge=1)]
    table: Annotated[str, Meta(pattern="^[A-Za-z0-9_-]+$")]
    seq: Annotated[int, Meta(ge=1)]
    time: Annotated[str, Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")]
    mono: float | None
    data: Any
    prev: Hex64
    hash: Hex64

    @property
    def type(self) -> str:
        """The event type (the union's tag)."""
        return self.__struct_config__.tag  # type: ignore[return-value]


#: event type -> its data Struct (the first registered, for a type several games share)
DATA: Final[dict[str, type[Data]]] = dict(SHARED)
#: event type -> every Struct its data may be, one per game that has the type
VARIANTS: Final[dict[str, tuple[type[Data], ...]]] = {t: (d,) for t, d in SHARED.items()}


def class_name(type_: str) -> str:
    """The envelope class's name: ``card.dealt`` is ``CardDealt``."""
    return "".join(p.capitalize() for p in type_.replace("_", ".").split("."))


def _event_class(type_: str, variants: tuple[type[Data], ...]) -> type[Event]:
    doc = f"Event type ``{type_}`` (docs/events.md)."
    # msgspec takes one untagged Struct per union: a shared type's data is kept raw, then
    # decoded as the Struct it is (:func:`pick`)
    data: Any = variants[0] if len(variants) == 1 else msgspec.Raw
    ns = {"__annotations__": {"data": data}, "__doc__": doc, "__module__": "tabled_client.events"}
    return msgspec.defstruct(  # type: ignore[no-any-return]
        class_name(type_),
        [("data", data)],
        bases=(Event,),
        tag=type_,
        kw_only=True,
        frozen=True,
        namespace=ns,
    )


#: event type -> its envelope class (``EVENTS["card.dealt"]`` is ``CardDealt``)
EVENTS: Final[dict[str, type[Event]]] = {t: _event_class(t, (d,)) for t, d in SHARED.items()}


def any_event() -> Any:
    """The tagged union of every event type registered now."""
    return Union[tuple(EVENTS.values())]  # type: ignore[valid-type]  # noqa: UP007


_decoder = msgspec.json.Decoder(any_event())


def _same(a: type[Data], b: type[Data]) -> bool:
    """The same Struct, or a copy of it (the client's copy of a game's module and the game's
    own, both loaded in one process): the same name and the same wire shape. The copy of one
    source has the same annotations, field for field (cheap: a daemon loads a game at each
    start, ``tablectl`` all of them); anything else is judged by its JSON Schema."""
    if a is b:
        return True
    if a.__name__ != b.__name__:
        return False
    return _declared(a) == _declared(b) or msgspec.json.schema(a) == msgspec.json.schema(b)


def _declared(cls: type) -> tuple[Any, ...]:
    """A Struct's fields as its source declares them: names, annotations (text, under
    ``from __future__ import annotations``) and defaults, down its bases."""
    return (
        cls.__struct_fields__,  # type: ignore[attr-defined]
        repr(cls.__struct_defaults__),  # type: ignore[attr-defined]
        [
            (c.__name__, {k: str(v) for k, v in vars(c).get("__annotations__", {}).items()})
            for c in cls.__mro__
        ],
    )


def register(types: Mapping[str, type[Data]]) -> None:
    """Add a game's own event types (its class's ``events``): the daemon does when it loads the
    game (``daemon/games/__init__.py``), this client for every in-repository game, and a
    backend that wants a third party's game typed calls this with the same Structs.

    The shared catalogue's types (the table's and the procedures') are not a game's to
    redefine: naming one with another Struct is refused, and a refusal registers nothing. A
    type only games have may have one Struct per game (``hand.result``).
    """
    add: list[tuple[str, type[Data]]] = []
    for type_, data in types.items():
        if not (isinstance(data, type) and issubclass(data, Data)):
            raise TypeError(f"event type {type_!r}: {data!r} is not a tabled_client.events.Data")
        have = VARIANTS.get(type_, ())
        if any(_same(h, data) for h in have):
            continue
        if type_ in SHARED:
            raise ValueError(
                f"event type {type_!r} is tabled's own ({SHARED[type_].__name__}): "
                "a game cannot redefine it"
            )
        add.append((type_, data))
    if not add:
        return
    for type_, data in add:
        VARIANTS[type_] = (*VARIANTS.get(type_, ()), data)
        DATA.setdefault(type_, data)
        EVENTS[type_] = _event_class(type_, VARIANTS[type_])
    global _decoder
    _decoder = msgspec.json.Decoder(any_event())


class UnknownEventType(ValueError):
    """An event type this client does not know (a newer table): upgrade tabled-client."""


def decode(raw: bytes) -> Event:
    """One event's canonical bytes as its typed Struct (``CardDealt``, ``HandResult``, …)."""
    try:
        ev: Event = _decoder.decode(raw)
    except msgspec.ValidationError as e:
        if "Invalid value" in str(e) and "$.type" in str(e):
            t = msgspec.json.decode(raw).get("type")
            raise UnknownEventType(f"event type {t!r} is not known to this tabled-client") from e
        raise
    if isinstance(ev.data, msgspec.Raw):
        data = pick(ev.type, msgspec.json.decode(ev.data))
        return msgspec.structs.replace(ev, data=data)
    return ev


def pick(type_: str, data: dict[str, Any]) -> Data:
    """A shared type's data as the Struct it is: the first whose fields hold all of it (each
    game's result has fields no other has), else the first that takes it (a newer table's
    extra field, ignored as for any type)."""
    variants = VARIANTS[type_]
    for cls in variants:
        if data.keys() <= set(cls.__struct_fields__):
            try:
                return msgspec.convert(data, cls)
            except msgspec.ValidationError:
                pass
    errors = []
    for cls in variants:
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as e:
            errors.append(f"as {cls.__name__}: {e}")
    raise msgspec.ValidationError(f"{type_}: the data is none of its Structs ({'; '.join(errors)})")


def _register_our_games() -> None:
    """Every in-repository game's own types, so a backend with only this client decodes them."""
    from tabled_client import games

    for module in games.modules():
        register(module.EVENTS)


_register_our_games()
