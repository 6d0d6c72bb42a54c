"""The ``[CIT-01]`` citation grammar of spec ``003``.

A marker is ``[CIT-`` two digits ``]``: the 1-based position of an entry in the frozen
evidence order (``[CIT-01]`` is the first entry). Each marker maps to the row's
``citation_label`` (required: it is how the reader is told the source), its ``document_id``
and ``page`` where the row has them. ``[CIT-07]`` with six entries, or ``[CIT-00]``, names
nothing and is an invalid reference; ``[CIT-1]``, ``[cit-01]``, ``[CIT 01]``,
``[CIT-01, CIT-02]``, ``(CIT-01)`` or a bare ``CIT-01`` are malformed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundlock.citations.exact import (
    ANY_CLOSE,
    ANY_OPEN,
    ExactMarkers,
    index_markers,
    squared,
)
from groundlock.citations.grammar import CitableEntry, CitableRow

__all__ = ["CIT_LABEL", "CitLabel"]

_MARKER_RE = re.compile(r"\[CIT-\d{2,}\]")
# ``CIT`` in any case or in Cyrillic or fullwidth look-alikes, not inside a word (``explicit 3``),
# then a digit after optional spacing or a sign.
_CIT_LIKE = (
    r"(?<![^\W\d_])"
    "[Cc\u0421\u0441\uff23\uff43][Ii\u0406\u0456\uff29\uff49][Tt\u0422\u0442\uff34\uff54]"
    + r"\s*[-_\u2010\u2011\u2013\u2014:#.]?\s*\d"
)
# A bracket group that is nothing but ``CIT`` markers, however mangled (``(CIT-01)``,
# ``[cit 1]``, ``[CIT-01, CIT-02]``); a group that only mentions a CIT form among other words
# (``(the CIT-8 return)``, ``(op. cit. 12)``) is prose.
_JOIN = r"[,;&\-\u2013\u2014]\s*(?:and\s+|to\s+)?"
_ONLY_CITS = rf"\s*{_CIT_LIKE}\d*\s*(?:{_JOIN}{_CIT_LIKE}\d*\s*){{0,10}}"
_GROUP_RE = re.compile(rf"[{re.escape(ANY_OPEN)}]{_ONLY_CITS}[{re.escape(ANY_CLOSE)}]?")
# A marker that lost its brackets: ``CIT-01`` written as the marker is, two digits after a
# hyphen, or one that kept only its closing bracket; ``CIT-8`` or ``CIT 2023`` is a name.
_STRAY_RE = re.compile(rf"(?<![\w{re.escape(ANY_OPEN)}])CIT-\d{{2}}(?:\b|\])\]?")


def _position(entry: CitableEntry) -> int:
    return int(entry.anchor[1:]) + 1


class CitLabel:
    """The ``[CIT-NN]`` grammar as a :class:`~groundlock.citations.CitationGrammar`."""

    name = "cit_label"
    shape = "[CIT-NN]"
    segmentation_marker = r"\[CIT-\d+\]"
    required_fields: tuple[str, ...] = ("citation_label",)

    def bound(self, entries: Sequence[CitableEntry]) -> ExactMarkers:
        """``[CIT-n]`` names the n-th entry; any other ``CIT`` shape is malformed."""
        return ExactMarkers(
            marker_re=_MARKER_RE,
            keys=index_markers([(self.marker(entry), entry.anchor) for entry in entries]),
            suspect_res=(_GROUP_RE, _STRAY_RE),
        )

    def marker(self, entry: CitableEntry) -> str:
        """``[CIT-01]`` for the first entry."""
        return f"[{self.public_anchor(entry)}]"

    def public_anchor(self, entry: CitableEntry) -> str:
        """``CIT-01``."""
        return f"CIT-{_position(entry):02d}"

    def header(self, entry: CitableEntry) -> str:
        """``[CIT-01] source=EU AI Act Art. 9 | document_id=EUAIA | page=12``."""
        parts = [f"source={entry.citation_label}"]
        if entry.document_id is not None:
            parts.append(f"document_id={entry.document_id}")
        if entry.page is not None:
            parts.append(f"page={entry.page}")
        return f"{self.marker(entry)} {' | '.join(parts)}"

    def row_problem(self, row: CitableRow) -> str | None:
        """A row without the ``citation_label`` its marker maps to."""
        if row.citation_label is None:
            return "citation_label: required (each [CIT-NN] marker maps to the row's label)"
        return None

    def unique_key(self, row: CitableRow) -> str | None:
        """None: positional markers are unique by construction."""
        return None

    def neutralize(self, text: str) -> tuple[str, int]:
        """``[CIT-02]`` (any ``CIT`` shape in square brackets) in evidence becomes round."""
        return squared(_GROUP_RE, text)

    def __repr__(self) -> str:
        return "CitLabel()"


CIT_LABEL = CitLabel()
"""The grammar of ``CIT_LABEL_POLICY_V1``."""
