"""A cited sentence most of whose content its cited entries do not hold (``firewall_v3``).

``no_shared_word`` rejects a sentence that shares no word with what it cites; real models
more often write a sentence that shares a few (the question's words, a name) and adds a
claim the entries do not make. Content words are compared loosely (a word, its light stem,
or the first five letters of a word of six or more), so that a paraphrase keeps its support,
and the question's words count as held. The sentence is rejected when

* less than ``weak_share`` (a fifth) of its content words are held; or
* it names something no entry holds (as ``unsupported_entity`` finds) and less than
  ``weak_named_share`` (a half) of its content words are held; or
* of the content words it adds to the question, at least ``weak_added`` (six) and at least
  ``weak_added_share`` (four in five) are in no entry it cites, and it states no value they
  hold (a value of the entry anchors a paraphrase in other words: ``Your landlord must warn
  you 24 hours ahead of any visit`` for ``may not enter without 24 hours' notice``).

Measured on real model output, labelled by people (``benchmarks/firewall.py``): a sentence
that only glosses a supported claim with a name or a few words (``... in California and
Oregon``) keeps most of its words held and passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.parsed import LineKind
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["WeakSupport"]


class WeakSupport(SentenceRule):
    """A cited statement whose content its cited entries mostly do not hold."""

    name: ClassVar[str] = "weak_support"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_STATEMENT

    def judges(self, sentence: SentenceReading) -> bool:
        """Cited statements only."""
        return bool(sentence.cited) and sentence.kind is LineKind.TEXT

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """How little of it is held, by which test."""
        share, added, missing = sentence.loose_support
        param = ctx.ruleset.param
        if share < param("weak_share"):
            return f"{share:.0%} of its content words are in what it cites"
        if share < param("weak_named_share") and any(
            n.source is Source.NOWHERE for n in sentence.names
        ):
            return (
                f"it names what no entry holds, and {share:.0%} of its words are in what it cites"
            )
        if missing >= param("weak_added") and missing >= param("weak_added_share") * added:
            if any(v.source is Source.CITED for v in sentence.values):
                return None  # a value of what it cites anchors a paraphrase of its words
            return (
                f"{missing} of the {added} words it adds to the question are in no entry it cites"
            )
        return None
