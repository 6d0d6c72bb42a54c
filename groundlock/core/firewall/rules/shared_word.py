"""Whether a cited sentence has anything in common with what it cites.

``firewall_v1``'s support check: one shared content word is enough.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.facts import stopwords
from groundlock.core.firewall.lexicon import entry_content_words
from groundlock.core.firewall.parsed import LineKind
from groundlock.core.firewall.rule import Context, Finding

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import Reading

__all__ = ["NoSharedWord"]

_STATE_NOTHING = frozenset({LineKind.HEADING, LineKind.LABEL, LineKind.TABLE_HEADER})
"""Under ``labels_state_nothing``: lines that name or introduce, and state nothing (a bare
``Yes. [C0]`` still answers, and must share a word with what it cites)."""


class NoSharedWord:
    """A cited sentence that shares no content word with the entries it cites."""

    name: ClassVar[str] = "no_shared_word"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_STATEMENT
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding per such sentence."""
        stop = stopwords(ctx.ruleset)
        labels_apart = ctx.ruleset.has("labels_state_nothing")
        for sentence in reading.sentences:
            if not sentence.cited:
                continue
            if labels_apart and sentence.kind in _STATE_NOTHING:
                continue  # "The main steps are [C0]:" introduces what its items state
            supported = set().union(
                *(entry_content_words(e.sanitized_text, stop) for e in sentence.cited)
            )
            if not sentence.content_words & supported:
                message = f"answer: sentence {sentence.number} shares no word with what it cites"
                yield Finding(self.name, self.reason, message, sentence.number)
