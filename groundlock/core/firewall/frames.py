"""Attribution frames: the words of a sentence that point at the evidence it states.

Real models open (or close) many a sentence with a frame: ``Based on the given passages,
...``, ``According to the provided documents, ...``, ``The context states that ...``,
``..., as the manual notes.`` Such a frame is not commentary about the system; it says where
the rest comes from, which the sentence's anchor says too. Under ``firewall_v3``'s
``frames`` feature the frame is blanked (replaced by spaces, so positions hold) before the
rules read the sentence: the rest is judged as if it stood alone, by every rule. A frame that
claims another source (``Based on general knowledge``, ``In my experience``) is not blanked:
it is meta commentary (``meta.patterns``). A partial refusal (``The passages do not say how
much it costs``) is no frame either: the refusal rule judges it.

The frames are the ruleset's (``frames.patterns``): a leading frame up to its comma or
``that``, and a trailing one after the sentence's last comma. Pure: no I/O.
"""

from __future__ import annotations

import re

from groundlock.core.firewall.lexicon import apostrophes
from groundlock.policies.ruleset import Ruleset
from groundlock.text.fold import fold

__all__ = ["without_frames"]


def _frames(ruleset: Ruleset) -> re.Pattern[str] | None:
    nouns = "".join(ruleset.entries("frames", "nouns"))
    patterns = [
        apostrophes(p.replace("{nouns}", f"(?:{nouns})"))
        for section in ("leading", "trailing")
        for p in ruleset.entries("frames", section)
    ]
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def without_frames(text: str, ruleset: Ruleset) -> str:
    """``text`` with its attribution frames blanked (itself where it has none)."""
    frames = ruleset.compiled("frames", _frames)
    if frames is None:
        return text
    folded = fold(text)
    spans = [m.span() for m in frames.finditer(folded)]
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)
