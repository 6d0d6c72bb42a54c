"""Names a sentence introduces that its cited entries and the question do not contain.

Proper names, acronyms and acronym expansions (``001`` P2.2: no new entities, no acronym
expansions absent from the evidence).

An acronym is supported where the evidence writes it or spells out its initials
(``Money Laundering Reporting Officer`` supports ``MLRO``); an expansion written beside its
acronym must itself occur in the evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["UnsupportedEntity"]


class UnsupportedEntity(SentenceRule):
    """A proper name, acronym or expansion that no entry of the request holds."""

    name: ClassVar[str] = "unsupported_entity"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_ENTITY

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its first name found nowhere."""
        for name, source, _ in sentence.names:
            if source is Source.NOWHERE:
                return f"the {name.kind} {name.written!r} is in no evidence entry"
        return None
