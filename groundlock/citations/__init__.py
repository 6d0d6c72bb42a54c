"""Citation grammars: the marker styles an answer may cite its evidence with.

One module per grammar behind the :class:`CitationGrammar` protocol: ``[C<n>]``
(:mod:`~groundlock.citations.bracket_c`, the default of specs ``000``/``001``),
``[semantic_id]`` (:mod:`~groundlock.citations.semantic_id`, ``002``), ``[CIT-01]``
(:mod:`~groundlock.citations.cit_label`, ``003``) and ``[Source: file, p.N]``
(:mod:`~groundlock.citations.source_page`, ``004``). A firewall ruleset names its grammar.
"""

from groundlock.citations.bracket_c import BRACKET_C, BracketC
from groundlock.citations.cit_label import CIT_LABEL, CitLabel
from groundlock.citations.grammar import (
    AnchorScan,
    BoundCitations,
    CitableEntry,
    CitableRow,
    CitationGrammar,
)
from groundlock.citations.semantic_id import SEMANTIC_ID, SemanticId
from groundlock.citations.source_page import SOURCE_PAGE, SourcePage

__all__ = [
    "BRACKET_C",
    "CIT_LABEL",
    "GRAMMAR_NAMES",
    "SEMANTIC_ID",
    "SOURCE_PAGE",
    "AnchorScan",
    "BoundCitations",
    "BracketC",
    "CitLabel",
    "CitableEntry",
    "CitableRow",
    "CitationGrammar",
    "SemanticId",
    "SourcePage",
    "grammar_named",
]

_GRAMMARS: dict[str, CitationGrammar] = {
    BRACKET_C.name: BRACKET_C,
    SEMANTIC_ID.name: SEMANTIC_ID,
    CIT_LABEL.name: CIT_LABEL,
    SOURCE_PAGE.name: SOURCE_PAGE,
}
GRAMMAR_NAMES: tuple[str, ...] = tuple(_GRAMMARS)
"""Names of the built-in grammars, default first."""


def grammar_named(name: str) -> CitationGrammar:
    """The built-in grammar called ``name``.

    Raises:
        KeyError: no grammar has that name.
    """
    return _GRAMMARS[name]
