r"""Case folding for patterns written in lower-case ASCII: exactly what ``re.IGNORECASE`` sees.

The validator's and the unsafe-output check's patterns are lower-case ASCII. Searching
``fold(text)`` with them, without ``re.I``, is twice as fast as searching ``text`` with
``re.I``, and must match exactly the same: an answer that slips past the firewall because
of case is a defect. ``str.casefold`` is not that: it leaves the dotless i (U+0131) alone
(which ``re.I`` matches to ``i``), splits U+0130 into ``i`` and a combining dot, and turns U+0345
into a Greek letter, which moves word boundaries. So the fold here is a one-to-one
character map: ``A``-``Z`` to ``a``-``z``, and the only four other characters that
``re.I`` matches to an ASCII letter (U+0130 and U+0131 to ``i``, the long s to ``s``, the
Kelvin sign to ``k``). Every one of them is a word character before and after, and lengths do not
change, so ``\b``, ``\w`` and ``\s`` mean the same on both sides. A test checks the map
against ``re.I`` over every code point.
"""

from __future__ import annotations

__all__ = ["caseless", "fold"]

_RE_I_EXTRAS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
_FOLD = str.maketrans(
    {**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}, **_RE_I_EXTRAS}
)


def fold(text: str) -> str:
    r"""``text`` with every character ``re.I`` equates with an ASCII letter made that letter.

    >>> fold("As an AI, I'm \u0130gnoring the \u212aelvin sign")
    "as an ai, i'm ignoring the kelvin sign"
    """
    if text.isascii():
        return text.lower()  # the same map, at C speed
    return text.translate(_FOLD)


def caseless(text: str) -> str:
    """``text`` in the form two texts are compared in, case aside: ``fold``, then casefold.

    A phrase found by a folded pattern and the evidence it is looked up in must be reduced
    the same way, or a faithful quote of ``İS NOT SPECİFİED`` would not be found in its own
    source. Folding first makes U+0130 and U+0131 plain ``i``; casefold then equates the
    rest of Unicode (``ß`` and ``ss``, ``É`` and ``é``).

    >>> caseless("\u0130S NOT SPEC\u0130F\u0130ED") == caseless("is not specified")
    True
    """
    return fold(text).casefold()
