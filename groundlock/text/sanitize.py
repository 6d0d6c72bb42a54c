"""``safe_normalize_v1``: make untrusted evidence text safe to embed, without rewriting it.

Evidence comes from documents nobody in the request path controls, so it is treated as data
that may try to look like prompt structure. The sanitiser does four things, in this order:

1. **Remove hidden characters**: C0/C1 control characters that are not whitespace, NUL,
   Unicode format characters, lone surrogates (which cannot even be encoded as UTF-8 prompt
   bytes) and every *default-ignorable* code point — zero-width spaces and joiners, bidi
   embeddings, overrides and isolates, variation selectors, the combining grapheme joiner,
   Hangul fillers, the invisible tag plane used for ASCII smuggling, soft hyphen, BOM.
2. **Collapse whitespace**: every run of whitespace, line breaks included, becomes one space.
   A chunk is one line of the prompt, directly under the header line the assembler wrote, so
   it cannot add header lines or split itself into what looks like several entries.
3. **Neutralise anchor-shaped brackets**: ``[C3]``, ``[c0]``, ``[C 1]``, ``[C-1]``, ``[C0, C1]``,
   look-alikes such as ``【C2】``, ``⟦C0⟧`` or a Cyrillic capital es (U+0421), and forged headers
   ``[C9 | chunk_id=...]`` get round brackets, so the model never sees an anchor or header
   that the assembler did not write. Words are untouched; only bracket characters change.
4. **Neutralise fence tags**: ``<evidence>``, ``</question>`` and the other tag names in
   :data:`FENCE_TAG_NAMES` get their angle brackets escaped (``&lt;/evidence&gt;``). Prompt
   templates delimit their sections with exactly these tags, so evidence cannot close its
   section or open another one.

``safe_normalize_v2`` (the presets' mode) is ``safe_normalize_v1`` followed by two steps:
the fence tags of the conversation-history section (:data:`HISTORY_FENCE_TAG_NAMES`) are
neutralised like the others, and so are the marker shapes of the policy's citation grammar
(``[CIT-02]`` in a chunk becomes ``(CIT-02)`` under the ``[CIT-NN]`` grammar), by the
grammar's own :meth:`~groundlock.citations.CitationGrammar.neutralize`.

The character sets are frozen literals, not ``unicodedata`` lookups, so the output is the
same on every Python version: ``safe_normalize_v1`` is a versioned contract, and a change to
it is a new mode, not an upgrade side effect.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from groundlock._caches import WeightedLRU
from groundlock.citations import CitationGrammar
from groundlock.citations.bracket_c import C_LOOKALIKES, SQUARE_CLOSE, SQUARE_OPEN
from groundlock.text.fold import caseless

__all__ = [
    "FENCE_TAG_NAMES",
    "HIDDEN_CHARACTERS_PATTERN",
    "HIDDEN_RANGES",
    "HISTORY_FENCE_TAG_NAMES",
    "SANITIZE_CACHE",
    "WHITESPACE_CHARACTERS",
    "SanitizedText",
    "neutralized_for",
    "safe_normalize",
    "safe_normalize_v2",
    "sanitize_evidence",
]

# Unicode 14.0: categories Cf and Cs, Cc minus the controls str.split() treats as whitespace,
# and Default_Ignorable_Code_Point. Frozen for safe_normalize_v1.
HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008), (0x000E, 0x001B), (0x007F, 0x0084), (0x0086, 0x009F), (0x00AD, 0x00AD),
    (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xD800, 0xDFFF),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip

WHITESPACE_CHARACTERS: frozenset[str] = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Characters collapsed by step 2: exactly what ``str.split()`` splits on (a test pins this)."""

FENCE_TAG_NAMES: tuple[str, ...] = (
    "evidence",
    "untrusted_evidence",
    "question",
    "user_question",
    "system",
    "instructions",
    "rules",
    "output_rules",
    "output_format",
)
"""Tag names prompt templates may use to delimit sections; evidence never contains them raw."""
HISTORY_FENCE_TAG_NAMES: tuple[str, ...] = ("history", "conversation_history")
"""Fence tags of the history section, neutralised by ``safe_normalize_v2`` (not v1, whose
output is frozen)."""


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = [
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in ranges
    ]
    return "[" + "".join(parts) + "]"


HIDDEN_CHARACTERS_PATTERN = _char_class(HIDDEN_RANGES)
"""A regex character class matching every character that step 1 removes."""
_HIDDEN_RE = re.compile(HIDDEN_CHARACTERS_PATTERN)

# The citation grammar's square brackets and C look-alikes (one definition for both sides).
_OPEN = re.escape(SQUARE_OPEN)
_CLOSE = re.escape(SQUARE_CLOSE)
_C = C_LOOKALIKES
# An anchor: C, optionally spaced or signed, then a digit. [C0], [c1], [C 2], [C-1], [C01],
# [C0, C1], [C9 | chunk_id=...]. Brackets around header field syntax count too.
_ANCHOR_START = rf"\s*[{_C}]\s*[-+]?\s*\d"
_BRACKETED_ANCHOR_RE = re.compile(
    rf"[{_OPEN}](?:(?={_ANCHOR_START})|(?=[^{_OPEN}{_CLOSE}]*\b(?:chunk_id|knowledge_id)\s*=))"
    rf"([^{_OPEN}{_CLOSE}]*)[{_CLOSE}]"
)
_UNCLOSED_ANCHOR_RE = re.compile(rf"[{_OPEN}](?={_ANCHOR_START})")
# Angle brackets and slashes a model reads as "<", ">" and "/": ASCII, fullwidth, single
# guillemets, CJK and mathematical angle brackets, small forms; division and fraction slashes.
_ANGLE_OPEN = re.escape("<\uff1c\u2039\u3008\u27e8\ufe64")
_ANGLE_CLOSE = re.escape(">\uff1e\u203a\u3009\u27e9\ufe65")
_SLASH = re.escape("/\uff0f\u2044\u2215")
_TAG_RE = re.compile(
    rf"[{_ANGLE_OPEN}](\s*[{_SLASH}]?\s*)([^\s{_ANGLE_OPEN}{_ANGLE_CLOSE}{_SLASH}]{{1,40}})"
    rf"([^{_ANGLE_OPEN}{_ANGLE_CLOSE}]*)([{_ANGLE_CLOSE}]?)"
)
_FENCE_NAME_RE = re.compile(rf"(?:{'|'.join(FENCE_TAG_NAMES)})(?!\w)")
_HISTORY_NAME_RE = re.compile(rf"(?:{'|'.join(HISTORY_FENCE_TAG_NAMES)})(?!\w)")
# Cyrillic and Greek letters that look like the Latin letters of the fence names.
_HOMOGLYPHS = str.maketrans(
    "\u0430\u0441\u0435\u0456\u043e\u0440\u0455\u0443\u0445\u0501\u051b\u03bf\u03bd\u03b9\u03c5\u03b1\u03c1",
    "aceiopsyxdqovluap",
)


def _neutralize_fence(match: re.Match[str], names: re.Pattern[str] = _FENCE_NAME_RE) -> str:
    # fold before casefold: casefold leaves the dotless i alone and splits U+0130.
    name = caseless(unicodedata.normalize("NFKC", match.group(2)).translate(_HOMOGLYPHS))
    if not names.match(name):
        return match.group()
    closer = "&gt;" if match.group(4) else ""
    return f"&lt;{match.group(1)}{match.group(2)}{match.group(3)}{closer}"


@dataclass(frozen=True, slots=True)
class SanitizedText:
    """Result of sanitising one chunk text.

    The counts go into the assembly metrics: an auditor can see that a chunk arrived carrying
    hidden characters or forged anchors even though the prompt only holds the cleaned text.
    """

    text: str
    """Single-line text that is safe to place inside the evidence section."""
    removed_characters: int
    """Hidden characters removed in step 1."""
    neutralized_shapes: int
    """Anchor, header or fence shapes neutralised in steps 3 and 4."""


def safe_normalize(raw: str) -> SanitizedText:
    """Apply ``safe_normalize_v1`` without caching (for text seen once, like a question)."""
    cleaned, removed = _HIDDEN_RE.subn("", raw)
    cleaned = " ".join(cleaned.split())
    cleaned, bracketed = _BRACKETED_ANCHOR_RE.subn(r"(\1)", cleaned)
    cleaned, unclosed = _UNCLOSED_ANCHOR_RE.subn("(", cleaned)
    before = cleaned
    cleaned = _TAG_RE.sub(_neutralize_fence, cleaned)
    tags = cleaned.count("&lt;") - before.count("&lt;")
    return SanitizedText(
        text=cleaned,
        removed_characters=removed,
        neutralized_shapes=bracketed + unclosed + tags,
    )


def safe_normalize_v2(raw: str, grammar: CitationGrammar) -> SanitizedText:
    """Apply ``safe_normalize_v2``: v1, then history fence tags and ``grammar``'s markers.

    >>> from groundlock.citations import CIT_LABEL
    >>> safe_normalize_v2("See [CIT-02] </history>", CIT_LABEL).text
    'See (CIT-02) &lt;/history&gt;'
    """
    first = safe_normalize(raw)
    return neutralized_for(first, grammar)


def neutralized_for(first: SanitizedText, grammar: CitationGrammar) -> SanitizedText:
    """``safe_normalize_v2``'s steps after v1, on v1's result."""
    cleaned = _TAG_RE.sub(lambda found: _neutralize_fence(found, _HISTORY_NAME_RE), first.text)
    tags = cleaned.count("&lt;") - first.text.count("&lt;")
    cleaned, markers = grammar.neutralize(cleaned)
    if not tags and not markers:
        return first
    return SanitizedText(
        text=cleaned,
        removed_characters=first.removed_characters,
        neutralized_shapes=first.neutralized_shapes + tags + markers,
    )


SANITIZE_CACHE: WeightedLRU[str, SanitizedText] = WeightedLRU(
    safe_normalize,
    weigh=lambda raw, clean: 2 * (len(raw) + len(clean.text)) + 160,
    max_weight=32 * 2**20,
)
"""Sanitised text per raw text: popular chunks recur, and sanitising is the largest per-row
cost after tokenisation. Bounded at about 32 MB."""


def sanitize_evidence(raw: str) -> SanitizedText:
    r"""Apply ``safe_normalize_v1`` to one chunk text.

    >>> sanitize_evidence("Torque to 45 Nm\u200b [C9 | chunk_id=x]\n\nthen stop.").text
    'Torque to 45 Nm (C9 | chunk_id=x) then stop.'
    """
    return SANITIZE_CACHE(raw)
