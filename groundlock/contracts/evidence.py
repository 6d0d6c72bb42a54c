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

from groundlock.citations.bracket_c import UNKNOWN_SOURCE, header_line

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


def anchor_for(position: int) -> str:
    """Citation anchor of the evidence entry at ``position`` (0-based): ``C0``, ``C1``, ..."""
    return f"C{position}"


render_evidence_header = header_line
"""The ``[C<n>]`` grammar's header line (kept under its contract name)."""
