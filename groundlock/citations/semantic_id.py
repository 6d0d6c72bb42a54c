"""The ``[semantic_id]`` citation grammar of spec ``002``.

A marker is the semantic id of an admitted row in square brackets, ``[IPC_420_0]``; a row
without a ``semantic_id`` is cited by its ``chunk_id``. An id is letters, digits and
``_ . : / -`` (starting and ending with a letter, digit or underscore), so it can never hold
a bracket, a space or a comma: a row whose id does not fit is refused at the input gate.

Matching is exact (``002`` C3: no fuzzy matching): ``[ipc_420_0]`` or ``[IPC_421_0]`` where
only ``IPC_420_0`` is admitted names nothing and is an invalid reference. Malformed are the
marker-like shapes that are not one marker: ``[IPC_420_0, MWA_2_1]``, ``(IPC_420_0)``,
``[ IPC_420_0 ]``, ``【IPC_420_0】``, any bracket group that holds an admitted id.

The entry header is ``002``'s layout in one line: the marker, then the row's source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundlock.citations.bracket_c import SQUARE_OPEN
from groundlock.citations.exact import (
    ANY_CLOSE,
    ANY_OPEN,
    ExactMarkers,
    bracket_group_re,
    index_markers,
    squared,
)
from groundlock.citations.grammar import CitableEntry, CitableRow

__all__ = ["SEMANTIC_ID", "SemanticId"]

_ID = r"[A-Za-z0-9_](?:[A-Za-z0-9_.:/\-]*[A-Za-z0-9_])?"
_ID_RE = re.compile(_ID)
_MARKED_RE = re.compile(r"[^\s\]]*[0-9_]")
"""An id holds a digit or an underscore: ``[sic]``, ``[x]`` and ``[Repealed]`` are prose."""
_MARKER_RE = re.compile(rf"\[(?=[A-Za-z0-9_.:/\-]*[0-9_]){_ID}\]")
_TOKEN_RE = re.compile(r"[\w.:/\-]+")
# Square brackets (and look-alikes) around one id-shaped token or a list of them, in any
# script. Tokens hold no space, comma or semicolon, so a group splits one way only: the
# match is linear in the group's length (an optional separator between ids made it
# exponential).
_SQUARED_RE = re.compile(
    rf"[{re.escape(SQUARE_OPEN)}]\s*[\w.:/\-]{{1,120}}(?:\s*[,;]\s*[\w.:/\-]{{1,120}}){{0,20}}\s*"
    rf"[{re.escape(ANY_CLOSE)}]"
)
_GROUP_RE = bracket_group_re(r"[^\W_]", opening=ANY_OPEN, width=120)


def _marker_shaped(group: str) -> bool:
    """Whether a square group looks like markers to a reader.

    Ids (a digit or an underscore in each) written in look-alike brackets or letters, with
    spaces inside the brackets, or listed.
    """
    tokens = [token.strip() for token in re.split(r"[,;]", group[1:-1])]
    if not all(_TOKEN_RE.fullmatch(token) and _MARKED_RE.match(token) for token in tokens):
        return False
    return len(tokens) > 1 or group[0] != "[" or not group.isascii() or group[1:-1] != tokens[0]


def semantic_id_of(row: CitableRow) -> str:
    """The id a row is cited by: its ``semantic_id``, else its ``chunk_id``."""
    return row.semantic_id if row.semantic_id is not None else row.chunk_id


class SemanticId:
    """The ``[semantic_id]`` grammar as a :class:`~groundlock.citations.CitationGrammar`."""

    name = "semantic_id"
    shape = "[<semantic_id>]"
    segmentation_marker = rf"\[{_ID}\]"
    required_fields: tuple[str, ...] = ()

    def bound(self, entries: Sequence[CitableEntry]) -> ExactMarkers:
        """Markers naming the admitted ids; a bracket group holding one is malformed."""
        ids = {semantic_id_of(entry).casefold() for entry in entries}

        def names_an_id(group: str) -> bool:
            if _SQUARED_RE.fullmatch(group) and _marker_shaped(group):
                # ``[A, B]``, ``[ A ]``, ``【A】``, ``[IP\u0421_420]`` (a Cyrillic C): always
                return True
            return any(token.strip(".:/-").casefold() in ids for token in _TOKEN_RE.findall(group))

        return ExactMarkers(
            marker_re=_MARKER_RE,
            keys=index_markers([(self.marker(entry), entry.anchor) for entry in entries]),
            suspect_res=(_GROUP_RE,),
            suspect=names_an_id,
        )

    def marker(self, entry: CitableEntry) -> str:
        """``[IPC_420_0]``."""
        return f"[{semantic_id_of(entry)}]"

    def public_anchor(self, entry: CitableEntry) -> str:
        """``IPC_420_0``."""
        return semantic_id_of(entry)

    def header(self, entry: CitableEntry) -> str:
        """``[IPC_420_0] source=Indian Penal Code s. 420`` (the source only when known)."""
        source = entry.source_reference
        return self.marker(entry) + (f" source={source}" if source is not None else "")

    def row_problem(self, row: CitableRow) -> str | None:
        """A row whose id cannot be written as one marker."""
        identifier = semantic_id_of(row)
        if _ID_RE.fullmatch(identifier) and _MARKED_RE.match(identifier):
            return None
        field = "semantic_id" if row.semantic_id is not None else "chunk_id"
        return (
            f"{field}: cannot be written as a [semantic_id] marker (letters, digits and "
            "_ . : / - only, starting and ending with a letter, digit or _, and at least one "
            "digit or _ so that it cannot be read as a bracketed word such as [sic])"
        )

    def unique_key(self, row: CitableRow) -> str | None:
        """The row's id: two rows under one id would make a citation of either undecidable."""
        return semantic_id_of(row)

    def neutralize(self, text: str) -> tuple[str, int]:
        """``[IPC_420_0]`` and ``[A, B]`` in evidence become ``(IPC_420_0)``, ``(A, B)``."""
        return squared(_SQUARED_RE, text, keep=lambda group: not _MARKED_RE.search(group))

    def __repr__(self) -> str:
        return "SemanticId()"


SEMANTIC_ID = SemanticId()
"""The grammar of ``SEMANTIC_ID_POLICY_V1``."""
