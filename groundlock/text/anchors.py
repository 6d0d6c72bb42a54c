"""The ``[C<n>]`` anchor grammar: what a citation is, and what only looks like one.

A citation is exactly ``[C<n>]``: an ASCII square bracket, a capital C, a decimal number
without leading zeros, a closing square bracket. Anything a reader (or a client's parser)
could take for an anchor but that is not exactly that shape is *malformed*: ``[c0]``,
``(C0)``, ``[C-1]``, ``[C 0]``, ``[C01]``, ``[C0, C1]``, ``[C0-C2]``, ``【C0】``, the fullwidth
and Cyrillic look-alikes of the brackets and of C, digits of other scripts, ``C0]`` without its
opening bracket, or the template's own ``[C<n>]`` echoed back. The validator never
resolves a malformed anchor to the entry it probably meant: it rejects the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ANCHOR_RE", "AnchorScan", "scan_anchors", "without_anchors"]

ANCHOR_RE = re.compile(r"\[C(0|[1-9][0-9]*)\]")
"""Exactly one well-formed anchor; group 1 is its number."""

# Brackets a reader takes for an anchor's: square and its look-alikes, round, curly, angle.
_OPEN = re.escape(
    "[\uff3b\u3010\u3016\u3014\u27e6\u301a\u2772\u2045\ufe5d(\uff08{\uff5b<\uff1c\u3008\u300a"
)
_SQUARE_CLOSE = re.escape("]\uff3d\u3011\u3017\u3015\u27e7\u301b\u2773\u2046\ufe5e")
_CLOSE = _SQUARE_CLOSE + re.escape(")\uff09}\uff5d>\uff1e\u3009\u300b")
# C and its look-alikes (Cyrillic, fullwidth, Roman numeral, Greek lunate sigma).
_C = "Cc\u0421\u0441\uff23\uff43\u216d\u217d\u03f9\u03f2"
# An opening bracket, C, optional spacing or a sign, then a digit of any script or the
# template's placeholder (``[C<n>]``, ``[Cn]``).
_START = rf"[{_OPEN}]\s*[{_C}][\s\-+_#:]*(?:\d|<|n\s*[{_CLOSE}])"
_GROUP_RE = re.compile(rf"{_START}[^{_OPEN}{_CLOSE}\n]{{0,40}}[{_CLOSE}]?")
"""One bracketed anchor-like group, ``[C0, C1]`` included, counted once."""
_STRAY_RE = re.compile(rf"[{_C}](?<![\w{_OPEN}][{_C}])\s*\d+\s*[{_SQUARE_CLOSE}]")
"""``C0]``: an anchor that lost its opening bracket (a C not preceded by a word character or
an opening bracket). The C comes first so the regex engine can skip to candidate Cs."""


@dataclass(frozen=True, slots=True)
class AnchorScan:
    """Every anchor in a text: well-formed ones in order, and the malformed shapes."""

    anchors: tuple[str, ...]
    """Well-formed anchors as written, without brackets (``"C0"``), in order, repeats kept."""
    malformed: int
    """How many anchor-like tokens are not well-formed."""


def scan_anchors(text: str) -> AnchorScan:
    """Find the anchors of ``text``; a valid anchor never also counts as malformed.

    >>> scan_anchors("Torque to 45 Nm [C0][C2], not (C1) or [C0, C1].")
    AnchorScan(anchors=('C0', 'C2'), malformed=2)
    """
    anchors = tuple(f"C{number}" for number in ANCHOR_RE.findall(text))
    masked = ANCHOR_RE.sub(" ", text) if anchors else text
    groups = len(_GROUP_RE.findall(masked))
    if groups:
        masked = _GROUP_RE.sub(" ", masked)
    return AnchorScan(anchors=anchors, malformed=groups + len(_STRAY_RE.findall(masked)))


def without_anchors(text: str) -> str:
    """``text`` with every anchor and anchor-like token blanked out.

    What is left is what a sentence says: ``"[c0]"`` alone says nothing, so it is no
    sentence that needs a citation (it is reported as malformed instead).

    >>> without_anchors("Torque to 45 Nm [C0] (C1).")
    'Torque to 45 Nm    .'
    """
    return _STRAY_RE.sub(" ", _GROUP_RE.sub(" ", ANCHOR_RE.sub(" ", text)))
