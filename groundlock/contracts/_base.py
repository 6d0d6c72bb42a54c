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

from pydantic import BaseModel, ConfigDict
from typing_extensions import Unpack, override

from groundlock._frozen import FROZEN_CONFIG, FrozenModel

__all__ = ["CONTRACT_CONFIG", "Contract"]

CONTRACT_CONFIG = ConfigDict(**FROZEN_CONFIG, validate_default=True)
"""Every stage boundary is immutable and closed to unknown fields."""


class Contract(FrozenModel):
    """Frozen, ``extra="forbid"`` model whose invariants are checked once, at build time."""

    model_config = CONTRACT_CONFIG

    @override
    def model_post_init(self, context: Any, /) -> None:
        self._check()

    def __init_subclass__(cls, **kwargs: Unpack[ConfigDict]) -> None:
        super().__init_subclass__(**kwargs)
        if "model_post_init" in cls.__dict__:
            return  # a subclass's own hook is its business (it should call _check itself)
        # A contract with no invariants of its own needs no post-init call at all (R2
        # builds about twenty a request): pydantic skips model_post_init when it is
        # BaseModel's own, and this runs before pydantic looks.
        cls.model_post_init = (  # type: ignore[method-assign]
            Contract.model_post_init
            if cls._check is not Contract._check
            else BaseModel.model_post_init
        )

    def _check(self) -> None:
        """Raise ``ValueError`` (or ``PydanticCustomError``) if an invariant does not hold."""
