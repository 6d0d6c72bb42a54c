"""Output a client could render into an action: links, images, markup, script, hidden text.

The checks themselves are :func:`groundlock.text.unsafe.unsafe_output` (``firewall_v1``)
and, from ``firewall_v2``, :func:`groundlock.core.firewall.links.unsafe_output_v2`, which also
asks a Markdown linkifier what it would turn into a link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from linkify_it import LinkifyIt

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.answer import ParsedAnswer
from groundlock.core.firewall.rule import Context, Finding
from groundlock.core.firewall.ruleset import Ruleset
from groundlock.text.unsafe import unsafe_output

__all__ = ["UnsafeOutput", "unsafe_in"]


def unsafe_in(text: str, ruleset: Ruleset) -> str | None:
    """What makes ``text`` unsafe to render under ``ruleset``, or None if it is plain text.

    From ``firewall_v2`` (``linkify`` in its parameters) a link is also whatever a Markdown
    renderer with linkify would turn into one (``evil.com?d=...``, ``evil.com#x``,
    ``data.evil.com``, ``site.in``): linkify-it-py, the library markdown-it-py links with,
    is the oracle, rather than a grown regular expression. And Markdown strikethrough is
    unsafe: a reader sees ``must ~~not~~ exceed`` as "must exceed", the firewall would
    read the "not".
    """
    found = unsafe_output(text)
    if found is not None or not ruleset.params.get("linkify"):
        return found
    if _STRIKETHROUGH_RE.search(text):
        return "Markdown strikethrough"
    if _LINKIFY.test(text):
        return "a link"
    return None


_LINKIFY = LinkifyIt()
"""linkify-it-py with its defaults, as markdown-it-py's ``linkify`` option uses it."""
_STRIKETHROUGH_RE = re.compile(r"~~(?=\S)[^\n]*?\S~~|<\s*/?\s*(?:del|s|strike)\s*>", re.IGNORECASE)


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
