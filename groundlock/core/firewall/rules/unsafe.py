"""Output a client could render into an action: links, images, markup, script, hidden text.

The checks themselves are :func:`groundlock.text.unsafe.unsafe_output` (``firewall_v1``)
and, from ``firewall_v2``, :func:`groundlock.core.firewall.links.unsafe_output_v2`, which also
asks a Markdown linkifier what it would turn into a link.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.answer import ParsedAnswer
from groundlock.core.firewall.rule import Context, Finding
from groundlock.core.firewall.ruleset import Ruleset
from groundlock.text.unsafe import unsafe_output

__all__ = ["UnsafeOutput", "unsafe_in"]


def unsafe_in(text: str, ruleset: Ruleset) -> str | None:
    """What makes ``text`` unsafe to render under ``ruleset``, or None if it is plain text."""
    return unsafe_output(text)


class UnsafeOutput:
    """Links, images, markup, script URLs, entities, hidden characters.

    Before the citation checks, so that the audit row names an exfiltration attempt as such
    even when it is also uncited; it judges an exact refusal too.
    """

    name: ClassVar[str] = "unsafe_output"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSAFE_OUTPUT
    judges_exact_refusal: ClassVar[bool] = True

    def check(self, answer: ParsedAnswer, ctx: Context) -> Iterator[Finding]:
        """One finding naming the first kind of unsafe output found."""
        unsafe = unsafe_in(answer.text, ctx.ruleset)
        if unsafe is not None:
            yield Finding(self.name, self.reason, f"answer: contains {unsafe}")
