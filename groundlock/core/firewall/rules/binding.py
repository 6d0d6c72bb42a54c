"""A value or a name moved to another statement: right entry, wrong detail.

``unsupported_value`` and ``unsupported_entity`` accept a value or a name found anywhere in
what a sentence cites. But an entry holds many: ``benzene 5 ppm`` is wrong when the entry
gives benzene 0.5 ppm and H2S 5 ppm; ``reported to the site manager, Karen Hsu`` is wrong
when the entry's site manager is Elena Vasquez and Karen Hsu its issuing authority.

Each clause of a sentence that cites one entry is aligned with the evidence sentence of that
entry that shares most of its words (at least three, and most of the clause's). When that
sentence states a number with the same unit, and not the clause's, and no other evidence
sentence that aligns about as well states the clause's, the clause has swapped a detail of
the statement it restates. (Dates, identifiers, names and bare numbers are left to the
other rules: measured on the evaluation set, an answer's sentence gathers them from across
its entry too often for this to tell a swap from a summary.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.answer import LineKind, ParsedAnswer, Sentence
from groundlock.core.firewall.entities import names_in
from groundlock.core.firewall.evidence import stems, vocabulary
from groundlock.core.firewall.rule import Context, Finding
from groundlock.core.firewall.rules.support import stopwords
from groundlock.core.firewall.ruleset import Ruleset
from groundlock.core.firewall.support import support_view
from groundlock.core.firewall.values import Value, ValueIndex, index_values, values_in

__all__ = ["SwappedDetail"]

_CLAUSE_RE = re.compile(
    r";|\s[\u2014\u2013-]\s|,\s*(?:and|but|while|whereas|so)\b|\bwhile\b|\bwhereas\b"
)
_DIGITS_RE = re.compile(r"\d")


@dataclass(frozen=True)
class _Statement:
    stems: frozenset[str]
    values: ValueIndex
    kinds: frozenset[tuple[str, str | None]]
    """(kind, unit) of the values it states."""
    names: frozenset[str]


def _kind(value: Value) -> tuple[str, str | None]:
    unit = next((k[2] for k in value.keys if k[0] == "n" and isinstance(k[2], str)), None)
    return value.kind, unit


@lru_cache(maxsize=8192)
def _statement(text: str, ruleset: Ruleset) -> _Statement:
    vocab = vocabulary(ruleset)
    return _Statement(
        stems=frozenset(w for w in stems(text, stopwords(ruleset)) if not _DIGITS_RE.search(w)),
        values=index_values(text, vocab),
        kinds=frozenset(_kind(v) for v in values_in(text, vocab, evidence=True)),
        names=frozenset(f for n in names_in(text, ruleset) for f in n.forms),
    )


class SwappedDetail:
    """A value or a name the aligned evidence statement states otherwise."""

    name: ClassVar[str] = "swapped_detail"
    reason: ClassVar[ReasonCode] = ReasonCode.CONTRADICTS_EVIDENCE
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, answer: ParsedAnswer, ctx: Context) -> Iterator[Finding]:
        """One finding per sentence, naming the detail and what the evidence says."""
        for sentence in answer.sentences:
            if len(sentence.cited) != 1 or sentence.kind is not LineKind.TEXT:
                continue  # a sentence citing two entries gathers its details from both
            found = _swapped(sentence, ctx)
            if found is not None:
                message = f"answer: sentence {sentence.number}: {found}"
                yield Finding(self.name, self.reason, message, sentence.number)


def _swapped(sentence: Sentence, ctx: Context) -> str | None:
    view = support_view(sentence, ctx)
    evidence = [_statement(text, ctx.ruleset) for f in view.cited for text in f.sentences]
    if not evidence:
        return None
    stop = stopwords(ctx.ruleset)
    vocab = vocabulary(ctx.ruleset)
    share = ctx.ruleset.param("binding_share")
    for part in _CLAUSE_RE.split(sentence.text):
        said = frozenset(w for w in stems(part, stop) if not _DIGITS_RE.search(w))
        if len(said) < 3:
            continue
        overlaps = [len(said & e.stems) for e in evidence]
        best = max(overlaps)
        if best < 3 or best < share * len(said):
            continue
        top = evidence[overlaps.index(best)]
        near = [e for e, o in zip(evidence, overlaps, strict=True) if o >= best - 2]
        for value in values_in(part, vocab):
            if view.question.values.supports(value):
                continue  # the question's own value is not new
            kind = _kind(value)
            if kind[0] != "number" or kind[1] is None:
                continue  # dates, ids, names and bare numbers: a sentence gathers them widely
            if kind in top.kinds and not any(e.values.supports(value) for e in near):
                return f"states {value.surface!r} where the evidence it restates does not"
    return None
