"""The ``[Source: <file>, p.<N>]`` citation grammar of spec ``004``.

A marker names exactly the ``source_file`` and ``page`` of an admitted row:
``[Source: Tug AMM 29-11-00.pdf, p.14]``. Both fields are required. Two admitted chunks of
one page share a marker, which then cites both.

``004`` resolves markers through a cascade (a substring of the file name, the page alone, and
as a last resort the first citation of the answer). That cascade is deliberately not offered:
it turns a wrong marker into a right-looking citation, which is exactly what a firewall must
refuse. A marker that names no admitted file and page is an invalid reference; the shapes
``004``'s parser also accepted (``[report.pdf, p.3]``, ``[Source: report]``,
``[source: report.pdf, p.3]``, ``[Source: report.pdf, page 3]``, a group of several) are
malformed, as is a round or curly bracket around ``Source:`` or an admitted file name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundlock.citations.bracket_c import SQUARE_OPEN
from groundlock.citations.exact import (
    ANY_OPEN,
    ExactMarkers,
    bracket_group_re,
    index_markers,
    squared,
)
from groundlock.citations.grammar import CitableEntry, CitableRow

__all__ = ["SOURCE_PAGE", "SourcePage"]

_MARKER_RE = re.compile(r"\[Source: [^\[\]\n,;]+?, p\.\d+\]")
_SOURCE_WORD = r"(?i:s\s*o\s*u\s*r\s*c\s*e\s*:)"
_PAGE_REF = r"(?i:(?<![^\s,;(\[{])p(?:p|g|age)?\.?\s*\d)"
_ANY_SOURCE_RE = bracket_group_re(_SOURCE_WORD, opening=ANY_OPEN)
_SQUARE_PAGE_RE = bracket_group_re(_PAGE_REF, opening=SQUARE_OPEN)
_ROUND_OR_CURLY_RE = bracket_group_re(r"\S", opening="(\uff08{\uff5b", width=200)
# A file name may not hold what would end its marker or a sentence inside it.
_BAD_FILE_RE = re.compile(r"[\[\],;]|[.?!](?:\s|$)|^\s|\s$")


class SourcePage:
    """The ``[Source: file, p.N]`` grammar as a :class:`~groundlock.citations.CitationGrammar`."""

    name = "source_page"
    shape = "[Source: <file>, p.<N>]"
    segmentation_marker = r"\[Source: [^\[\]\n]{1,300}?\]"
    required_fields: tuple[str, ...] = ("source_file", "page")

    def bound(self, entries: Sequence[CitableEntry]) -> ExactMarkers:
        """Exact file and page; ``Source:``, page references and admitted names are suspects."""
        files = {entry.source_file.casefold() for entry in entries if entry.source_file}

        def names_a_file(group: str) -> bool:
            # ``(Source: ...)``, or an admitted file named with a page (``(manual.pdf, p.3)``);
            # a file name alone in parentheses (``(as the Employee Handbook states)``) is prose.
            folded = group.casefold()
            if re.search(_SOURCE_WORD, group):
                return True
            return bool(re.search(_PAGE_REF, group)) and any(name in folded for name in files)

        return ExactMarkers(
            marker_re=_MARKER_RE,
            keys=index_markers([(self.marker(entry), entry.anchor) for entry in entries]),
            suspect_res=(_ANY_SOURCE_RE, _SQUARE_PAGE_RE, _ROUND_OR_CURLY_RE),
            suspect=lambda group: group[0] in SQUARE_OPEN or names_a_file(group),
        )

    def marker(self, entry: CitableEntry) -> str:
        """``[Source: manual.pdf, p.14]``."""
        return f"[{self.public_anchor(entry)}]"

    def public_anchor(self, entry: CitableEntry) -> str:
        """``Source: manual.pdf, p.14``."""
        return f"Source: {entry.source_file}, p.{entry.page}"

    def header(self, entry: CitableEntry) -> str:
        """The marker itself, as ``004``'s context headers have it."""
        return self.marker(entry)

    def row_problem(self, row: CitableRow) -> str | None:
        """A row without its file or page, or with a file name no marker can hold."""
        if row.source_file is None:
            return "source_file: required (each [Source: file, p.N] marker names it)"
        if row.page is None:
            return "page: required (each [Source: file, p.N] marker names it)"
        if _BAD_FILE_RE.search(row.source_file):
            return (
                "source_file: cannot be written inside a [Source: file, p.N] marker (no "
                "brackets, commas, semicolons or sentence ends)"
            )
        return None

    def unique_key(self, row: CitableRow) -> str | None:
        """None: a page's marker names every admitted chunk of the page."""
        return None

    def neutralize(self, text: str) -> tuple[str, int]:
        """Square brackets around ``Source:`` or a page reference in evidence become round."""
        text, sources = squared(_ANY_SOURCE_RE, text)
        text, pages = squared(_SQUARE_PAGE_RE, text)
        return text, sources + pages

    def __repr__(self) -> str:
        return "SourcePage()"


SOURCE_PAGE = SourcePage()
"""The grammar of ``SOURCE_PAGE_POLICY_V1`` and ``SOURCE_PAGE_POLICY_V2``."""
