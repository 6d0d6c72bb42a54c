"""Grounding metrics: computed in full for every validated answer, whatever the verdict.

The counts of ``000`` R5 (citations, uncited sentences, invalid and malformed anchors, the
refusal flag, the length-ratio flag, suspicious new ids) are separate from the verdict:
an auditor reads them on passed and failed answers alike.
"""

from __future__ import annotations

import re

from groundlock.contracts.validation import GroundingMetrics
from groundlock.core.firewall.lexicon import plain
from groundlock.core.firewall.parsed import Sentence
from groundlock.core.firewall.reading import Reading
from groundlock.core.firewall.refusal import RefusalForm
from groundlock.core.firewall.rule import Context
from groundlock.text.fold import caseless

__all__ = ["grounding_metrics"]

_ID_TOKEN_RE = re.compile(r"[^\W_](?:[\w./:,\-]*[^\W_])?")


def grounding_metrics(reading: Reading, ctx: Context) -> GroundingMetrics:
    """The metrics of the answer ``reading`` reads; all zero for an exact refusal."""
    answer = reading.answer
    if reading.refusal.form is RefusalForm.EXACT:
        return GroundingMetrics.zero().model_copy(update={"refusal_detected": True})
    anchors = answer.scan.anchors
    entries = ctx.entries
    evidence_chars = sum(len(e.sanitized_text) for e in entries.values())
    limit = ctx.ruleset.param("length_ratio_limit")
    return GroundingMetrics(
        sentence_count=len(answer.sentences),
        citation_count=sum(1 for a in anchors if a in entries),
        uncited_sentence_count=sum(1 for s in answer.sentences if not s.cited),
        invalid_anchor_count=sum(1 for a in anchors if a not in entries),
        malformed_anchor_count=answer.scan.malformed,
        refusal_detected=reading.refusal.detected,
        length_ratio_flag=bool(evidence_chars) and len(answer.text) > limit * evidence_chars,
        suspicious_new_ids=_suspicious_ids(answer.sentences),
        support_coverage=_coverage(reading, ctx),
    )


def _coverage(reading: Reading, ctx: Context) -> tuple[float, ...]:
    """Per stating sentence, the share of its words in what it cites.

    Measured by the rulesets that have the ``support_coverage`` rule.
    """
    if "support_coverage" not in ctx.ruleset.rules:
        return ()
    return tuple(round(s.coverage, 4) for s in reading.sentences)


def _id_like(token: str) -> bool:
    """Numbers, codes and acronyms: tokens with a digit, or two or more capitals only."""
    if token.isalpha():  # (no character is both a letter and a digit)
        return len(token) > 1 and token.isupper()
    return any(map(str.isdigit, token))


def _suspicious_ids(sentences: tuple[Sentence, ...]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for sentence in sentences:
        # (plain: an id-like token holds no apostrophe, so straightening them changes no
        # match, and the evidence is cached once, not twice.)
        sources = [plain(e.sanitized_text) for e in sentence.cited]
        for token in _ID_TOKEN_RE.findall(sentence.text):
            if not _id_like(token) or token in found:
                continue
            folded = caseless(token)
            if not any(_bounded(folded, source) for source in sources):
                found[token] = None
    return tuple(found)


def _bounded(token: str, text: str) -> bool:
    if token not in text:
        return False
    return re.search(rf"(?<![^\W_]){re.escape(token)}(?![^\W_])", text) is not None
