"""Values a sentence states that the evidence it cites does not hold (``001`` P2.2).

Every number with its unit, percentage, range, date, time and identifier of a cited sentence
must occur, as :mod:`groundlock.core.firewall.values` normalises them, in an entry it cites
or in the question. A value found only in an entry the sentence does not cite is
``misattributed_citation``'s; one found only in an instruction injected into the evidence is
``instruction_followed``'s; one found nowhere is this rule's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["UnsupportedValue"]


class UnsupportedValue(SentenceRule):
    """A number, unit, date, time or identifier no entry of the request holds."""

    name: ClassVar[str] = "unsupported_value"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_VALUE

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its first value found nowhere."""
        for value, source, _ in sentence.values:
            if source is Source.NOWHERE:
                return f"the {value.kind} {value.surface!r} is in no evidence entry"
        return None
