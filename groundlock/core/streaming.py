"""R5 over an answer that is still arriving: which sentences are settled, and which passed.

Streaming keeps the firewall's promise by releasing only sentences R5 has judged. Three
pure decisions make that possible, and the stages (R4 to R6) only move their results:

* :func:`pieces_of`: an answer cut into pieces, one per sentence, that join back into the
  answer exactly. A piece runs from the end of the previous sentence to the end of its
  own (markers included), so what lies between sentences (a line break, a list marker)
  travels with the sentence after it, and the last piece runs to the end of the answer.
* :func:`settled`: of a text still growing, the pieces no later token can change. A
  sentence is settled once the text after it holds a whole word: the segmenter decides a
  boundary from at most the next word (a capital, a digit, a trailing marker), and a
  marker split across tokens (``[C`` ``0]``) is no word until its bracket closes.
* :func:`passed_prefix`: whether the answer up to a settled sentence passes every rule
  that objects to one of its sentences. Whole-answer findings wait for the whole answer;
  the final verdict is always :func:`~groundlock.core.firewall.validate_answer` on the
  complete text, exactly as ``invoke`` reaches it, and it is what the response carries.

Judging each settled prefix costs R5 once per sentence on a text that grows: quadratic in
the number of sentences, which an answer's output budget bounds (tens, not thousands).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.state import Prompted
from groundlock.contracts.validation import ValidationResult
from groundlock.core.firewall import validate_answer
from groundlock.core.firewall.parsed import parse_answer
from groundlock.policies.model import Policy

__all__ = ["Piece", "Release", "passed_prefix", "pieces_of", "settled"]

_WORD_AFTER = re.compile(r"\S\s")
"""A character followed by white space: a whole word has arrived after a sentence."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One sentence of an answer with the text between it and the sentence before."""

    number: int
    """1-based sentence number, as the firewall's findings count them."""
    text: str
    """The answer's text from the end of the previous piece to the end of this sentence."""
    end: int
    """Where the piece ends in the answer (exclusive)."""
    anchors: tuple[str, ...]
    """The sentence's well-formed anchors, in order (valid or not)."""


def pieces_of(text: str, state: Prompted, policy: Policy) -> tuple[Piece, ...]:
    """``text`` cut at its sentences' ends; the pieces join back into ``text`` exactly.

    Text after the last sentence (a citation list, trailing space) belongs to the last
    piece. An answer with no sentence has no pieces: it reaches the reader in the response
    alone.
    """
    entries = {entry.anchor: entry for entry in state.bundle.selected_evidence}
    grammar = policy.grammar.bound(state.bundle.selected_evidence)
    parsed = parse_answer(text, entries, grammar, policy.segmenter)
    pieces: list[Piece] = []
    start = position = 0
    for sentence in parsed.sentences:
        found = text.find(sentence.raw, position)
        if found < 0:  # cannot happen (a sentence is a stripped slice of a line): be whole
            return ()
        position = found + len(sentence.raw)
        pieces.append(Piece(sentence.number, text[start:position], position, sentence.anchors))
        start = position
    if pieces and start < len(text):
        last = pieces[-1]
        pieces[-1] = Piece(last.number, last.text + text[start:], len(text), last.anchors)
    return tuple(pieces)


def settled(text: str, state: Prompted, policy: Policy) -> tuple[Piece, ...]:
    """The pieces of a still-growing ``text`` that no later token can change."""
    pieces = pieces_of(text, state, policy)
    kept: list[Piece] = []
    for piece in pieces[:-1]:  # the last sentence may still grow
        if _WORD_AFTER.search(text, piece.end) is None:
            break
        kept.append(piece)
    return tuple(kept)


def passed_prefix(text: str, upto: Piece, state: Prompted, policy: Policy) -> bool:
    """Whether ``text`` up to the end of ``upto`` passes every rule about its sentences.

    The prefix is judged as a whole answer would be; a finding about the whole answer
    (no sentence) is left to the final verdict, and so is a prefix that reads as the
    refusal (a refusal streams as the response alone, never as a delta).
    """
    execution = LLMExecutionResult.uncalled(GenerationStatus.OK, text=text[: upto.end])
    result = validate_answer(state.answered(execution), policy)
    if result.validation_status is ValidationStatus.PASSED:
        return result.generation_status is GenerationStatus.OK
    if not result.findings:  # failed before any rule ran (nothing to judge): not passed
        return False
    return not any(
        finding.mode == "enforce" and finding.sentence is not None for finding in result.findings
    )


@dataclass
class Release:
    """Which sentences of one streamed answer may reach the reader, and when.

    Fed the model's text as it arrives; under a ``progressive`` policy it releases each
    settled sentence whose prefix passes (:func:`passed_prefix`), in order, and holds
    everything from the first one that does not. :meth:`finish` takes the final verdict:
    what is still to release if the answer passed, and whether what was released must be
    withdrawn (the answer failed, or its final reading cut the sentences otherwise).
    """

    state: Prompted
    policy: Policy
    progressive: bool
    text: str = ""
    released: list[Piece] = field(default_factory=list)
    holding: bool = False

    def feed(self, more: str) -> list[Piece]:
        """The pieces ``more`` text lets out (none under a buffered policy)."""
        self.text += more
        if not self.progressive or self.holding or not any(c.isspace() for c in more):
            return []  # a piece settles only when white space follows a word after it
        out: list[Piece] = []
        for piece in settled(self.text, self.state, self.policy)[len(self.released) :]:
            if not passed_prefix(self.text, piece, self.state, self.policy):
                self.holding = True  # the final verdict decides this one and the rest
                break
            self.released.append(piece)
            out.append(piece)
        return out

    def finish(self, verdict: ValidationResult) -> tuple[tuple[Piece, ...], bool]:
        """The pieces still to release, and whether the released ones are withdrawn.

        Withdrawn here means the answer passed but its final reading cut it otherwise; an
        answer that failed releases nothing more, and its failure withdraws the rest.
        """
        if (
            verdict.validation_status is not ValidationStatus.PASSED
            or verdict.generation_status is not GenerationStatus.OK
        ):
            return (), False  # nothing more; the response's failure retracts what was let out
        pieces = pieces_of(verdict.validated_answer_text, self.state, self.policy)
        done = len(self.released)
        if [p.text for p in pieces[:done]] == [p.text for p in self.released]:
            return pieces[done:], False
        return pieces, True
