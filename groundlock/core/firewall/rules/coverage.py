"""Support coverage: the share of a sentence's content words found in what it cites.

A metric on every sentence (``GroundingMetrics.support_coverage``) and, below the policy's
``min_support_coverage``, a finding (``flag`` in the default policy: paraphrase lowers the
share without lowering the support, so this is a signal for review, not a verdict). Words
compare as light stems (``replaced``/``replacement``), values and names as themselves.
"""

from __future__ import annotations

from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.facts import Facts, stems
from groundlock.core.firewall.parsed import Sentence
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.rules.shared_word import stopwords
from groundlock.core.firewall.support import support_view

__all__ = ["SupportCoverage", "coverage"]


def coverage(sentence: Sentence, ctx: Context, against: Facts | None = None) -> float:
    """The share of ``sentence``'s content stems in its cited entries and the question.

    Or in ``against`` alone; 1.0 for a sentence with no content word, 0.0 uncited.
    """
    said = stems(sentence.text, stopwords(ctx.ruleset))
    if not said:
        return 1.0
    if against is not None:
        return len(said & against.words) / len(said)
    if not sentence.cited:
        return 0.0
    key = ("coverage", sentence.number)
    share: float | None = ctx.memo.get(key)
    if share is None:
        view = support_view(sentence, ctx)
        known = set(view.question.words).union(*(f.words for f in view.cited))
        share = ctx.memo[key] = len(said & known) / len(said)
    return share


class SupportCoverage(SentenceRule):
    """A cited sentence few of whose content words its cited entries contain."""

    name: ClassVar[str] = "support_coverage"
    reason: ClassVar[ReasonCode] = ReasonCode.LOW_SUPPORT_COVERAGE

    def judges(self, sentence: Sentence) -> bool:
        """Cited statements only."""
        return bool(sentence.cited)

    def objection(self, sentence: Sentence, ctx: Context) -> str | None:
        """The share, when it is below the policy's threshold."""
        floor = ctx.policy.min_support_coverage
        share = coverage(sentence, ctx)
        if share >= floor:
            return None
        return f"{share:.0%} of its content words are in what it cites (policy minimum {floor:.0%})"
