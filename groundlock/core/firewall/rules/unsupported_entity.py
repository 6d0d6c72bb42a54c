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

__all__ = ["UnsupportedAcronym", "UnsupportedEntity", "UnsupportedSubject"]


class UnsupportedEntity(SentenceRule):
    """A proper name, acronym or expansion that no entry of the request holds.

    Under ``acronyms_apart`` (``firewall_v3``) it judges names only; acronyms and
    expansions are :class:`UnsupportedAcronym`'s. On real model output the two differ in
    precision: a name a model adds from what it knows (``... in California and Oregon``) is
    often judged supported by people, an acronym or an expansion no entry gives rarely.
    """

    name: ClassVar[str] = "unsupported_entity"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_ENTITY
    kinds: ClassVar[frozenset[str]] = frozenset({"name", "acronym", "expansion"})

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its first name found nowhere."""
        kinds = self.kinds
        if self.name == "unsupported_entity" and ctx.ruleset.has("acronyms_apart"):
            kinds = frozenset({"name"})
        for name, source, _ in sentence.names:
            if source is Source.NOWHERE and name.kind in kinds:
                return f"the {name.kind} {name.written!r} is in no evidence entry"
        return None


class UnsupportedAcronym(UnsupportedEntity):
    """An acronym, or an acronym's expansion, that no entry of the request holds.

    ``001`` P2.2: no acronym expansions absent from the evidence.
    """

    name: ClassVar[str] = "unsupported_acronym"
    kinds: ClassVar[frozenset[str]] = frozenset({"acronym", "expansion"})


class UnsupportedSubject(SentenceRule):
    """The name a sentence opens with, as its subject, that no entry holds (``firewall_v3``).

    ``Siemens recommends ...``, ``Drake sings ...``: a sentence's first word is capitalised
    by grammar, so ``firewall_v2`` never read it as a name. ``name_variants`` reads it as one
    where nothing else would be (an acronym, a possessive, a verb a named actor does, another
    capitalised word after it); a sentence about someone or something the evidence never
    names is about something else than its evidence.
    """

    name: ClassVar[str] = "unsupported_subject"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_ENTITY

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its opening name, when no entry holds it."""
        for name, source, _ in sentence.names:
            if source is Source.NOWHERE and name.opening:
                return f"it opens with the name {name.written!r}, which no evidence entry holds"
        return None
