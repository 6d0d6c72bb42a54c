"""Citation grammars: the marker styles an answer may cite its evidence with.

One module per grammar behind the :class:`CitationGrammar` protocol; ``[C<n>]``
(:mod:`groundlock.citations.bracket_c`) is the default of specs ``000``/``001``.
"""

from groundlock.citations.bracket_c import BRACKET_C, BracketC
from groundlock.citations.grammar import AnchorScan, CitationGrammar

__all__ = ["BRACKET_C", "AnchorScan", "BracketC", "CitationGrammar", "grammar_named"]

_GRAMMARS: dict[str, CitationGrammar] = {BRACKET_C.name: BRACKET_C}


def grammar_named(name: str) -> CitationGrammar:
    """The built-in grammar called ``name``.

    Raises:
        KeyError: no grammar has that name.
    """
    return _GRAMMARS[name]
