"""Typed records for the session's facts: stdlib dataclasses that check their fields.

A record is built from keywords (`Fact(name=..., file=..., line=3)`) or from JSON-shaped data
(`Fact.model_validate(d)`), and either way each field is checked against its annotation: nested records,
lists and dicts of them, `Literal`s, enums, and `Annotated` steps (`Before`, `After`, `Dump`) such as the
gate every text from the repo passes (`visible.RepoText`). Unknown keys are ignored, so a session saved
by another version still loads. `model_construct` skips the checks, for the reader's hot path.

The method names are pydantic's, which these records replaced: importing pydantic and building its
schemas took most of the app's start (see `benchmarks/tui_perf.py`).
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:
    from typing_extensions import dataclass_transform

R = TypeVar("R", bound="Record")
Loc = tuple[object, ...]
Check = Callable[[object, Loc], object]


class Invalid(ValueError):
    """Data that does not fit a record; `loc` is the path to the first field that does not fit."""

    def __init__(self, loc: Loc, why: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc)) or 'value'}: {why}")
        self.loc = loc


@dataclasses.dataclass(frozen=True)
class Before:
    """A step run on the raw value before its type is checked (an old label read as its new one)."""

    fn: Callable[[Any], object]


@dataclasses.dataclass(frozen=True)
class After:
    """A step run on the value once its type is checked (the gate for repo text)."""

    fn: Callable[[Any], object]


@dataclasses.dataclass(frozen=True)
class Dump:
    """How the value is written to JSON, when not as itself (a path that is not UTF-8)."""

    fn: Callable[[Any], object]


def _plain(tp: type) -> Check:
    def check(v: object, loc: Loc) -> object:
        if tp is float and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        if tp is int and isinstance(v, float) and v.is_integer():
            return int(v)
        if not isinstance(v, tp) or (tp in (int, float) and isinstance(v, bool)):
            raise Invalid(loc, f"expected {tp.__name__}, got {type(v).__name__}")
        return v

    return check


def _checker(tp: Any) -> Check:  # noqa: C901 (one branch per kind of annotation)
    """The check of one annotation, compiled once per class."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        inner = _checker(args[0])
        before = [m.fn for m in tp.__metadata__ if isinstance(m, Before)]
        after = [m.fn for m in tp.__metadata__ if isinstance(m, After)]

        def annotated(v: object, loc: Loc) -> object:
            for fn in before:
                v = fn(v)
            v = inner(v, loc)
            for fn in after:
                v = fn(v)
            return v

        return annotated
    if origin in (Union, types.UnionType):
        nullable = type(None) in args
        options = [_checker(a) for a in args if a is not type(None)]

        def union(v: object, loc: Loc) -> object:
            if v is None and nullable:
                return None
            for option in options:
                try:
                    return option(v, loc)
                except Invalid:
                    pass
            raise Invalid(loc, f"{type(v).__name__} fits none of {tp}")

        return union
    if origin is Literal:
        allowed = set(args)

        def literal(v: object, loc: Loc) -> object:
            if isinstance(v, bool) or not isinstance(v, str | int | float) or v not in allowed:
                raise Invalid(loc, f"{v!r} is not one of {sorted(map(str, allowed))}")
            return v

        return literal
    if origin is list:
        item = _checker(args[0])

        def items(v: object, loc: Loc) -> object:
            if not isinstance(v, (list, tuple)):
                raise Invalid(loc, f"expected a list, got {type(v).__name__}")
            return [item(x, (*loc, i)) for i, x in enumerate(v)]

        return items
    if origin is dict:
        key, value = _checker(args[0]), _checker(args[1])

        def mapping(v: object, loc: Loc) -> object:
            if not isinstance(v, dict):
                raise Invalid(loc, f"expected a mapping, got {type(v).__name__}")
            return {key(k, (*loc, k)): value(x, (*loc, k)) for k, x in v.items()}

        return mapping
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp._check
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        def member(v: object, loc: Loc) -> object:
            try:
                return tp(v)
            except ValueError:
                raise Invalid(loc, f"{v!r} is not a {tp.__name__}") from None

        return member
    if tp is type(None):
        return _plain(type(None))
    if tp in (str, int, float, bool):
        return _plain(tp)
    return lambda v, loc: v  # `object`: anything


def _dumper(tp: Any) -> Callable[[object], object] | None:
    """The `Dump` step of an annotation (looked for through `X | None`), if it has one."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        found = [d for a in typing.get_args(tp) if (d := _dumper(a))]
        return found[0] if found else None
    if typing.get_origin(tp) is Annotated:
        return next((m.fn for m in tp.__metadata__ if isinstance(m, Dump)), None)
    return None


def _json(v: object, mode: str) -> object:
    if isinstance(v, Record):
        return v.model_dump(mode=mode)
    if isinstance(v, list):
        return [_json(x, mode) for x in v]
    if isinstance(v, dict):
        return {k: _json(x, mode) for k, x in v.items()}
    if mode == "json" and isinstance(v, enum.Enum):
        return v.value
    return v


def _fresh(default: object) -> Callable[[], object]:
    return lambda: copy.copy(default)


def _frozen(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


@dataclass_transform(kw_only_default=True, field_specifiers=(dataclasses.field,))
class Record:
    """Base of a record: subclass it and annotate the fields; `frozen=True` as a class keyword makes it
    immutable. A `[]` or `{}` default is a fresh one for each record. One `__init__` serves every
    record (a dataclass would generate code for each class: a tenth of the app's start)."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _known: ClassVar[frozenset[str]] = frozenset()
    _defaults: ClassVar[dict[str, object]] = {}
    _factories: ClassVar[dict[str, Callable[[], object]]] = {}
    _checks: ClassVar[dict[str, Check]]
    _dumps: ClassVar[dict[str, Callable[[object], object]]]

    def __init_subclass__(cls, frozen: bool = False, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        fields, defaults, factories = list(cls._fields), dict(cls._defaults), dict(cls._factories)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if "ClassVar" in str(annotation):
                continue
            fields.append(name)
            default = cls.__dict__.get(name, dataclasses.MISSING)
            if isinstance(default, dataclasses.Field):
                factories[name] = default.default_factory  # type: ignore[assignment]
                delattr(cls, name)
            elif isinstance(default, (list, dict)):
                factories[name] = _fresh(default)
            elif default is not dataclasses.MISSING:
                defaults[name] = default
        cls._fields, cls._defaults, cls._factories = tuple(fields), defaults, factories
        cls._known = frozenset(fields)
        if frozen:
            cls.__setattr__ = _frozen  # type: ignore[method-assign, assignment]

    @classmethod
    def _compiled(cls) -> dict[str, Check]:
        """Each field's check, compiled on first use: the annotations name classes defined later."""
        if "_checks" not in cls.__dict__:
            hints = typing.get_type_hints(cls, include_extras=True)
            cls._dumps = {n: d for n in cls._fields if (d := _dumper(hints[n]))}
            cls._checks = {n: _checker(hints[n]) for n in cls._fields}
        return cls._checks

    def _fill(self, values: dict[str, object], checks: dict[str, Check] | None, loc: Loc) -> None:
        d = self.__dict__
        for name in self._fields:
            if name in values:
                d[name] = checks[name](values[name], (*loc, name)) if checks else values[name]
            elif name in self._defaults:
                d[name] = self._defaults[name]
            elif name in self._factories:
                d[name] = self._factories[name]()
            elif checks is not None:
                raise Invalid((*loc, name), "missing")

    def __init__(self, **values: object) -> None:
        if not values.keys() <= self._known:
            unknown = ", ".join(sorted(values.keys() - self._known))
            raise TypeError(f"{type(self).__name__} has no field {unknown}")
        self._fill(values, self._compiled(), ())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return type(other) is type(self) and other.__dict__ == self.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    @classmethod
    def _check(cls, v: object, loc: Loc) -> object:
        if isinstance(v, cls):
            return v
        if not isinstance(v, dict):
            raise Invalid(loc, f"expected a {cls.__name__}, got {type(v).__name__}")
        record = object.__new__(cls)
        record._fill(v, cls._compiled(), loc)
        return record

    @classmethod
    def model_validate(cls: type[R], data: object) -> R:
        """A record from JSON-shaped data, every field checked; `Invalid` names the first that does not fit."""
        return cls._check(data, ())  # type: ignore[return-value]

    @classmethod
    def model_validate_json(cls: type[R], text: str | bytes) -> R:
        return cls.model_validate(json.loads(text))

    @classmethod
    def model_construct(cls: type[R], **values: object) -> R:
        """A record from values already right, not checked: the reader makes thousands of facts."""
        record = object.__new__(cls)
        record._fill(values, None, ())
        return record

    def model_copy(self: R, update: dict[str, object] | None = None, deep: bool = False) -> R:
        """A copy with `update`'s fields replaced, not checked (they come from the app's own code)."""
        new = copy.deepcopy(self) if deep else copy.copy(self)
        new.__dict__.update(update or {})
        return new

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        """The fields as plain data; `mode="json"` also as JSON writes them (enums as values, `Dump` steps)."""
        self._compiled()
        dumps = self._dumps if mode == "json" else {}
        return {name: dumps[name](v) if name in dumps and v is not None else _json(v, mode)
                for name, v in self.__dict__.items()}

    def model_dump_json(self, indent: int | None = None) -> str:
        """JSON text, UTF-8 as it reads; a lone surrogate (a path's byte from another encoding, held by a
        field that is not `PathText`) is written escaped, as the text could not be encoded otherwise."""
        data, separators = self.model_dump(mode="json"), None if indent is not None else (",", ":")
        text = json.dumps(data, indent=indent, ensure_ascii=False, separators=separators)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(data, indent=indent, separators=separators)
        return text
