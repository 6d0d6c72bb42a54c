"""Polarity and modality: a cited sentence that says the opposite of its evidence.

Each clause of the sentence is aligned with the clauses of its cited entries that share a
word with it and at least one more (:mod:`groundlock.core.firewall.polarity`). It
contradicts them when, for a shared word,

* it asserts the word (``may exceed``, ``Replace ...``) where every aligned evidence clause
  negates it (``must not exceed``), or negates it where none does;
* a modal of the other class governs it (``may be replaced`` against ``must be
  replaced``);
* it says a word whose opposite (``before``/``after``, ``required``/``optional``,
  ``no later than``/``no earlier than``) stands in the best-aligned evidence clause while the
  word itself does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.answer import ParsedAnswer, Sentence
from groundlock.core.firewall.polarity import Clause, Lexicon, clauses, evidence_clauses, lexicon
from groundlock.core.firewall.rule import Context, Finding
from groundlock.core.firewall.support import judged, support_view

__all__ = ["ContradictsEvidence"]


class ContradictsEvidence:
    """A flipped negation, a changed obligation, or an opposite word."""

    name: ClassVar[str] = "contradicts_evidence"
    reason: ClassVar[ReasonCode] = ReasonCode.CONTRADICTS_EVIDENCE
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, answer: ParsedAnswer, ctx: Context) -> Iterator[Finding]:
        """One finding per contradicting sentence, naming the word and how."""
        lex = lexicon(ctx.ruleset)
        for sentence in answer.sentences:
            if not judged(sentence):
                continue
            found = _contradiction(sentence, ctx, lex)
            if found is not None:
                message = f"answer: sentence {sentence.number}: {found}"
                yield Finding(self.name, self.reason, message, sentence.number)


def _contradiction(sentence: Sentence, ctx: Context, lex: Lexicon) -> str | None:
    view = support_view(sentence, ctx)
    evidence = [
        clause
        for facts in view.cited
        for text in facts.sentences
        for clause in evidence_clauses(text, lex)
    ]
    for clause in clauses(sentence.text, lex):
        if clause.restricted:
            continue
        aligned = [
            e
            for e in evidence
            if len(clause.stems & e.stems) >= 2 and not e.restricted  # noqa: PLR2004
        ]
        if not aligned:
            continue
        found = _polarity(clause, aligned) or _modality(clause, aligned)
        found = found or _opposite(clause, aligned, lex, evidence)
        if found is not None:
            return found
    return None


def _polarity(clause: Clause, aligned: list[Clause]) -> str | None:
    for word in clause.stems:
        holding = [e for e in aligned if word in e.stems]
        if not holding:
            continue
        if word in clause.asserted and not clause.negative:
            if all(e.negative for e in holding) and any(word in e.negated for e in holding):
                return f"asserts {word!r} where its evidence negates it"
        if word in clause.negated and not any(e.negative for e in holding):
            if any(word in e.asserted for e in holding):
                return f"negates {word!r} where its evidence asserts it"
    return None


def _modality(clause: Clause, aligned: list[Clause]) -> str | None:
    for word, kind in clause.modal.items():
        others = {e.modal[word] for e in aligned if word in e.modal}
        if (
            others
            and kind not in others
            and not any(e.negative != clause.negative for e in aligned if word in e.modal)
        ):
            return f"says {word!r} is {kind} where its evidence makes it {others.pop()}"
    return None


def _opposite(
    clause: Clause, aligned: list[Clause], lex: Lexicon, evidence: list[Clause]
) -> str | None:
    best = max(aligned, key=lambda e: len(clause.stems & e.stems))
    for word in clause.stems:
        opposites = lex.antonyms.get(word)
        if not opposites or word in best.stems:
            continue
        if opposites & best.stems and not opposites & clause.stems:
            if not any(word in e.stems for e in evidence if len(clause.stems & e.stems) >= 3):  # noqa: PLR2004
                opposite = sorted(opposites & best.stems)[0]
                return f"says {word!r} where its evidence says {opposite!r}"
    return None
