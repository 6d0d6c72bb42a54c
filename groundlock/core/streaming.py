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

_END_MARK = re.compile(r"[.!?;:\n]|[^\x00-\x7f]")
"""A character that may end a sentence (any non-ASCII one too: the segmenter knows many)."""

MAX_EARLY_SENTENCES = 24
"""Sentences a progressive stream judges one by one; the rest wait for the verdict.

Each early sentence costs R5 on the text so far, so early release is quadratic in the
answer's sentences; past this many (or ``MAX_EARLY_CHARS``) a stream holds the rest."""
MAX_EARLY_CHARS = 8_000
"""Text a progressive stream judges prefix by prefix (about 2,000 tokens)."""

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
    """Whether ``text`` up to the end of ``upto`` passes R5 as a whole answer would.

    Every enforced finding holds the sentence back, those about the whole answer too: a
    malformed marker, an unknown anchor, unsafe output or the prompt's own rules repeated
    are findings about no one sentence, and each is a reason the text must not reach a
    reader. A prefix that reads as the refusal is held too (a refusal streams as the
    response alone). What is held goes out at the end, if the whole answer passes.
    """
    execution = LLMExecutionResult.uncalled(GenerationStatus.OK, text=text[: upto.end])
    result = validate_answer(state.answered(execution), policy)
    return (
        result.validation_status is ValidationStatus.PASSED
        and result.generation_status is GenerationStatus.OK
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
        done = self.released[-1].end if self.released else 0
        if _END_MARK.search(self.text, done) is None:
            return []  # no sentence can have ended since the last one went out
        if len(self.released) >= MAX_EARLY_SENTENCES or len(self.text) > MAX_EARLY_CHARS:
            self.holding = True  # a long answer: the rest goes out with the verdict
            return []
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

        An answer that failed releases nothing more (its failure withdraws what went out).
        One that passed releases the rest of its text, cut at its sentences' ends, so the
        deltas always join into the answer: what went out is a prefix of the text, and
        the answer passed as a whole. (When the final reading cuts a sentence otherwise
        than the growing text did, say a quotation closed later, a released piece may end
        where the final reading sees no end; nothing is withdrawn, since all of it passed.)
        The second value is kept for a reading that would need to withdraw; it is False.
        """
        if (
            verdict.validation_status is not ValidationStatus.PASSED
            or verdict.generation_status is not GenerationStatus.OK
        ):
            return (), False
        answer = verdict.validated_answer_text
        done = self.released[-1].end if self.released else 0
        if answer[:done] != "".join(piece.text for piece in self.released):
            return pieces_of(answer, self.state, self.policy), True  # cannot happen: whole
        rest: list[Piece] = []
        for piece in pieces_of(answer, self.state, self.policy):
            if piece.end <= done:
                continue
            start = piece.end - len(piece.text)
            text = piece.text if start >= done else answer[done : piece.end]
            rest.append(Piece(piece.number, text, piece.end, piece.anchors))
        if not rest and done < len(answer):  # trailing text alone (a citation list)
            last = self.released[-1]
            rest.append(Piece(last.number, answer[done:], len(answer), ()))
        return tuple(rest), False
