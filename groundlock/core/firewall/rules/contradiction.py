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

from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.polarity import Clause, Lexicon, clauses, evidence_clauses, lexicon
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import SentenceReading

__all__ = ["ContradictsEvidence"]


class ContradictsEvidence(SentenceRule):
    """A flipped negation, a changed obligation, or an opposite word."""

    name: ClassVar[str] = "contradicts_evidence"
    reason: ClassVar[ReasonCode] = ReasonCode.CONTRADICTS_EVIDENCE

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """The word and how the sentence turns it round."""
        return _contradiction(sentence, lexicon(ctx.ruleset))


def _bounds(sentence: SentenceReading, lex: Lexicon) -> str | None:
    """A value stated with the opposite bound to every cited statement of it.

    ``at most 30`` where the evidence says ``at least 30``; ``or below`` for ``or above``.
    Not in a negative sentence: ``gloves rated below 1,000 V must not be used`` states the
    evidence's ``at least 1,000 V`` the other way round.
    """
    if any(c.negative for c in clauses(sentence.text, lex)):
        return None
    cited = sentence.view.cited_values()
    for value, source, _ in sentence.values:
        if value.bound is None or source is not Source.CITED:
            continue
        stated = cited.bounds_of(value)
        opposite = "upper" if value.bound == "lower" else "lower"
        if stated and stated == {opposite}:
            return f"states {value.surface!r} as a {value.bound} bound; its evidence, as {opposite}"
    return None


def _contradiction(sentence: SentenceReading, lex: Lexicon) -> str | None:
    found = _bounds(sentence, lex)
    if found is not None:
        return found
    view = sentence.view
    evidence = [
        clause
        for facts in view.cited
        for text in facts.sentences
        for clause in evidence_clauses(text, lex)
    ]
    # A clause meets only the evidence clauses that share a stem with it, each once.
    holding: dict[str, list[int]] = {}
    for index, e in enumerate(evidence):
        for word in e.stems:
            holding.setdefault(word, []).append(index)
    for clause in clauses(sentence.text, lex):
        if clause.restricted:
            continue
        # (Only the sentence's own restriction matters: "only X may be used" says "others
        # must not be", which a negative evidence clause about the others supports.)
        shared: dict[int, int] = {}
        for word in clause.stems:
            for index in holding.get(word, ()):
                shared[index] = shared.get(index, 0) + 1
        ordered = sorted(shared.items())
        aligned = [(evidence[i], n) for i, n in ordered if n >= 2]
        # A clause of two words ("The inspection is optional") aligns on its subject alone
        # for its modality: what else could "optional" be said of?
        modal_floor = 1 if len(clause.stems) <= 2 else 2
        modal = [evidence[i] for i, n in ordered if n >= modal_floor]
        found = (_polarity(clause, aligned) if aligned else None) or _modality(clause, modal)
        if found is not None:
            return found
    return _opposite(sentence, lex)


def _polarity(clause: Clause, aligned: list[tuple[Clause, int]]) -> str | None:
    """``aligned``: each evidence clause with the number of stems it shares with ``clause``."""
    if not clause.negated and not any(e.negative for e, _ in aligned):
        return None  # it states what no aligned clause negates, and negates nothing
    size = len(clause.stems)
    for word in clause.stems:
        if clause.negative and word not in clause.negated:
            continue  # neither turn below can be taken for this word
        holding = [(e, n) for e, n in aligned if word in e.stems]
        if not holding:
            continue
        # Only the evidence clauses that say most about it: a passing mention elsewhere in
        # the entry ("the plan covers three CCPs") neither supports nor contradicts.
        best = max(n for _, n in holding)
        floor = max(min(3, size), best - 1)
        holding = [(e, n) for e, n in holding if n >= floor]
        if not holding:
            continue
        # Stating what every aligned evidence clause negates, about the same subject: most
        # of the clause's words are the evidence clause's too.
        same_subject = any(2 * n >= size for _, n in holding)
        if not clause.negative and same_subject and all(e.negative for e, _ in holding):
            stated = word not in clause.gerunds and any(word in e.negated for e, _ in holding)
            if stated or any(_none_but_stated(clause, e, word) for e, _ in holding):
                return f"states {word!r} where its evidence negates it"
        # An evidence sentence's first word is taken for an order only against an order:
        # "Punitive damages are denied" opens with no verb.
        asserted = any(
            word in e.asserted or (clause.negated_order and word == e.order) for e, _ in holding
        )
        if word in clause.negated and not any(e.negative for e, _ in holding) and asserted:
            return f"negates {word!r} where its evidence asserts it"
    return None


def _none_but_stated(clause: Clause, evidence: Clause, noun: str) -> bool:
    """``a resample was taken`` against ``no resample was taken``.

    The noun the evidence says *no* of is the clause's subject, and both assert the same
    verb of it.
    """
    if noun not in evidence.none_of:
        return False
    shared = clause.asserted & evidence.asserted
    where = clause.positions.get(noun)
    return where is not None and any(clause.positions.get(v, -1) > where for v in shared)


def _modality(clause: Clause, aligned: list[Clause]) -> str | None:
    for word, label in clause.modal.items():
        others = {e.modal[word] for e in aligned if word in e.modal}
        if clause.negative and {label, *others} == {"permission", "prohibition"}:
            continue  # "may be worn for no more than 4 hours" is "must not ... more than 4"
        if others and label not in others:
            return f"says {word!r} is a matter of {label} where its evidence says {others.pop()}"
    return None


def _opposite(sentence: SentenceReading, lex: Lexicon) -> str | None:
    """An opposite word, aligned sentence to sentence (a clause is too short to align)."""
    view = sentence.view
    said = _sentence_stems(sentence.text, lex)
    evidence = [_sentence_stems(text, lex) for f in view.cited for text in f.sentences]
    if not said or not evidence:
        return None
    overlaps = [len(said & e) for e in evidence]
    best = max(overlaps)
    if best < 4 or best < 0.5 * len(said):
        return None
    top = evidence[overlaps.index(best)]
    top_text = [text for f in view.cited for text in f.sentences][overlaps.index(best)]
    negated = frozenset().union(
        *(c.negated for c in clauses(sentence.text, lex)),
        *(c.negated for c in evidence_clauses(top_text, lex)),
    )
    near = [e for e, o in zip(evidence, overlaps, strict=True) if o >= best - 1]
    for word in said - top:
        opposites = lex.antonyms.get(word, frozenset())
        found = opposites & top
        if found and (word in negated or found & negated):
            continue  # "Do not open the valve" says the evidence's "keep the valve closed"
        if "polarity_v3" in lex.features and any(
            (lex.antonyms.get(f, frozenset()) - {word}) & top for f in found
        ):
            # "As the altitude increases, the pressure decreases" for "the pressure is
            # reduced": the evidence sentence holds the opposite and another word of the
            # answer's side (decreases, like reduced, is the opposite of increases), so it
            # relates two things, and the answer's word agrees with one of them.
            continue
        if found and not opposites & said and not any(word in e for e in near):
            return f"says {word!r} where its evidence says {sorted(found)[0]!r}"
    return None


def _sentence_stems(text: str, lex: Lexicon) -> frozenset[str]:
    return frozenset().union(*(c.stems for c in evidence_clauses(text, lex)))
