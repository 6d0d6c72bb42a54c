"""The optional support judge's pure half: what to ask it, and what its answers do.

A policy with ``support_judge`` settings adds an entailment check after the deterministic
rules. R5's stage asks the judge (:mod:`groundlock.providers.judge`) one question per cited
sentence of an answer that passed every rule: the sentence, and the texts of the entries it
cites. This module builds those questions, reads the answers, and folds them into the
verdict: a sentence judged unsupported is a ``support_judge`` finding
(``SUPPORT_JUDGE_REJECTED``, enforced or flagged as the policy says), and a judge that
errs, times out or answers outside its contract is one too (``SUPPORT_JUDGE_FAILED``, fail
closed unless the policy flags it). The judge never edits the answer either.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from groundlock._caches import memoized
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.validation import (
    FirewallFinding,
    JudgeRecord,
    JudgeVerdict,
    ValidationResult,
)
from groundlock.core.firewall.parsed import LineKind, parse_answer
from groundlock.errors import GroundlockError
from groundlock.policies.model import Policy, SupportJudgeSettings

__all__ = [
    "JudgePrompt",
    "JudgeQuestion",
    "judge_questions",
    "judged",
    "load_judge_prompt",
    "read_verdict",
]

_SEPARATOR = "===== USER MESSAGE =====\n"
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class JudgeQuestion:
    """One sentence to judge, with the texts it cites."""

    sentence: int
    text: str
    evidence: tuple[str, ...]

    def as_input(self) -> dict[str, Any]:
        """The judge runnable's input: ``{"sentence": ..., "evidence": [...]}``."""
        return {"sentence": self.text, "evidence": list(self.evidence)}


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """A frozen judge prompt: a system message and a user message with two placeholders."""

    version: str
    sha256: str
    system: str
    user: str

    def render(self, question: JudgeQuestion) -> tuple[str, str]:
        """(system, user) for ``question``; evidence entries separated by blank lines."""
        evidence = "\n\n".join(question.evidence)
        user = self.user.replace("{{evidence}}", evidence, 1)
        return self.system, user.replace("{{sentence}}", question.text, 1)


@memoized(None)
def load_judge_prompt(version: str) -> JudgePrompt:
    """Load a built-in judge prompt, refusing it if its sha256 lock disagrees.

    >>> load_judge_prompt("judge_prompt_v1").version
    'judge_prompt_v1'

    Raises:
        GroundlockError: unknown version, missing lock or placeholders, or a changed file.
    """
    folder = resources.files("groundlock.prompts")
    if not _NAME_RE.match(version):
        raise GroundlockError(f"{version!r} is not a judge prompt version")
    try:
        raw = folder.joinpath(f"{version}.txt").read_bytes()
        recorded = folder.joinpath(f"{version}.sha256").read_text(encoding="ascii").split()
    except OSError as exc:
        raise GroundlockError(f"cannot read judge prompt {version!r} and its lock") from exc
    sha256 = hashlib.sha256(raw).hexdigest()
    if not recorded or recorded[0] != sha256:
        raise GroundlockError(f"judge prompt {version!r} does not match its recorded sha256")
    system, _, user = raw.decode("utf-8").partition(_SEPARATOR)
    if not user or "{{evidence}}" not in user or "{{sentence}}" not in user:
        raise GroundlockError(f"judge prompt {version!r} lacks its user message placeholders")
    return JudgePrompt(version=version, sha256=sha256, system=system.strip(), user=user)


def judge_questions(
    result: ValidationResult, bundle: AnswerBundle, policy: Policy
) -> tuple[JudgeQuestion, ...]:
    """The questions for the judge: every cited, stating sentence of a passed OK answer."""
    if (
        result.validation_status is not ValidationStatus.PASSED
        or result.generation_status is not GenerationStatus.OK
    ):
        return ()
    ruleset = policy.ruleset
    entries = {e.anchor: e for e in bundle.selected_evidence}
    grammar = ruleset.grammar.bound(bundle.selected_evidence)
    answer = parse_answer(result.validated_answer_text, entries, grammar, ruleset.segmenter)
    return tuple(
        JudgeQuestion(s.number, s.text.strip(), tuple(e.sanitized_text for e in s.cited))
        for s in answer.sentences
        if s.cited and s.kind is LineKind.TEXT
    )


def read_verdict(output: object, settings: SupportJudgeSettings) -> tuple[bool, float]:
    """(supported, score) from a judge's output, or ``ValueError`` outside the contract.

    The contract: a mapping with ``verdict`` (``supported``/``unsupported``) or ``supported``
    (a bool), and ``score`` in [0, 1]. A supported verdict below ``min_score`` is not.
    """
    if not isinstance(output, Mapping):
        raise ValueError("the judge's output is not a mapping")  # noqa: TRY004  (a contract)
    score = output.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValueError("the judge's score is not a number in [0, 1]")
    verdict = output.get("verdict", output.get("supported"))
    if verdict in ("supported", True):
        supported = True
    elif verdict in ("unsupported", False):
        supported = False
    else:
        raise ValueError("the judge's verdict is neither supported nor unsupported")
    return supported and score >= settings.min_score, float(score)


def judged(
    result: ValidationResult,
    settings: SupportJudgeSettings,
    record: JudgeRecord,
) -> ValidationResult:
    """``result`` with the judge's record, findings and (in enforce mode) verdict applied."""
    findings = list(result.findings)
    if record.error is not None:
        mode: Literal["enforce", "flag"] = "enforce" if settings.on_error == "fail" else "flag"
        findings.append(
            FirewallFinding(
                rule="support_judge",
                reason=ReasonCode.SUPPORT_JUDGE_FAILED,
                mode=mode,
                sentence=None,
                message=f"judge: {record.error}",
            )
        )
    findings.extend(
        FirewallFinding(
            rule="support_judge",
            reason=ReasonCode.SUPPORT_JUDGE_REJECTED,
            mode=settings.mode,
            sentence=verdict.sentence,
            message=f"judge: sentence {verdict.sentence} is not supported by what it cites "
            f"(score {verdict.score:.2f})",
        )
        for verdict in record.verdicts
        if not verdict.supported
    )
    failure = next(
        (f for f in findings[len(result.findings) :] if f.mode == "enforce"),
        None,
    )
    if failure is None:
        return result.model_copy(update={"findings": tuple(findings), "judge": record})
    return result.model_copy(
        update={
            "generation_status": GenerationStatus.FAILED,
            "validation_status": ValidationStatus.FAILED,
            "failure_reason": failure.reason,
            "message": failure.message,
            "validated_answer_text": "",
            "validated_citations": (),
            "cited_ids": (),
            "findings": tuple(findings),
            "judge": record,
        }
    )


def verdicts_of(
    questions: tuple[JudgeQuestion, ...], outputs: list[object], settings: SupportJudgeSettings
) -> tuple[JudgeVerdict, ...]:
    """The verdicts of the judge's ``outputs`` (``ValueError`` if one breaks the contract)."""
    verdicts = []
    for question, output in zip(questions, outputs, strict=True):
        supported, score = read_verdict(output, settings)
        verdicts.append(JudgeVerdict(sentence=question.sentence, supported=supported, score=score))
    return tuple(verdicts)
