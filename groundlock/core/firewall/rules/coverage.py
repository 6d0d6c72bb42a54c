"""Support coverage: the share of a sentence's content words found in what it cites.

A metric on every sentence (``GroundingMetrics.support_coverage``) and, below the policy's
``min_support_coverage``, a finding (``flag`` in the default policy: paraphrase lowers the
share without lowering the support, so this is a signal for review, not a verdict). Words
compare as light stems (``replaced``/``replacement``), values and names as themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.rule import Context, SentenceRule

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["SupportCoverage"]


class SupportCoverage(SentenceRule):
    """A cited sentence few of whose content words its cited entries contain."""

    name: ClassVar[str] = "support_coverage"
    reason: ClassVar[ReasonCode] = ReasonCode.LOW_SUPPORT_COVERAGE

    def judges(self, sentence: SentenceReading) -> bool:
        """Cited statements only."""
        return bool(sentence.cited)

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """The share, when it is below the policy's threshold."""
        floor = ctx.policy.min_support_coverage
        share = sentence.coverage
        if share >= floor:
            return None
        return f"{share:.0%} of its content words are in what it cites (policy minimum {floor:.0%})"
