"""The reading shared by the preset grammars: a marker cites what its exact text names.

A preset grammar (``[semantic_id]``, ``[CIT-01]``, ``[Source: file, p.N]``) writes one
canonical marker per entry. Bound to a request, a marker found in an answer names the entries
whose canonical marker is *exactly* its text (several, when two chunks share a page): no case
folding, no substring or page-only match, no first-entry fallback. A well-formed marker that
names nothing is returned as its own text, which is never an entry key, so the firewall
reports it as ``INVALID_CITATION_REFERENCE``; a marker-like shape that is not well-formed
(the grammar's *suspects*) counts as malformed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from groundlock.citations.bracket_c import SQUARE_CLOSE, SQUARE_OPEN
from groundlock.citations.grammar import AnchorScan

__all__ = ["ANY_CLOSE", "ANY_OPEN", "ExactMarkers", "bracket_group_re", "squared"]

ANY_OPEN = SQUARE_OPEN + "(\uff08{\uff5b<\uff1c\u3008\u300a"
"""Brackets a reader takes for a marker's: square and its look-alikes, round, curly, angle."""
ANY_CLOSE = SQUARE_CLOSE + ")\uff09}\uff5d>\uff1e\u3009\u300b"
_SQUARE_CLOSE_OF = dict(zip(SQUARE_OPEN, SQUARE_CLOSE, strict=True))


def bracket_group_re(content: str, *, opening: str = ANY_OPEN, width: int = 200) -> re.Pattern[str]:
    """A bracket group (any of ``opening``) whose content matches ``content`` somewhere.

    The group may lack its closing bracket (a marker cut short is still one).
    """
    open_class, close_class = re.escape(opening), re.escape(ANY_CLOSE)
    inner = rf"[^{re.escape(ANY_OPEN)}{close_class}\n]"
    return re.compile(
        rf"[{open_class}](?={inner}{{0,{width}}}?(?:{content}))"
        rf"{inner}{{0,{width}}}[{close_class}]?"
    )


def squared(
    pattern: re.Pattern[str], text: str, keep: Callable[[str], bool] | None = None
) -> tuple[str, int]:
    """``text`` with the square brackets (and look-alikes) of ``pattern``'s matches made round.

    How the preset grammars neutralise marker shapes in evidence: only bracket characters
    change, never words, and the result holds no match of ``pattern`` in square brackets
    (but those ``keep`` spares).
    """
    changed = 0

    def round_off(found: re.Match[str]) -> str:
        nonlocal changed
        group = found.group()
        if group[0] not in _SQUARE_CLOSE_OF or (keep is not None and keep(group)):
            return group
        changed += 1
        body = group[1:]
        if body and body[-1] in SQUARE_CLOSE:
            body = body[:-1] + ")"
        return "(" + body

    return pattern.sub(round_off, text), changed


@dataclass(frozen=True, slots=True)
class ExactMarkers:
    """A preset grammar bound to one request (a :class:`~groundlock.citations.BoundCitations`)."""

    marker_re: re.Pattern[str]
    """One well-formed marker."""
    keys: Mapping[str, tuple[str, ...]]
    """Canonical marker text -> the keys of the entries it names, in entry order."""
    suspect_res: tuple[re.Pattern[str], ...]
    """Marker-like shapes, looked for once well-formed markers are blanked out."""
    suspect: Callable[[str], bool] = field(default=lambda _group: True)
    """Whether a shape found by :attr:`suspect_res` really is marker-like in this request."""

    def anchors(self, text: str) -> list[str]:
        """Keys named by the well-formed markers of ``text``; unknown markers as their text."""
        found: list[str] = []
        for marker in self.marker_re.finditer(text):
            found.extend(self.keys.get(marker.group(), (marker.group(),)))
        return found

    def _suspects(self, masked: str) -> tuple[str, tuple[str, ...]]:
        shapes: list[str] = []

        def blank(found: re.Match[str]) -> str:
            if not self.suspect(found.group()):
                return found.group()
            shapes.append(found.group())
            return " "

        for pattern in self.suspect_res:
            masked = pattern.sub(blank, masked)
        return masked, tuple(shapes)

    def scan(self, text: str) -> AnchorScan:
        """The keys of ``text``'s markers and the suspects it holds besides them."""
        _, malformed = self._suspects(self.marker_re.sub(" ", text))
        return AnchorScan(anchors=tuple(self.anchors(text)), malformed_shapes=malformed)

    def without_markers(self, text: str) -> str:
        """``text`` with its markers and suspects blanked out."""
        return self._suspects(self.marker_re.sub(" ", text))[0]


def index_markers(markers: list[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """``[(marker, key), ...]`` -> marker -> keys, in entry order."""
    keys: dict[str, list[str]] = {}
    for marker, key in markers:
        keys.setdefault(marker, []).append(key)
    return {marker: tuple(named) for marker, named in keys.items()}
