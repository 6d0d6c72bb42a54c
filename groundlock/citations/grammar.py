"""What a citation grammar is: the one place an answer's markers are recognised.

Every rule of the firewall, the sentence splitter, the evidence headers and the offline model
read citations only through a :class:`CitationGrammar`, so a new marker style
(``[semantic_id]``, ``[CIT-01]``, ``[Source: file, p.N]``) is a new grammar module, not an
edit of the rules.

Internally every evidence entry keeps its positional anchor key (``C0``, ``C1``, ...): the
audit trail, the metrics and the rules speak in keys. A grammar decides how an entry is
*written*: its header line in the prompt, the marker that cites it, the anchor shown in a
public citation. To read an answer, the grammar is :meth:`~CitationGrammar.bound` to the
request's entries, which gives a :class:`BoundCitations`: it answers, for a text, which
entries its well-formed markers name (as keys; a marker naming no entry is returned as its
own text, which is never a key), how many marker-like tokens are malformed, and what the text
says without its markers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["AnchorScan", "BoundCitations", "CitableEntry", "CitableRow", "CitationGrammar"]


@dataclass(frozen=True, slots=True)
class AnchorScan:
    """Every anchor in a text: well-formed ones in order, and the malformed shapes."""

    anchors: tuple[str, ...]
    """Well-formed anchors as keys (``"C0"``), in order, repeats kept."""
    malformed_shapes: tuple[str, ...]
    """The anchor-like tokens that are not well-formed, exactly as written, repeats kept
    (what a verdict names as its malformed citations)."""

    @property
    def malformed(self) -> int:
        """How many anchor-like tokens are not well-formed."""
        return len(self.malformed_shapes)


class CitableRow(Protocol):
    """The citation metadata of a retrieved row, as a grammar checks it (read-only)."""

    @property
    def chunk_id(self) -> str:
        """The row's chunk id (the ``[semantic_id]`` fallback)."""

    @property
    def knowledge_id(self) -> str | None:
        """The source document's knowledge id."""

    @property
    def source_reference(self) -> str | None:
        """A human-readable source."""

    @property
    def semantic_id(self) -> str | None:
        """``002``'s marker id."""

    @property
    def citation_label(self) -> str | None:
        """``003``'s source label."""

    @property
    def document_id(self) -> str | None:
        """``003``'s document id."""

    @property
    def source_file(self) -> str | None:
        """``004``'s file name."""

    @property
    def page(self) -> int | None:
        """``004``'s page, from 1."""


class CitableEntry(CitableRow, Protocol):
    """An admitted evidence entry: a row with its positional key."""

    @property
    def anchor(self) -> str:
        """``C<n>``: the entry's position, its key everywhere inside groundlock."""

    @property
    def knowledge_id(self) -> str:
        """The row's knowledge id, or its chunk id."""


class BoundCitations(Protocol):
    """A grammar bound to one request's entries: what the firewall reads an answer with."""

    @property
    def marker_re(self) -> re.Pattern[str]:
        """Exactly one well-formed marker (naming an entry or not)."""

    def scan(self, text: str) -> AnchorScan:
        """The keys of ``text``'s well-formed markers and its count of malformed shapes."""
        ...

    def anchors(self, text: str) -> list[str]:
        """The keys the well-formed markers of ``text`` name, in order, repeats kept.

        A marker naming several entries (two chunks of one page) gives each key; one naming
        none gives its own text, which is never a key, so the firewall reports it.
        """
        ...

    def without_markers(self, text: str) -> str:
        """``text`` with every marker and marker-like token blanked out."""
        ...


class CitationGrammar(Protocol):
    """A citation marker style: how entries are written in the prompt and cited back."""

    name: str
    """Stable name, recorded with the ruleset that uses it (``bracket_c``)."""
    shape: str
    """The marker's form as messages name it (``[C<n>]``, ``[CIT-NN]``)."""
    segmentation_marker: str
    """Regex source of what the sentence splitter treats as a marker: a mark glued to one
    ends a sentence, and a run of them after an end mark belongs to that sentence. Looser
    than a well-formed marker (``[C01]`` too), so a malformed marker cannot merge sentences."""
    required_fields: tuple[str, ...]
    """Row fields the markers or headers need; a row without one fails the input contract."""

    def bound(self, entries: Sequence[CitableEntry]) -> BoundCitations:
        """This grammar reading answers about ``entries``."""
        ...

    def marker(self, entry: CitableEntry) -> str:
        """The marker that cites ``entry`` (``[C0]``, ``[IPC_420_0]``, ``[CIT-01]``)."""
        ...

    def public_anchor(self, entry: CitableEntry) -> str:
        """The anchor a public citation shows: the marker without its brackets."""
        ...

    def header(self, entry: CitableEntry) -> str:
        """The entry's header line in the evidence block (one line, no newline)."""
        ...

    def row_problem(self, row: CitableRow) -> str | None:
        """Why ``row`` cannot be cited in this grammar (``"source_file: ..."``), or None."""
        ...

    def unique_key(self, row: CitableRow) -> str | None:
        """What must differ between two rows for each marker to name one row, or None.

        The semantic id must; a page's marker may name several chunks of that page.
        """
        ...

    def neutralize(self, text: str) -> tuple[str, int]:
        """Evidence (or history) text with this grammar's marker shapes made inert.

        Square brackets of anything a model could copy as a marker become round ones, so the
        model never sees a marker the assembler did not write. Returns the text and how many
        shapes changed. Must be idempotent.
        """
        ...
