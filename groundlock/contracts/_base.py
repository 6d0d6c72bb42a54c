"""The base of every stage contract: frozen, closed, and checked exactly once.

A contract's cross-field invariants live in ``_check``. They run when an instance is built
from input (keyword arguments, a dict, JSON) and not again when that instance is nested in a
later stage's contract: it is frozen, so it cannot have changed. (Pydantic re-runs ``after``
model validators on nested instances, so with plain validators every stage would re-check
everything before it, and the cost would grow with each stage added to the pipeline.)
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, model_validator

__all__ = ["CONTRACT_CONFIG", "Contract"]

CONTRACT_CONFIG = ConfigDict(frozen=True, extra="forbid", validate_default=True)
"""Every stage boundary is immutable and closed to unknown fields."""


class Contract(BaseModel):
    """Frozen, ``extra="forbid"`` model whose invariants are checked once, at build time."""

    model_config = CONTRACT_CONFIG

    @model_validator(mode="wrap")
    @classmethod
    def _check_once(cls, value: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:  # noqa: ANN401
        if type(value) is cls:
            return value
        built = handler(value)
        built._check()
        return built

    def _check(self) -> None:
        """Raise ``ValueError`` (or ``PydanticCustomError``) if an invariant does not hold."""
