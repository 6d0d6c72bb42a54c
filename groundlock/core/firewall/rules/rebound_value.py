"""A value of the evidence bound to another predicate (``firewall_v3``).

``12 valves failed [C0]`` where C0 says ``12 valves were inspected and 3 failed``; ``a mean
depth of 86 m`` where the table says ``Maximum depth 86 m``, ``Mean depth 19 m``. The value
is in the entry, so ``unsupported_value`` passes it; :mod:`~groundlock.core.firewall.binding`
reads which clause of the entry it belongs to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.binding import bound_clauses, rebound
from groundlock.core.firewall.facts import facts
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["ReboundValue"]


class ReboundValue(SentenceRule):
    """A number, date or time of the cited entry that belongs to another predicate there."""

    name: ClassVar[str] = "rebound_value"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_VALUE

    def judges(self, sentence: SentenceReading) -> bool:
        """Cited statements only."""
        return bool(sentence.cited)

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """Its first rebound value."""
        stated = [
            v.item
            for v in sentence.values
            if v.source is Source.CITED and v.item.kind in ("number", "date", "time")
        ]
        if not stated:
            return None
        question = sentence.view.question
        evidence = tuple(
            clause
            for entry in sentence.cited
            # Its statements one by one, as the segmenter found them.
            for clause in bound_clauses(
                "\n".join(facts(entry.sanitized_text, ctx.ruleset).sentences), ctx.ruleset
            )
        )
        for value in stated:
            if question.values.supports(value):
                continue
            if rebound(sentence.text, value, evidence, ruleset=ctx.ruleset) is not None:
                return f"the {value.kind} {value.surface!r} belongs to another of its statements"
        return None
