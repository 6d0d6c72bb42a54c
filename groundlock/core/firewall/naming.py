"""What an answer cited, in the words of the policy's citation grammar (pure, no IO).

Inside groundlock an evidence entry is its positional key (``C0``); a reader of a verdict
speaks the policy's citation form (``IPC_420_0``, ``CIT-01``, ``Source: manual.pdf, p.14``).
These names are how a verdict says, as data, what the answer cited, what it cited that the
request did not hold, and what it could have cited (``002``'s ``cited_sources``,
``invalid_citations`` and ``retrieved_semantic_ids``). They are derived from the one parse
every rule reads, never from a second scan of the text.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from groundlock.citations.grammar import AnchorScan, CitableEntry, CitationGrammar
from groundlock.core.firewall.parsed import ParsedAnswer
from groundlock.core.firewall.rule import Context

__all__ = [
    "CitationNames",
    "citation_names",
    "public_ids",
    "unbracketed",
    "wrong_citations",
]


@dataclass(frozen=True, slots=True)
class CitationNames:
    """A verdict's citations by name: see the fields of :class:`~groundlock.ValidationResult`."""

    cited: tuple[str, ...]
    invalid: tuple[str, ...]
    malformed: tuple[str, ...]
    retrieved: tuple[str, ...]


def _distinct(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def unbracketed(marker: str) -> str:
    """``[IPC_421_0]`` -> ``IPC_421_0``; a key (``C9``, the default grammar's) as it is."""
    return marker[1:-1] if marker.startswith("[") and marker.endswith("]") else marker


def public_ids(grammar: CitationGrammar, entries: Sequence[CitableEntry]) -> tuple[str, ...]:
    """The ids an answer could cite ``entries`` by, in the grammar's form, distinct.

    A verdict's ``retrieved_ids``, and what ``groundlock retrieve`` lists.
    """
    return _distinct(grammar.public_anchor(entry) for entry in entries)


def wrong_citations(
    scan: AnchorScan, entries: Container[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(invalid, malformed)`` of ``scan``: as a verdict names them, each distinct.

    Invalid: the well-formed markers naming none of ``entries``, unbracketed; malformed:
    the malformed shapes as written. A well-formed marker naming no entry comes back from
    the grammar as its own text (never a key), or under ``[C<n>]`` as a key the request
    does not hold: either way it is not in ``entries``.
    """
    invalid = _distinct(unbracketed(a) for a in scan.anchors if a not in entries)
    return invalid, _distinct(scan.malformed_shapes)


def citation_names(answer: ParsedAnswer, cited: tuple[str, ...], ctx: Context) -> CitationNames:
    """Name ``cited`` (valid keys), the invalid and malformed markers, the entries held."""
    grammar = ctx.ruleset.grammar
    entries = ctx.entries
    invalid, malformed = wrong_citations(answer.scan, entries)
    return CitationNames(
        cited=_distinct(grammar.public_anchor(entries[key]) for key in cited if key in entries),
        invalid=invalid,
        malformed=malformed,
        retrieved=public_ids(grammar, ctx.bundle.selected_evidence),
    )
