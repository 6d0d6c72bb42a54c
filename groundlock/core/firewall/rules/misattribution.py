"""A true fact cited to the wrong entry: "cited the wrong entry", not "invented".

A value or a name a sentence states that occurs in another entry of the request but in
none it cites, or a statement most of whose words come from another entry while the cited
entries cover few of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.parsed import LineKind
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["MisattributedCitation"]


class MisattributedCitation(SentenceRule):
    """Values, names or a whole statement found only in entries the sentence does not cite."""

    name: ClassVar[str] = "misattributed_citation"
    reason: ClassVar[ReasonCode] = ReasonCode.MISATTRIBUTED_CITATION

    def judges(self, sentence: SentenceReading) -> bool:
        """Cited statements only.

        A heading or a label names its subject, whichever entry has it.
        """
        return sentence.kind is LineKind.TEXT and bool(sentence.cited)

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """What belongs to another entry, and which."""
        for value, source, anchor in sentence.values:
            if source is Source.OTHER_ENTRY:
                return f"the {value.kind} {value.surface!r} is in {anchor}, which it does not cite"
        for name, source, anchor in sentence.names:
            if source is Source.OTHER_ENTRY:
                return f"the {name.kind} {name.written!r} is in {anchor}, which it does not cite"
        best, anchor = 0.0, None
        low = ctx.ruleset.param("misattribution_cited_below")
        if sentence.coverage >= low:
            return None
        for other_anchor, other in sentence.view.others:
            share = sentence.coverage_in(other)
            if share > best:
                best, anchor = share, other_anchor
        if best >= ctx.ruleset.param("misattribution_other_at_least"):
            return f"it states what {anchor} says ({best:.0%} of its words), not what it cites"
        return None
