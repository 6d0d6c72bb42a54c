"""The base of every stage contract: frozen, closed, and checked exactly once.

A contract's cross-field invariants live in ``_check``. They run when an instance is built
from input (keyword arguments, a dict, JSON) and not again when that instance is nested in a
later stage's contract: it is frozen, so it cannot have changed. The hook is
``model_post_init``, which pydantic calls only for an instance it has just built; an
``after`` model validator would run again on every nested instance, so every stage would
re-check everything before it and the cost would grow with each stage added to the pipeline.
(A ``wrap`` validator that skips instances gets the same effect, at the price of a Python
call per nested instance: measurably slower on a 20-row bundle.)
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from typing_extensions import override

from groundlock._frozen import FrozenModel

__all__ = ["CONTRACT_CONFIG", "Contract"]

CONTRACT_CONFIG = ConfigDict(frozen=True, extra="forbid", validate_default=True)
"""Every stage boundary is immutable and closed to unknown fields."""


class Contract(FrozenModel):
    """Frozen, ``extra="forbid"`` model whose invariants are checked once, at build time."""

    model_config = CONTRACT_CONFIG

    @override
    def model_post_init(self, context: Any, /) -> None:
        self._check()

    def _check(self) -> None:
        """Raise ``ValueError`` (or ``PydanticCustomError``) if an invariant does not hold."""
