"""A requirement let off, or a prohibition lifted, in other words (``firewall_v3``).

``A face shield isn't really necessary when adding water [C1]`` where C1 says ``wear a face
shield ... when watering``; ``Reusing the old seal is fine [C0]`` where C0 says ``seals must
not be reused``. See :mod:`~groundlock.core.firewall.waivers` for the forms read. The
sentence's clause and the evidence clause must be about the same thing (two content words
in common, one for a clause of two), and no clause of the cited evidence may waive or permit
it the sentence's way (evidence that says ``the apron is optional`` supports saying so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.facts import facts
from groundlock.core.firewall.polarity import evidence_clauses, lexicon
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.waivers import forbids, requires, waivers

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["WaivedRequirement"]


class WaivedRequirement(SentenceRule):
    """A clause that waives what its evidence requires, or permits what it forbids."""

    name: ClassVar[str] = "waived_requirement"
    reason: ClassVar[ReasonCode] = ReasonCode.CONTRADICTS_EVIDENCE

    def judges(self, sentence: SentenceReading) -> bool:
        """Cited statements only."""
        return bool(sentence.cited)

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """What it lets off and how its evidence says otherwise.

        A sentence of the evidence that lets off the same thing itself supports it (``the
        apron is optional``; ``affected pumps may remain in use; they do not need to be
        returned``).
        """
        lex = lexicon(ctx.ruleset)
        said = waivers(sentence.text, lex, ctx.ruleset)
        if not said:
            return None
        texts = [
            text for e in sentence.cited for text in facts(e.sanitized_text, ctx.ruleset).sentences
        ]
        evidence = [c for text in texts for c in evidence_clauses(text, lex)]
        # Sentences of the evidence that waive or permit something themselves, with all the
        # words they say it of ("affected pumps ...; they do not need to be returned").
        granted = [
            (w.kind, frozenset().union(*(c.stems for c in evidence_clauses(text, lex))))
            for text in texts
            for w in waivers(text, lex, ctx.ruleset)
        ]
        for waiver in said:
            floor = 1 if len(waiver.stems) <= 2 else 2
            check = requires if waiver.kind == "waiver" else forbids
            against = [c for c in evidence if len(c.stems & waiver.stems) >= floor and check(c)]
            if not against:
                continue
            if any(
                kind == waiver.kind and len(said & waiver.stems) >= floor for kind, said in granted
            ):
                continue  # the evidence itself lets it off ("the apron is optional")
            shared = sorted(
                max(against, key=lambda c: len(c.stems & waiver.stems)).stems & waiver.stems
            )
            what = "requires" if waiver.kind == "waiver" else "forbids"
            return f"lets off {', '.join(shared)!r}, which its evidence {what}"
        return None
