"""A value its cited entry marks as replaced, cancelled or wrong (``firewall_v3``).

``Torque the bowl to 45 Nm [C2]`` where C2 says ``this bulletin supersedes the 45 Nm
torque; torque to 38 Nm``: the value is in the entry, so ``unsupported_value`` passes it,
but the entry says it no longer holds. A sentence that reports the change itself (``the
interval was reduced from 600 to 400 hours``, ``38 Nm, not the superseded 45 Nm``) states
the old value as history and passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.rule import Context, SentenceRule

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["SupersededValue"]


class SupersededValue(SentenceRule):
    """A value stated as current that the entry it cites marks as no longer valid."""

    name: ClassVar[str] = "superseded_value"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_VALUE

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its first such value, and the entry that replaces it."""
        for value, anchor in sentence.superseded:
            return f"the {value.kind} {value.surface!r} is one {anchor} marks as replaced"
        return None
