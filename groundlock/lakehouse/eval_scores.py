"""003's relevance and compliance scores of one evaluated answer (pure: no I/O, no LangChain).

``003`` asks its evaluation log for "groundedness, relevance, and compliance scores".
Groundedness is R5's (the firewall's verdict and support coverage); this module defines the
other two so that they are *deterministic*: the same answer and gold give the same numbers
on every machine and in every run, and a difference between two runs is the answer's.

**Content words** (:func:`content_words`), the unit both relevance scores count:

1. every bracketed span of at most 300 characters on one line is removed (``[C0]``,
   ``[CIT-01]``, ``[PenalCode_420_0]``, ``[Source: manual.pdf, p.3]``: the citation
   markers of every preset): a marker says where a claim comes from, not what it says;
2. the text is NFKC-normalised and case-folded (:func:`~groundlock.text.fold.caseless`:
   ``Nm`` and ``NM``, ``ß`` and ``ss`` are one word);
3. it is cut into tokens by :data:`TOKEN_PATTERN`: a number with its thousands or decimal
   separators kept (``1,250``, ``2.5``: ``1,250 Nm`` is not ``250 Nm``), else a maximal run
   of letters and digits (``tug7``; underscores and every other character separate);
4. the words of :data:`STOPWORDS` (articles, pronouns, auxiliaries, prepositions,
   conjunctions) are dropped; negations (``no``, ``not``, ``never``) are kept, since they
   change what an answer says. No stemming: ``replaced`` and ``replace`` are two words.

**Relevance** of an answer to its gold answer, over content words in order:

- ``relevance_f1``: token-level F1 as SQuAD computes it: the multiset overlap ``n`` of the
  two bags of words, precision ``n / |answer|``, recall ``n / |gold|``, ``2PR / (P + R)``;
- ``relevance_rouge_l``: ROUGE-L, the longest common subsequence ``l`` of the two word
  sequences, ``P = l / |answer|``, ``R = l / |gold|``, F-measure with beta = 1 (as the
  ``rouge-score`` package reports ``fmeasure``). Unlike F1 it rewards words in the gold's
  order.

Both are None when there is nothing to compare against: an item with no gold answer, an
unanswerable item (its right response is a refusal, which ``compliance`` and
``refusal_correct`` score), or a gold answer with no content word. A response that is not
an answer (``NO_EVIDENCE``, ``FAILED``) answers nothing of the gold: 0.0.

**Compliance** (:func:`compliance`), from R5's verdict and the citation checks, one of:

- ``FAILED`` (the firewall rejected the model's answer, or no verdict was reached): 0.0;
- ``NO_EVIDENCE``: 1.0. The policy's exact refusal is what ``003`` asks for when the
  context is insufficient; a refusal of an answerable item is a wrong *decision*
  (``refusal_correct`` false, relevance 0.0), not a breach of the rules;
- ``OK``: the verdict passed, and the share of the cited chunks whose *source* (the
  document: a chunk id up to its last ``#``, the whole id if it has none) is a source of
  the gold's expected citations. Citing another paragraph of an expected document is
  compliant (precision counts that error); citing a document the gold does not name is
  not. With no expected citations the share is 0.0 for an unanswerable item (it answered
  what the corpus does not answer) and 1.0 for an answerable one (every citation is a
  retrieved id: R5 checked that). An OK answer citing nothing scores 0.0 when sources
  are expected.

:data:`SCORING_VERSION` names these definitions; each row records it, so a later change
of definitions is a new version and never rescores old rows silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from groundlock.text.fold import caseless

__all__ = [
    "SCORING_VERSION",
    "STOPWORDS",
    "TOKEN_PATTERN",
    "compliance",
    "content_words",
    "lcs_length",
    "relevance",
    "rouge_l",
    "source_of",
    "token_f1",
]

SCORING_VERSION = "eval_scores_v1"
"""The definitions of this module, recorded in each evaluation row."""

TOKEN_PATTERN = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+")
"""A number with its separators, else a run of letters and digits."""

_MARKER = re.compile(r"\[[^\[\]\n]{0,300}\]")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just may me might more most must my myself nor of off on once
    only or other ought our ours ourselves out over own same shall she should so some such
    than that the their theirs them themselves then there these they this those through to
    too under until up upon very was we were what when where which while who whom why will
    with would you your yours yourself yourselves
    """.split()
)
"""English function words; ``no``, ``not`` and ``never`` are deliberately absent."""


def content_words(text: str) -> list[str]:
    """The content words of ``text``, in order (see the module doc for each step).

    >>> content_words("The filter is replaced every 500 hours [C0].")
    ['filter', 'replaced', 'every', '500', 'hours']
    >>> content_words("Torque: 1,250 Nm [Source: crane.md, p.2]")
    ['torque', '1,250', 'nm']
    """
    unmarked = _MARKER.sub(" ", text)
    folded = caseless(unicodedata.normalize("NFKC", unmarked))
    return [word for word in TOKEN_PATTERN.findall(folded) if word not in STOPWORDS]


def _f_measure(overlap: int, answer: int, gold: int) -> float:
    if overlap == 0:
        return 0.0
    precision, recall = overlap / answer, overlap / gold
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD's token F1 of two word lists (bags: a repeated word counts as often as shared).

    >>> token_f1(["oil", "every", "250", "hours"], ["every", "250", "operating", "hours"])
    0.75
    """
    if not answer or not gold:
        return 0.0
    overlap = sum((Counter(answer) & Counter(gold)).values())
    return _f_measure(overlap, len(answer), len(gold))


def lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """The length of the longest common subsequence of two word lists.

    Dynamic programming over the shorter list's row: ``O(len(first) * len(second))`` time,
    ``O(min(...))`` memory.
    """
    if len(second) > len(first):
        first, second = second, first
    row = [0] * (len(second) + 1)
    for word in first:
        diagonal = 0
        for j, other in enumerate(second, start=1):
            above = row[j]
            row[j] = diagonal + 1 if word == other else max(row[j - 1], above)
            diagonal = above
    return row[-1]


def rouge_l(answer: Sequence[str], gold: Sequence[str]) -> float:
    """ROUGE-L's F-measure (beta = 1) of two word lists.

    >>> rouge_l(["a", "b", "c"], ["a", "c", "b"])  # LCS 2 of 3 and 3
    0.6666666666666666
    """
    if not answer or not gold:
        return 0.0
    return _f_measure(lcs_length(answer, gold), len(answer), len(gold))


def relevance(
    answer: str, gold_answer: str | None, *, status: str, answerable: bool
) -> tuple[float | None, float | None]:
    """``(relevance_f1, relevance_rouge_l)`` of one response (None: nothing to compare)."""
    if gold_answer is None or not answerable:
        return None, None
    gold = content_words(gold_answer)
    if not gold:
        return None, None
    words = content_words(answer) if status == "OK" else []
    return token_f1(words, gold), rouge_l(words, gold)


def source_of(chunk_id: str) -> str:
    """The document a chunk id names: up to its last ``#`` (the indexer's ``doc#n``)."""
    return chunk_id.rsplit("#", 1)[0] if "#" in chunk_id else chunk_id


def compliance(
    status: str, cited: Sequence[str], expected: Sequence[str], *, answerable: bool
) -> float:
    """The compliance score of one response (see the module doc for the rule)."""
    if status == "NO_EVIDENCE":
        return 1.0
    if status != "OK":
        return 0.0
    sources = {source_of(chunk) for chunk in expected}
    if not sources:
        return 1.0 if answerable else 0.0
    if not cited:
        return 0.0
    return sum(source_of(chunk) in sources for chunk in cited) / len(cited)
