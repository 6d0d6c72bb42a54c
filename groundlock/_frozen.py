"""The frozen pydantic model every policy and contract is built on.

pydantic's ``model_copy(update=...)`` builds an instance without validating it, and copies
the instance ``__dict__`` — cached properties included. For a frozen, hash-locked record
that is two holes: a copy could break the model's invariants, and it would carry the
original's cached values (a policy copied with a changed threshold kept the original's
``policy_sha256``, so it passed the check that refuses a changed built-in policy). Here a
copy with changes is validated from scratch like any other instance; a plain copy is the
same content, so its cached values stay true.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Generic, Self, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict
from typing_extensions import override

__all__ = ["FrozenModel", "cached_property"]

T = TypeVar("T")
_MISSING: Any = object()


class cached_property(functools.cached_property[T], Generic[T]):  # noqa: N801  (stdlib name)
    """``functools.cached_property`` without its lock (Python 3.11 takes an ``RLock``).

    The lock serialises the first read of *every* instance of a class, and costs a
    microsecond or more each time: R2 reads two cached properties on each of a request's
    entries. On a frozen model the computed value depends only on the instance, so two
    threads racing on a first read compute the same value; the last write wins, harmlessly.
    """

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> T: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> T | Self:
        if instance is None:
            return self
        name = self.attrname
        if name is None:  # used without __set_name__: the stdlib's error
            return super().__get__(instance, owner)
        cache: dict[str, Any] = instance.__dict__
        value: Any = cache.get(name, _MISSING)
        if value is _MISSING:
            func: Callable[[Any], T] = self.func
            value = cache[name] = func(instance)
        return cast("T", value)


FROZEN_CONFIG = ConfigDict(frozen=True, extra="forbid", ignored_types=(cached_property,))
"""Immutable and closed; this module's ``cached_property`` is not a field."""


class FrozenModel(BaseModel):
    """Immutable and closed to unknown fields; ``model_copy(update=...)`` re-validates."""

    model_config = FROZEN_CONFIG

    @override
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        if not update:
            return super().model_copy(deep=deep)
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return self.model_validate({**fields, **update})
