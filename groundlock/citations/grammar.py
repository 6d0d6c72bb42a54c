"""What a citation grammar is: the one place an answer's markers are recognised.

Every rule of the firewall, the sentence splitter and the offline model read citations only
through a :class:`CitationGrammar`, so a new marker style (``[semantic_id]``,
``[CIT-01]``, ``[Source: file, p.N]``) is a new grammar module, not an edit of the rules.
A grammar answers four questions about a text: which well-formed markers it holds (as the
anchor keys of the evidence entries they name), how many marker-like tokens are malformed,
what the text says without its markers, and where a run of markers follows a sentence's end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

__all__ = ["AnchorScan", "CitationGrammar"]


@dataclass(frozen=True, slots=True)
class AnchorScan:
    """Every anchor in a text: well-formed ones in order, and the malformed shapes."""

    anchors: tuple[str, ...]
    """Well-formed anchors as keys (``"C0"``), in order, repeats kept."""
    malformed: int
    """How many anchor-like tokens are not well-formed."""


class CitationGrammar(Protocol):
    """A citation marker style, as the firewall and the sentence splitter see it."""

    name: str
    """Stable name, recorded with the ruleset that uses it (``bracket_c``)."""
    marker_re: re.Pattern[str]
    """Exactly one well-formed marker."""
    segmentation_marker: str
    """Regex source of what the sentence splitter treats as a marker: a mark glued to one
    ends a sentence, and a run of them after an end mark belongs to that sentence. Looser
    than :attr:`marker_re` (``[C01]`` too), so a malformed marker cannot merge sentences."""

    def scan(self, text: str) -> AnchorScan:
        """The well-formed anchors of ``text`` and its count of malformed marker shapes."""
        ...

    def anchors(self, text: str) -> list[str]:
        """The anchor keys of ``text``'s well-formed markers, in order, repeats kept."""
        ...

    def without_markers(self, text: str) -> str:
        """``text`` with every marker and marker-like token blanked out (lengths kept)."""
        ...

    def marker(self, anchor: str) -> str:
        """The marker that cites ``anchor`` (``"C0"`` -> ``"[C0]"``)."""
        ...
