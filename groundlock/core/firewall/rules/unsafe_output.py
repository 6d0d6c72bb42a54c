"""Output a client could render into an action: links, images, markup, script, hidden text.

The checks themselves are :func:`groundlock.text.unsafe.unsafe_output` (``firewall_v1``)
and, from ``firewall_v2``, :func:`unsafe_in`, which also asks a Markdown linkifier what it
would turn into a link. From ``source_page_v2`` (``cited_file_names``) the name of an
admitted file is no link: ``[Source: crane-slew-bearing.md, p.1]`` names the evidence, though
``.md`` is a top-level domain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from linkify_it import LinkifyIt

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.rule import Context, Finding
from groundlock.policies.ruleset import Ruleset
from groundlock.text.unsafe import unsafe_output

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import Reading

__all__ = ["UnsafeOutput", "unsafe_in"]


def unsafe_in(
    text: str, ruleset: Ruleset, quoted: Iterable[str] = (), file_names: Iterable[str] = ()
) -> str | None:
    """What makes ``text`` unsafe to render under ``ruleset``, or None if it is plain text.

    From ``firewall_v2`` (``linkify`` in its parameters) a link is also whatever a Markdown
    renderer with linkify would turn into one (``evil.com?d=...``, ``evil.com#x``,
    ``data.evil.com``, ``site.in``): linkify-it-py, the library markdown-it-py links with,
    is the oracle, rather than a grown regular expression. And Markdown strikethrough is
    unsafe: a reader sees ``must ~~not~~ exceed`` as "must exceed", the firewall would
    read the "not".

    A bare name the linkifier takes for a host (``settings.py``, ``Amazon.com``,
    ``ASP.NET``) is no link where the evidence writes it too (``quoted``): the answer names
    what its sources name, and a bare host carries no data out (a path, a query, a
    fragment or a scheme still make it a link, quoted or not).

    With ``cited_file_names`` the admitted rows' file names (``file_names``) are the
    evidence's own names too: a bare host the linkifier finds in one of them, whole
    (``crane-slew-bearing.md``, ``v2.md`` of ``pump manual v2.md``), is no link. Whole, not
    a part of one: ``evil.md`` is still a link beside an admitted ``devil.md``.
    """
    if ruleset.has("end_tokens") and "<" in text:
        text = _END_TOKEN_RE.sub(" ", text)
    if ruleset.has("quoted_addresses") and "@" in text:
        written = [t.lower() for t in quoted]
        text = _EMAIL_RE.sub(lambda m: _quoted(m, written), text)
    found = unsafe_output(text)
    if found is not None or not ruleset.params.get("linkify"):
        return found
    if _STRIKETHROUGH_RE.search(text):
        return "Markdown strikethrough"
    linkify = ruleset.compiled("unsafe.linkify", _linkify)
    if _may_link(text, ruleset) and linkify.test(text):
        written = [t.lower() for t in quoted]
        named = _hosts_named(linkify, file_names) if ruleset.has("cited_file_names") else set()
        for link in linkify.match(text) or ():
            raw = link.raw.lower()
            bare = not link.schema and not _BEYOND_HOST_RE.search(raw)
            if not (bare and (raw in named or any(raw in t for t in written))):
                return "a link"
    return None


def _hosts_named(linkify: LinkifyIt, file_names: Iterable[str]) -> set[str]:
    """What the linkifier reads as a link inside each file name, lower-cased."""
    return {link.raw.lower() for name in file_names for link in linkify.match(name) or ()}


_BEYOND_HOST_RE = re.compile(r"[/?#:@]")
_EMAIL_RE = re.compile(r"(?<![^\s(<\[])[\w.+-]+@[^\W_][\w-]*(?:\.[\w-]+)+")


def _quoted(found: re.Match[str], written: list[str]) -> str:
    """``quoted_addresses``: an e-mail address the evidence writes is blanked, others stay.

    The evidence's own contact is what it says, not a link out of the answer.
    """
    address = found.group().rstrip(".").lower()
    if any(address in text for text in written):
        return " " * len(found.group())
    return found.group()


_END_TOKEN_RE = re.compile(
    r"(?:</s>|<\|endoftext\|>|<\|im_end\|>|<\|eot_id\|>|<\|end\|>|<eos>|<end_of_turn>)"
    r"(?=(?:\s*\[[^\[\]\n]{1,80}\])*[ \t]*(?:\n|$))"
)
"""A model's end-of-sequence token where it stopped, at the end of a line (markers may
follow): ``... nearby surface.</s> [C0]``. ``firewall_v3``'s ``end_tokens``: a stray closing
``</s>`` with nothing after it renders as nothing and carries nothing out; the same token
inside a line, or an opening ``<s>``, is still markup."""


def _linkify(ruleset: Ruleset) -> LinkifyIt:
    """linkify-it-py as markdown-it-py's ``linkify`` option uses it, and more domains.

    The ruleset's further top-level domains (``link_tlds.words``) are added to its own.
    """
    return LinkifyIt().tlds(list(ruleset.entries("link_tlds")), keep_old=True)


def _host_test(ruleset: Ruleset) -> re.Pattern[str]:
    linkify = ruleset.compiled("unsafe.linkify", _linkify)
    # Every scheme it knows is written with ':' or '//' (http:, https:, ftp:, //, mailto:).
    if not all(":" in scheme or "//" in scheme for scheme in linkify.default_schemas):
        raise ValueError("a linkify scheme without ':' or '//'")  # pragma: no cover
    return re.compile(linkify.re["host_fuzzy_test"], re.IGNORECASE)


def _may_link(text: str, ruleset: Ruleset) -> bool:
    """What ``LinkifyIt.test`` needs before it can find a link (it finds one only then).

    A scheme (each holds ':' or '//'), an '@' for an address, or what its own first test of
    a bare host matches (``host_fuzzy_test``). Its scheme test runs a look-behind class of
    every Unicode punctuation mark at each position of the answer, and was an eighth of R5
    (issue 29); this asks the same question of nearly every answer ten times faster.
    """
    if ":" in text or "//" in text or "@" in text:
        return True
    return ruleset.compiled("unsafe.host_test", _host_test).search(text) is not None


_STRIKETHROUGH_RE = re.compile(r"~~(?=\S)[^\n]*?\S~~|<\s*/?\s*(?:del|s|strike)\s*>", re.IGNORECASE)


class UnsafeOutput:
    """Links, images, markup, script URLs, entities, hidden characters.

    Before the citation checks, so that the audit row names an exfiltration attempt as such
    even when it is also uncited; it judges an exact refusal too.
    """

    name: ClassVar[str] = "unsafe_output"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSAFE_OUTPUT
    judges_exact_refusal: ClassVar[bool] = True

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding naming the first kind of unsafe output found."""
        quoted = [entry.sanitized_text for entry in ctx.entries.values()]
        files = {entry.source_file for entry in ctx.entries.values() if entry.source_file}
        unsafe = unsafe_in(reading.text, ctx.ruleset, quoted, files)
        if unsafe is not None:
            yield Finding(self.name, self.reason, f"answer: contains {unsafe}")
