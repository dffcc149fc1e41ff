"""The daemon's check of each event's data against its type's Struct, with its fast path.

:func:`check_data` is called for every event the daemon builds (``daemon/journal/events.py``
``draft``), so it takes one conversion where that is provably the same as the full steps
(``_quick_fields``) and the steps otherwise, which say what is wrong. A type several games
share (``hand.result``) passes when its data is one of its Structs (``registry.VARIANTS``), as
the JSON Schema's ``anyOf`` says.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import msgspec.inspect
from msgspec import UNSET

from tabled_client.base import Data
from tabled_client.registry import VARIANTS, UnknownEventType


def check_data(type_: str, data: dict[str, Any]) -> Data:
    """``data`` as the type's Struct; raises ``TypeError``/``ValidationError`` naming what is wrong.

    Strict: an unknown or missing field, or a value of the wrong type, is an error (the daemon
    calls this for every event it builds, so it can only publish what the schema says).
    """
    variants = VARIANTS.get(type_)
    if variants is None:
        raise UnknownEventType(
            f"event type {type_!r} has no Struct: a game names its own in its class's "
            "``events`` (docs/events.md, Adding an event type)"
        )
    if len(variants) == 1:
        return _check(variants[0], type_, data)
    failed: list[tuple[int, Exception, type[Data]]] = []
    # the Structs that name every field first: the data's own game's, as a rule
    for cls in sorted(variants, key=lambda c: not data.keys() <= _names(c)):
        try:
            return _check(cls, type_, data)
        except (TypeError, ValueError) as e:
            failed.append((len(data.keys() & cls.__struct_fields__), e, cls))
    # the Struct the data is closest to says what is wrong
    _, e, cls = max(failed, key=lambda x: x[0])
    others = ", ".join(c.__name__ for c in variants if c is not cls)
    raise type(e)(f"{e} (as {cls.__name__}; nor is it {others})") from None


_fields: dict[type[Data], frozenset[str]] = {}


def _names(cls: type[Data]) -> frozenset[str]:
    names = _fields.get(cls)
    if names is None:
        names = _fields[cls] = frozenset(cls.__struct_fields__)
    return names


def _check(cls: type[Data], type_: str, data: dict[str, Any]) -> Data:
    quick = _quick.get(cls)
    if quick is None:
        quick = _quick[cls] = _quick_fields(cls)
    fields, guarded = quick
    if fields and data.keys() <= fields and (not guarded or _admits(data, guarded)):
        # The data's builtins (as the steps and the seal's encoder make them) converted
        # strictly into the Struct: for the fields ``_quick_fields`` admits, holding the
        # kinds of value it admits, it passes exactly when the steps below do (at about half
        # their CPU; the daemon pays this per event). ``to_builtins`` first refuses what the
        # seal's encoder refuses (a subclass of int or str, a read-only mapping), which a
        # bare ``convert`` of the data took (round 4's review); a JSON round trip instead
        # would turn a NaN into null. Any failure takes the steps, which say what is wrong.
        try:
            return msgspec.convert(msgspec.to_builtins(data), cls)
        except (TypeError, ValueError, OverflowError):
            pass
    return _in_steps(cls, type_, data)


def _admits(data: dict[str, Any], guarded: tuple[tuple[str, tuple[type, ...]], ...]) -> bool:
    """Each guarded field the data names holds a value of a type its guard admits."""
    for k, ok in guarded:
        if k in data and type(data[k]) not in ok:
            return False
    return True


def _in_steps(cls: type[Data], type_: str, data: dict[str, Any]) -> Data:
    """The Struct built from the data (unknown or missing fields), then its builtins
    converted back (each value's type)."""
    try:
        obj = cls(**data)
    except TypeError as e:
        raise TypeError(f"{type_}: {e}") from None
    try:
        return msgspec.convert(msgspec.to_builtins(obj), cls)
    except msgspec.ValidationError as e:
        raise msgspec.ValidationError(f"{type_}: {e}") from None


#: per Data class: the fields :func:`check_data` may check in one conversion, and those of
#: them taken there only when their value is of one of the given Python types
_quick: dict[type[Data], tuple[frozenset[str], tuple[tuple[str, tuple[type, ...]], ...]]] = {}


def _quick_fields(
    cls: type[Data],
) -> tuple[frozenset[str], tuple[tuple[str, tuple[type, ...]], ...]]:
    """The class's fields one conversion of the data checks as the full steps do, and which
    of them only for some kinds of value; none (the steps run) when a default other than UNSET
    or a ``__post_init__`` makes the Struct more than its data.

    A field whose type takes a Python object that is not what its JSON says is loose: an
    ``Any`` (a value ``to_builtins`` refuses, an object JSON cannot carry), a ``float``
    (``convert`` takes a ``Decimal`` for it, which would be sealed as a string), a nested
    Struct (``convert`` passes an instance of it through without checking its fields). Two
    kinds are kept, for values that are their own JSON form, where both paths convert the
    same value and so agree: a ``float`` (``| None``) holding a ``float``, an ``int`` or
    None; a flat Struct directly in the field (``hand.result``'s ``roads``) holding a plain
    dict. Any other value there takes the steps. Another loose field is left out: data naming
    it takes the steps, and data without it is the same to both paths (its default is
    UNSET); a required one leaves the class none (every event of it takes the steps)."""
    if any(x is not UNSET for x in cls.__struct_defaults__) or hasattr(cls, "__post_init__"):
        return frozenset(), ()
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    plain: list[str] = []
    guarded: list[tuple[str, tuple[type, ...]]] = []
    for f in info.fields:
        if not _loose(f.type):
            plain.append(f.name)
        elif (ok := _guard(f.type)) is not None:
            guarded.append((f.name, ok))
        elif f.required:  # all data names it, so all data takes the steps: no test first
            return frozenset(), ()
    return frozenset((*plain, *(name for name, _ in guarded))), tuple(guarded)


_NUMBER: Final = (float, int, type(None))


def _guard(t: Any) -> tuple[type, ...] | None:
    """The Python types a loose field may hold and still take the one conversion (None: none).

    A float (``| int``, ``| None``): ``float``, ``int``, None, each its own JSON form (not
    ``bool``, a ``Decimal`` or a float's subclass: the steps judge those). A flat Struct (``|
    None``; UNSET is not in the type info), none of whose fields is loose: a plain ``dict``,
    which both paths convert as it is."""
    kinds = msgspec.inspect
    members = t.types if isinstance(t, kinds.UnionType) else (t,)
    if any(isinstance(m, kinds.FloatType) for m in members) and all(
        isinstance(m, kinds.FloatType | kinds.IntType | kinds.NoneType) for m in members
    ):
        return _NUMBER
    structs = [m for m in members if isinstance(m, kinds.StructType)]
    if (
        len(structs) == 1
        and all(isinstance(m, kinds.StructType | kinds.NoneType) for m in members)
        and not any(_loose(f.type) for f in structs[0].fields)
    ):
        return (dict,)
    return None


#: types whose Python values ``convert`` takes beyond what their JSON form would pass
_LOOSE = (msgspec.inspect.AnyType, msgspec.inspect.FloatType, msgspec.inspect.StructType)


def _loose(t: Any) -> bool:
    if isinstance(t, _LOOSE):
        return True
    for name in ("types", "item_types", "item_type", "key_type", "value_type"):
        v = getattr(t, name, None)
        if v is not None and any(_loose(x) for x in (v if isinstance(v, tuple) else (v,))):
            return True
    return False
