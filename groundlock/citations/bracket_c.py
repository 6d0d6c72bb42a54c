"""The ``[C<n>]`` citation grammar of specs ``000``/``001``.

What a citation is, and what only looks like one.

A citation is exactly ``[C<n>]``: an ASCII square bracket, a capital C, a decimal number
without leading zeros, a closing square bracket. Anything a reader (or a client's parser)
could take for an anchor but that is not exactly that shape is *malformed*: ``[c0]``,
``(C0)``, ``[C-1]``, ``[C 0]``, ``[C01]``, ``[C0, C1]``, ``[C0-C2]``, ``【C0】``, the fullwidth
and Cyrillic look-alikes of the brackets and of C, digits of other scripts, ``C0]`` without its
opening bracket, or the template's own ``[C<n>]`` echoed back. The validator never
resolves a malformed anchor to the entry it probably meant: it rejects the answer.

The look-alike sets here are also what the sanitiser neutralises in evidence text
(:mod:`groundlock.text.sanitize`), so the two cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundlock.citations.grammar import AnchorScan, CitableEntry, CitableRow

__all__ = [
    "ANCHOR_RE",
    "BRACKET_C",
    "C_LOOKALIKES",
    "SQUARE_CLOSE",
    "SQUARE_OPEN",
    "UNKNOWN_SOURCE",
    "BracketC",
    "header_line",
    "scan_anchors",
    "without_anchors",
]

ANCHOR_RE = re.compile(r"\[C(0|[1-9][0-9]*)\]")
"""Exactly one well-formed anchor; group 1 is its number."""

SQUARE_OPEN = "[\uff3b\u3010\u3016\u3014\u27e6\u301a\u2772\u2045\ufe5d"
"""Square brackets and the brackets a model reads as square: fullwidth, black and white
lenticular, tortoise shell, mathematical and CJK white square, ornament, quill, small."""
SQUARE_CLOSE = "]\uff3d\u3011\u3017\u3015\u27e7\u301b\u2773\u2046\ufe5e"
"""The closing partners of :data:`SQUARE_OPEN`, in the same order."""
C_LOOKALIKES = "Cc\u0421\u0441\uff23\uff43\u216d\u217d\u03f9\u03f2"
"""C and its look-alikes (Cyrillic, fullwidth, Roman numeral, Greek lunate sigma)."""

# Brackets a reader takes for an anchor's: square and its look-alikes, round, curly, angle.
_OPEN = re.escape(SQUARE_OPEN + "(\uff08{\uff5b<\uff1c\u3008\u300a")
_SQUARE_CLOSE = re.escape(SQUARE_CLOSE)
_CLOSE = _SQUARE_CLOSE + re.escape(")\uff09}\uff5d>\uff1e\u3009\u300b")
_C = C_LOOKALIKES
# An opening bracket, C, optional spacing or a sign, then a digit of any script or the
# template's placeholder (``[C<n>]``, ``[Cn]``).
_START = rf"[{_OPEN}]\s*[{_C}][\s\-+_#:]*(?:\d|<|n\s*[{_CLOSE}])"
_GROUP_RE = re.compile(rf"{_START}[^{_OPEN}{_CLOSE}\n]{{0,40}}[{_CLOSE}]?")
"""One bracketed anchor-like group, ``[C0, C1]`` included, counted once."""
_STRAY_RE = re.compile(rf"[{_C}](?<![\w{_OPEN}][{_C}])\s*\d+\s*[{_SQUARE_CLOSE}]")
"""``C0]``: an anchor that lost its opening bracket (a C not preceded by a word character or
an opening bracket). The C comes first so the regex engine can skip to candidate Cs."""


def scan_anchors(text: str) -> AnchorScan:
    """Find the anchors of ``text``; a valid anchor never also counts as malformed.

    >>> scan_anchors("Torque to 45 Nm [C0][C2], not (C1) or [C0, C1].")
    AnchorScan(anchors=('C0', 'C2'), malformed_shapes=('(C1)', '[C0, C1]'))
    """
    anchors = tuple(f"C{number}" for number in ANCHOR_RE.findall(text))
    masked = ANCHOR_RE.sub(" ", text) if anchors else text
    groups = tuple(_GROUP_RE.findall(masked))
    if groups:
        masked = _GROUP_RE.sub(" ", masked)
    return AnchorScan(anchors=anchors, malformed_shapes=groups + tuple(_STRAY_RE.findall(masked)))


def without_anchors(text: str) -> str:
    """``text`` with every anchor and anchor-like token blanked out.

    What is left is what a sentence says: ``"[c0]"`` alone says nothing, so it is no
    sentence that needs a citation (it is reported as malformed instead).

    >>> without_anchors("Torque to 45 Nm [C0] (C1).")
    'Torque to 45 Nm    .'
    """
    return _STRAY_RE.sub(" ", _GROUP_RE.sub(" ", ANCHOR_RE.sub(" ", text)))


UNKNOWN_SOURCE = "unknown"
"""Rendered as ``source=`` when a row carries no source_reference."""


def header_line(anchor: str, chunk_id: str, knowledge_id: str, source_reference: str | None) -> str:
    """One header line exactly as ``001`` P3.1 freezes it.

    >>> header_line("C0", "c-17", "KB-4", None)
    '[C0 | chunk_id=c-17 | knowledge_id=KB-4 | source=unknown]'
    """
    source = source_reference if source_reference is not None else UNKNOWN_SOURCE
    return f"[{anchor} | chunk_id={chunk_id} | knowledge_id={knowledge_id} | source={source}]"


class BracketC:
    """The ``[C<n>]`` grammar as a :class:`~groundlock.citations.CitationGrammar`.

    Its markers are the anchor keys themselves, so it reads every request the same way:
    :meth:`bound` returns the grammar, and an anchor's validity is the firewall's question.
    Its evidence shapes are neutralised by ``safe_normalize_v1`` itself.
    """

    name = "bracket_c"
    shape = "[C<n>]"
    marker_re = ANCHOR_RE
    segmentation_marker = r"\[C\d+\]"
    required_fields: tuple[str, ...] = ()

    def bound(self, entries: Sequence[CitableEntry]) -> BracketC:
        """This grammar: ``[C<n>]`` names the entry with key ``C<n>`` in every request."""
        return self

    def scan(self, text: str) -> AnchorScan:
        """See :func:`scan_anchors`."""
        return scan_anchors(text)

    def anchors(self, text: str) -> list[str]:
        """The anchor keys of ``text``'s well-formed markers (``["C0", "C2"]``)."""
        return [f"C{n}" for n in ANCHOR_RE.findall(text)]

    def without_markers(self, text: str) -> str:
        """See :func:`without_anchors`."""
        return without_anchors(text)

    def marker(self, entry: CitableEntry) -> str:
        """``[C0]``."""
        return f"[{entry.anchor}]"

    def public_anchor(self, entry: CitableEntry) -> str:
        """``C0``."""
        return entry.anchor

    def header(self, entry: CitableEntry) -> str:
        """See :func:`header_line`."""
        return header_line(entry.anchor, entry.chunk_id, entry.knowledge_id, entry.source_reference)

    def row_problem(self, row: CitableRow) -> str | None:
        """None: a positional anchor needs no row field."""
        return None

    def unique_key(self, row: CitableRow) -> str | None:
        """None: positional markers are unique by construction."""
        return None

    def neutralize(self, text: str) -> tuple[str, int]:
        """``text`` unchanged: ``safe_normalize_v1`` already neutralises ``[C<n>]`` shapes."""
        return text, 0

    def __repr__(self) -> str:
        return "BracketC()"


BRACKET_C = BracketC()
"""The default grammar (specs ``000``/``001``)."""
