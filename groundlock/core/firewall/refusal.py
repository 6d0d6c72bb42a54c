"""How an answer refuses: exactly, in a variant of the refusal string, in other words, or not.

The exact refusal string (outer whitespace aside) is the only refusal that passes, as
NO_EVIDENCE. Everything else that refuses is ``INVALID_REFUSAL_FORMAT``: the refusal inside
other text, in another case or punctuation, its marker alone, its sentence without the
marker, a close paraphrase, or a refusal in other words (``the manual does not specify``,
``... is not given``), unless the evidence itself says it (quoting ``the cause is unknown``
is grounding) or it sits in a condition (``If shop air is not available, ...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum
from typing import TYPE_CHECKING

from groundlock._caches import memoized
from groundlock.core.firewall.lexicon import apostrophes, one_search, plain, words
from groundlock.text.fold import fold

if TYPE_CHECKING:
    from groundlock.core.firewall.parsed import ParsedAnswer, Sentence
    from groundlock.core.firewall.rule import Context
    from groundlock.policies.ruleset import Ruleset

__all__ = ["Refusal", "RefusalForm", "refusal_of"]

_REFUSAL_MARKER_RE = re.compile(r"^([A-Z][A-Z0-9_]{2,}):")
_CLAUSE_START_RE = re.compile(r"[,;:.!?\n(][^,;:.!?\n(]*$")


class RefusalForm(StrEnum):
    """Whether and how an answer refuses."""

    NONE = "none"
    EXACT = "exact"
    """Exactly the policy's refusal string: passes as NO_EVIDENCE."""
    VARIANT = "variant"
    """Refuses, but not in the exact form: ``INVALID_REFUSAL_FORMAT``."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The answer's refusal form and, for a variant, what was found."""

    form: RefusalForm
    found: str | None = None
    """For a variant: which kind (``the refusal marker``, ``a refusal in other words``)."""
    sentence: int | None = None
    """For a refusal in other words: the 1-based sentence that refuses."""

    @property
    def detected(self) -> bool:
        """Whether the answer refuses at all (the ``refusal_detected`` metric)."""
        return self.form is not RefusalForm.NONE


_NO_REFUSAL = Refusal(RefusalForm.NONE)


def _phrases(ruleset: Ruleset) -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str]]:
    patterns = tuple(re.compile(apostrophes(p)) for p in ruleset.entries("refusal"))
    # One search that rules all of them out at once, the usual case.
    union = one_search(p.pattern for p in patterns)
    return patterns, union


def _conditions(ruleset: Ruleset) -> re.Pattern[str]:
    return re.compile("|".join(ruleset.entries("refusal", "conditions")))


def refusal_of(parsed: ParsedAnswer, ctx: Context) -> Refusal:  # noqa: PLR0911  (one per form)
    """How the ``parsed`` answer refuses under ``ctx``'s policy and ruleset."""
    text = parsed.text
    stripped = text.strip()
    refusal = ctx.policy.refusal_text
    if stripped == refusal:
        return Refusal(RefusalForm.EXACT)
    answer = " ".join(words(stripped))
    wanted, marker, body = _refusal_forms(refusal)
    if not answer or not wanted:
        return _NO_REFUSAL
    padded = f" {answer} "
    if f" {wanted} " in padded:
        return Refusal(RefusalForm.VARIANT, "the refusal with other text, case or punctuation")
    if marker and marker.search(text):
        return Refusal(RefusalForm.VARIANT, "the refusal marker")
    if len(body.split()) >= 4 and f" {body} " in padded:
        return Refusal(RefusalForm.VARIANT, "the refusal sentence without its marker")
    if _close_to(answer, wanted, ctx.ruleset.param("paraphrase_ratio")):
        return Refusal(RefusalForm.VARIANT, "a close paraphrase of the refusal")
    patterns, union = ctx.ruleset.compiled("refusal.phrases", _phrases)
    if ctx.ruleset.entries("refusal", "disguised"):
        return _in_other_words(parsed, ctx)
    folded = fold(text)
    if not union.search(folded):
        return _NO_REFUSAL
    conditions = ctx.ruleset.compiled("refusal.conditions", _conditions)
    evidence = [plain(e.sanitized_text) for e in ctx.entries.values()]
    for pattern in patterns:
        for found in pattern.finditer(folded):
            phrase = plain(found.group())
            if _conditional(folded, found.start(), conditions):
                continue  # "If shop air is not available, use nitrogen": an instruction
            if not any(phrase in source for source in evidence):
                return Refusal(RefusalForm.VARIANT, "a refusal in other words")
    return _NO_REFUSAL


def _disguised(ruleset: Ruleset) -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str]]:
    """The refusal phrases and the disguised ones, each and as one search."""
    phrases, _ = ruleset.compiled("refusal.phrases", _phrases)
    disguised = (re.compile(apostrophes(p)) for p in ruleset.entries("refusal", "disguised"))
    patterns = (*phrases, *disguised)
    union = one_search(p.pattern for p in patterns)
    return patterns, union


def _in_other_words(answer: ParsedAnswer, ctx: Context) -> Refusal:
    """From ``firewall_v2``: a refusal in other words, judged sentence by sentence.

    A refusal phrase (``... is not specified``, ``the manual does not say``, ``there is no
    information about``) is a statement of the evidence, not a refusal, where the evidence
    itself says it: an entry holds the phrase, or the sentence cites an entry with a
    sentence of the same subject that says what is missing, unknown or not done.
    """
    patterns, union = ctx.ruleset.compiled("refusal.disguised", _disguised)
    conditions = ctx.ruleset.compiled("refusal.conditions", _conditions)
    evidence = [plain(e.sanitized_text) for e in ctx.entries.values()]
    for sentence in answer.sentences:
        if not union.search(sentence.folded):
            continue  # one search rules every phrase out, the usual case
        for pattern in patterns:
            for found in pattern.finditer(sentence.folded):
                if _conditional(sentence.folded, found.start(), conditions):
                    continue
                if any(plain(found.group()) in source for source in evidence):
                    continue
                if _evidence_says_so(sentence, found.group(), ctx, patterns):
                    continue
                return Refusal(RefusalForm.VARIANT, "a refusal in other words", sentence.number)
    return _NO_REFUSAL


def _evidence_says_so(
    sentence: Sentence, phrase: str, ctx: Context, patterns: tuple[re.Pattern[str], ...]
) -> bool:
    """Whether an entry ``sentence`` cites says the same gap itself.

    Of the same subject, that something is not given, not known or not determined: then
    the sentence reports it rather than refuses.
    """
    from groundlock.core.firewall.facts import facts, stems  # noqa: PLC0415  (cycle)

    stop = frozenset(ctx.ruleset.entries("stopwords"))
    subject = stems(sentence.text, stop) - stems(phrase, stop)
    for entry in sentence.cited:
        for text in facts(entry.sanitized_text, ctx.ruleset).sentences:
            shared = len(subject & stems(text, stop))
            if shared < 2 or 2 * shared < len(subject) or _DIGIT_RE.search(text):
                continue  # (a sentence that states a value states no gap)
            folded = fold(text)
            if _UNKNOWN_RE.search(folded) or any(p.search(folded) for p in patterns):
                return True
    return False


_DIGIT_RE = re.compile(r"\d")
_UNKNOWN_RE = re.compile(
    r"\b(?:unknown|undetermined|unclear|not|no|none|never|without|excluded|excludes?"
    r"|declined|absent|silent|lacks?|omits?|unspecified)\b|n't\b"
)
"""An evidence sentence that says something is missing, unknown, excluded or not done
(``has not been determined``, ``is excluded from the policy``, ``declined to reach``): of
the sentence's subject, it makes the sentence a report of the gap, not a refusal."""


def _conditional(folded: str, at: int, conditions: re.Pattern[str]) -> bool:
    """Whether the phrase at ``at`` sits in a condition (``if the cause is unknown, ...``).

    Only a clause that opens with the condition counts, from the last clause mark before
    the phrase (``The torque to use when installing it is not specified`` is a refusal).
    """
    head = folded[max(0, at - 200) : at]
    clause = _CLAUSE_START_RE.search(head)
    text = clause.group()[1:] if clause else head
    return conditions.match(text) is not None


@memoized(16)
def _refusal_forms(refusal: str) -> tuple[str, re.Pattern[str] | None, str]:
    """The refusal normalised, a search for its marker (if it has one), and its sentence."""
    wanted = " ".join(words(refusal))
    marker = _REFUSAL_MARKER_RE.match(refusal)
    if marker is None:
        return wanted, None, wanted
    marker_re = re.compile(rf"\b{re.escape(marker.group(1))}\b")
    return wanted, marker_re, " ".join(words(refusal[marker.end() :]))


@memoized(16)
def _vocabulary(refusal: str) -> frozenset[str]:
    return frozenset(refusal.split())


def _close_to(answer: str, wanted: str, ratio: float) -> bool:
    """Whether ``answer`` is a near-copy of the refusal (a word or two changed).

    Compared word by word; lengths bound the ratio, so the comparison only runs on answers
    about as long as the refusal itself.
    """
    said, refusal = answer.split(), wanted.split()
    shorter, longer = sorted((len(said), len(refusal)))
    if 2 * shorter / (shorter + longer) < ratio:
        return False
    # Words of the answer found anywhere in the refusal bound the matching words too.
    vocabulary = _vocabulary(wanted)
    shared = sum(1 for word in said if word in vocabulary)
    if 2 * shared / (len(said) + len(refusal)) < ratio:
        return False
    matcher = SequenceMatcher(None, said, refusal, autojunk=False)
    # quick_ratio (shared words, in any order) bounds ratio from above and is much cheaper.
    return matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio
