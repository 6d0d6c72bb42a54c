"""The frozen evidence entry format of ``001`` P3.1 / R2.5.

Each selected chunk is rendered as a header line and its sanitised text::

    [C0 | chunk_id=pump-07 | knowledge_id=MM-HYD-2 | source=Hydraulics manual p.41]
    Check the accumulator pre-charge at 3.5 bar before each flight.

Entries are joined with a blank line and every entry, the last included, ends with it. That
makes the tokenizer's count of the block exactly the sum of its entries' counts (a boundary
always falls after a newline run, where cl100k's pre-tokenizer starts a new piece), which is
what lets R2 budget evidence from cached per-chunk counts instead of re-tokenising the block.
"""

from __future__ import annotations

__all__ = [
    "ENTRY_SEPARATOR",
    "HEADER_TEXT_SEPARATOR",
    "UNKNOWN_SOURCE",
    "anchor_for",
    "render_evidence_header",
]

HEADER_TEXT_SEPARATOR = "\n"
"""Between an entry's header line and its text."""
ENTRY_SEPARATOR = "\n\n"
"""After every entry's text."""
UNKNOWN_SOURCE = "unknown"
"""Rendered as ``source=`` when a row carries no source_reference."""


def anchor_for(position: int) -> str:
    """Citation anchor of the evidence entry at ``position`` (0-based): ``C0``, ``C1``, ..."""
    return f"C{position}"


def render_evidence_header(
    anchor: str, chunk_id: str, knowledge_id: str, source_reference: str | None
) -> str:
    """Render one header line exactly as ``001`` P3.1 freezes it.

    >>> render_evidence_header("C0", "c-17", "KB-4", None)
    '[C0 | chunk_id=c-17 | knowledge_id=KB-4 | source=unknown]'
    """
    source = source_reference if source_reference is not None else UNKNOWN_SOURCE
    return f"[{anchor} | chunk_id={chunk_id} | knowledge_id={knowledge_id} | source={source}]"
