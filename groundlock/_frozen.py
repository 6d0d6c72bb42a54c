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

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from typing_extensions import override

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """Immutable and closed to unknown fields; ``model_copy(update=...)`` re-validates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @override
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        if not update:
            return super().model_copy(deep=deep)
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return self.model_validate({**fields, **update})
