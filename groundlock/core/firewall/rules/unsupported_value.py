"""Values a sentence states that the evidence it cites does not hold (``001`` P2.2).

Every number with its unit, percentage, range, date, time and identifier of a cited sentence
must occur, as :mod:`groundlock.core.firewall.values` normalises them, in an entry it cites
or in the question. A value found only in an entry the sentence does not cite is
``misattributed_citation``'s; one found only in an instruction injected into the evidence is
``instruction_followed``'s; one found nowhere is this rule's.
"""

from __future__ import annotations

from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.facts import vocabulary
from groundlock.core.firewall.parsed import Sentence
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source, support_view
from groundlock.core.firewall.values import Value, values_in

__all__ = ["UnsupportedValue", "sentence_values"]


def sentence_values(
    sentence: Sentence, ctx: Context
) -> tuple[tuple[Value, Source, str | None], ...]:
    """Each value of a cited sentence with where it was found (computed once a sentence)."""
    key = ("values", sentence.number)
    found = ctx.memo.get(key)
    if found is None:
        view = support_view(sentence, ctx)
        found = ctx.memo[key] = tuple(
            (value, *view.value_source(value))
            for value in values_in(sentence.text, vocabulary(ctx.ruleset))
        )
    return found


class UnsupportedValue(SentenceRule):
    """A number, unit, date, time or identifier no entry of the request holds."""

    name: ClassVar[str] = "unsupported_value"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_VALUE

    def objection(self, sentence: Sentence, ctx: Context) -> str | None:
        """Its first value found nowhere."""
        for value, source, _ in sentence_values(sentence, ctx):
            if source is Source.NOWHERE:
                return f"the {value.kind} {value.surface!r} is in no evidence entry"
        return None
