"""Whether a cited sentence has anything in common with what it cites.

``firewall_v1``'s support check: one shared content word is enough.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.lexicon import content_words, entry_content_words
from groundlock.core.firewall.parsed import ParsedAnswer
from groundlock.core.firewall.rule import Context, Finding
from groundlock.policies.ruleset import Ruleset

__all__ = ["NoSharedWord", "stopwords"]


def _stopwords(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("stopwords"))


def stopwords(ruleset: Ruleset) -> frozenset[str]:
    """The ruleset's stop words (``stopwords.words``), as a set built once."""
    return ruleset.compiled("stopwords", _stopwords)


class NoSharedWord:
    """A cited sentence that shares no content word with the entries it cites."""

    name: ClassVar[str] = "no_shared_word"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_STATEMENT
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, answer: ParsedAnswer, ctx: Context) -> Iterator[Finding]:
        """One finding per such sentence."""
        stop = stopwords(ctx.ruleset)
        for sentence in answer.sentences:
            if not sentence.cited:
                continue
            supported = set().union(
                *(entry_content_words(e.sanitized_text, stop) for e in sentence.cited)
            )
            if not content_words(sentence.text, stop) & supported:
                message = f"answer: sentence {sentence.number} shares no word with what it cites"
                yield Finding(self.name, self.reason, message, sentence.number)
