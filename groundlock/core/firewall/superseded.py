"""Values an evidence text marks as replaced, cancelled or wrong (``firewall_v3``).

``Torque the bowl to 38 Nm, not 45 Nm as shown in Rev. A``; ``the interval was reduced from
600 to 400 hours``; ``this bulletin supersedes the 45 Nm torque``; ``Revision A (dated 5
January 2024) is cancelled``. The old value is in the text, so the value rule finds it; but
the text says it no longer holds, so it supports nothing. The marks are the ruleset's
(``superseded.patterns``): each pattern's ``old`` group is the span that holds the old
value. A value of an old span that the text also states outside every old span is current.
Pure: no I/O.
"""

from __future__ import annotations

import re

from groundlock.core.firewall.lexicon import apostrophes
from groundlock.policies.ruleset import Ruleset
from groundlock.text.fold import fold

__all__ = ["old_spans", "reports_history"]


def _marks(ruleset: Ruleset) -> tuple[re.Pattern[str], ...]:
    # Each mark is searched on its own: in one alternation a general mark matching at a
    # position ("supersedes rev") would hide a specific one starting there too.
    return tuple(
        re.compile(apostrophes(p.replace("{t}", _CLAUSE_CHAR)))
        for p in ruleset.entries("superseded", "marks")
    )


_CLAUSE_CHAR = r"(?:[^,;.:()\n\t]|(?<=\d)[,:](?=\d)|\.(?!\s*$))"
"""``{t}`` in ``superseded.patterns``: a character of a clause, which a tab (a table's cell)
or a colon ends too (a number's comma or colon is part of it: ``1,800``, ``14:30``; marks
are read sentence by sentence, so a full stop inside one is an abbreviation's or a number's:
``Rev. A``, ``0.25``)."""


def _history(ruleset: Ruleset) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The history words read near a value, and those read anywhere in its sentence."""

    def union(section: str) -> re.Pattern[str] | None:
        patterns = [apostrophes(p) for p in ruleset.entries("superseded", section)]
        return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

    return union("history"), union("history_anywhere")


def _gate(ruleset: Ruleset) -> re.Pattern[str] | None:
    patterns = ruleset.entries("superseded", "gate")
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _back(ruleset: Ruleset) -> re.Pattern[str] | None:
    patterns = [apostrophes(p) for p in ruleset.entries("superseded", "back")]
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def old_spans(sentences: tuple[str, ...], ruleset: Ruleset) -> list[tuple[int, int]]:
    """The spans that hold a value the text marks as no longer valid.

    Read sentence by sentence (a mark reaches no further than its sentence); the spans are
    offsets into the sentences joined with one space, as :class:`Facts` joins them. A mark
    that points back (``that figure is outdated``) makes old what precedes it in its
    sentence, or the sentence before when it opens its own.
    """
    marks = ruleset.compiled("superseded.marks", _marks)
    back = ruleset.compiled("superseded.back", _back)
    gate = ruleset.compiled("superseded.gate", _gate)
    spans: list[tuple[int, int]] = []
    offset = previous = 0
    for sentence in sentences:
        folded = fold(sentence)
        if gate is not None and gate.search(folded) is None:
            previous, offset = offset, offset + len(sentence) + 1
            continue
        if any(c.isdigit() for c in sentence):
            for mark in marks:
                for found in mark.finditer(folded):
                    if any(c.isdigit() for c in found["old"]):
                        start, end = found.span("old")
                        spans.append((offset + start, offset + end))
        for found in back.finditer(folded) if back is not None else ():
            if folded[: found.start()].strip():
                spans.append((offset, offset + found.start()))
            elif offset:
                spans.append((previous, offset - 1))
        previous, offset = offset, offset + len(sentence) + 1
    return spans


def reports_history(text: str, at: int, ruleset: Ruleset) -> bool:
    """Whether a sentence reports a change around its value at ``at``: history, no claim.

    ``was reduced from 600 to 400 hours``, ``38 Nm, not the superseded 45 Nm``, ``before
    2022 it was 324 m``: the change is named within a few words of the value (a history word
    elsewhere, ``torque the previously cleaned bowl to 45 Nm``, says nothing of it).
    """
    near, anywhere = ruleset.compiled("superseded.history", _history)
    folded = fold(text)
    if anywhere is not None and anywhere.search(folded) is not None:
        return True
    start = max(0, at - _NEAR) if at >= 0 else 0
    end = at + _NEAR if at >= 0 else len(text)
    return near is not None and near.search(folded, start, end) is not None


_NEAR = 28
"""How far from a value (in characters, either side) a history word counts for it."""
