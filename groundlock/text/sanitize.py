"""``safe_normalize_v1``: make untrusted evidence text safe to embed, without rewriting it.

Evidence comes from documents nobody in the request path controls, so it is treated as data
that may try to look like prompt structure. The sanitiser does four things, in this order:

1. **Remove hidden characters**: C0/C1 control characters that are not whitespace, NUL,
   Unicode format characters (zero-width spaces and joiners, bidi embeddings, overrides and
   isolates, the invisible "tag" block used for ASCII smuggling, soft hyphen, BOM) and lone
   surrogates (which cannot even be encoded as UTF-8 prompt bytes).
2. **Collapse whitespace**: every run of whitespace, line breaks included, becomes one space.
   Sanitised evidence is therefore a single line, so no chunk can start a line of the prompt:
   it cannot forge a section header, a fence or an evidence header line, whatever it says.
3. **Neutralise anchor-shaped brackets**: ``[C3]``, ``[c0]``, ``[C 1]``, ``[C-1]``, ``[C0, C1]``,
   ``【C2】`` and forged evidence headers ``[C9 | chunk_id=...]`` get round brackets instead of
   square ones, so the model never sees a valid anchor or header that the assembler did not
   write. Words are untouched; only the bracket characters change.
4. **Neutralise fence tags**: ``<evidence>``, ``</evidence>`` and the other tag names the prompt
   template uses to fence sections get their angle brackets escaped (``&lt;/evidence&gt;``).

The character sets are frozen literals, not ``unicodedata`` lookups, so the output is the
same on every Python version: ``safe_normalize_v1`` is a versioned contract, and a change to
it is a new mode, not an upgrade side effect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "FENCE_TAG_NAMES",
    "HIDDEN_CHARACTERS",
    "HIDDEN_CHARACTERS_PATTERN",
    "WHITESPACE_CHARACTERS",
    "SanitizedText",
    "sanitize_evidence",
]

# Unicode 14.0 categories Cf (format) and Cs (surrogates), plus Cc (control) minus the control
# characters that str.split() treats as whitespace. Frozen for safe_normalize_v1.
_HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008), (0x000E, 0x001B), (0x007F, 0x0084), (0x0086, 0x009F),
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xD800, 0xDFFF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip

HIDDEN_CHARACTERS: frozenset[str] = frozenset(
    chr(cp) for low, high in _HIDDEN_RANGES for cp in range(low, high + 1)
)
"""Characters removed by step 1."""

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
"""Tag names the prompt templates may use as fences; evidence can never contain them raw."""


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = []
    for low, high in ranges:
        parts.append(
            re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        )
    return "[" + "".join(parts) + "]"


HIDDEN_CHARACTERS_PATTERN = _char_class(_HIDDEN_RANGES)
"""A regex character class matching any character of :data:`HIDDEN_CHARACTERS`."""
_HIDDEN_RE = re.compile(HIDDEN_CHARACTERS_PATTERN)

# ASCII, fullwidth, lenticular and tortoise-shell brackets: all read as "[" by a model.
_OPEN = re.escape("[\uff3b\u3010\u3014\u3016")
_CLOSE = re.escape("]\uff3d\u3011\u3015\u3017")
# An anchor starts with C/c, optionally spaced or signed, then a digit: [C0], [c1], [C 2],
# [C-1], [C01], [C0, C1], [C9 | chunk_id=...]. Brackets around header field syntax count too.
_ANCHOR_START = r"\s*[Cc]\s*[-+]?\s*\d"
_BRACKETED_ANCHOR_RE = re.compile(
    rf"[{_OPEN}](?:(?={_ANCHOR_START})|(?=[^{_OPEN}{_CLOSE}]*\b(?:chunk_id|knowledge_id)\s*=))"
    rf"([^{_OPEN}{_CLOSE}]*)[{_CLOSE}]"
)
_UNCLOSED_ANCHOR_RE = re.compile(rf"[{_OPEN}](?={_ANCHOR_START})")
_FENCE_TAG_RE = re.compile(
    r"<(\s*/?\s*(?:" + "|".join(FENCE_TAG_NAMES) + r")\b[^<>]*)>", re.IGNORECASE
)
_FENCE_TAG_OPEN_RE = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(FENCE_TAG_NAMES) + r")\b)", re.I)


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


@lru_cache(maxsize=16_384)
def sanitize_evidence(raw: str) -> SanitizedText:
    r"""Apply ``safe_normalize_v1`` to one chunk text.

    Cached per raw text: retrieval keeps returning the same popular chunks, and sanitising is
    the largest per-row cost after tokenisation.

    >>> sanitize_evidence("Torque to 45 Nm\u200b [C9 | chunk_id=x]\n\nthen stop.").text
    'Torque to 45 Nm (C9 | chunk_id=x) then stop.'
    """
    cleaned, removed = _HIDDEN_RE.subn("", raw)
    cleaned = " ".join(cleaned.split())
    cleaned, bracketed = _BRACKETED_ANCHOR_RE.subn(r"(\1)", cleaned)
    cleaned, unclosed = _UNCLOSED_ANCHOR_RE.subn("(", cleaned)
    cleaned, tags = _FENCE_TAG_RE.subn(r"&lt;\1&gt;", cleaned)
    cleaned, open_tags = _FENCE_TAG_OPEN_RE.subn("&lt;", cleaned)
    return SanitizedText(
        text=cleaned,
        removed_characters=removed,
        neutralized_shapes=bracketed + unclosed + tags + open_tags,
    )
