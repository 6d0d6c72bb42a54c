"""R5, the validator firewall: accept the model's text as it is, or reject it. Never edit it.

The answer is parsed once (:mod:`~groundlock.core.firewall.parsed`) with the citation
grammar and segmentation of the policy's firewall ruleset
(:mod:`~groundlock.policies.ruleset`) into the typed reading every rule shares
(:mod:`~groundlock.core.firewall.reading`), then every rule of the ruleset's table runs over
it (:mod:`~groundlock.core.firewall.rules`). Every finding is recorded with the mode the
policy gives its rule; the first *enforced* finding in table order names ``failure_reason``
and the answer is withheld, while flagged findings only travel to the audit trail. Every
grounding metric is computed regardless (:mod:`~groundlock.core.firewall.metrics`).

An answer that is exactly the policy's refusal string is judged only by the rules that
declare they judge refusals (truncation, emptiness, unsafe output) and passes as
NO_EVIDENCE.

Pure logic: no LangChain, no network.
"""

from __future__ import annotations

from groundlock.contracts.enums import BuildStatus, GenerationStatus, ValidationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Answered, Judged, Outcome
from groundlock.contracts.validation import FirewallFinding, GroundingMetrics, ValidationResult
from groundlock.core.firewall.metrics import grounding_metrics
from groundlock.core.firewall.naming import CitationNames, citation_names
from groundlock.core.firewall.parsed import parse_answer
from groundlock.core.firewall.reading import Reading
from groundlock.core.firewall.refusal import RefusalForm
from groundlock.core.firewall.registry import rules_of
from groundlock.core.firewall.rule import Context
from groundlock.policies.model import Policy
from groundlock.policies.ruleset import Ruleset

__all__ = [
    "failed_validation",
    "findings_of",
    "upstream_failure",
    "validate_answer",
    "verdict_problem",
]


def validate_answer(state: Answered, policy: Policy) -> ValidationResult:
    """The verdict on ``state``'s answer under ``policy`` and its firewall ruleset.

    A FAILED request passes its reason through unvalidated (there is no answer to judge);
    a NO_EVIDENCE one is validated like any answer, so its refusal must be exact.
    """
    execution = state.execution
    if state.outcome.status is GenerationStatus.FAILED:
        return upstream_failure(state)
    ruleset = policy.ruleset
    ctx = Context(
        execution=execution,
        bundle=state.bundle,
        policy=policy,
        ruleset=ruleset,
        entries={e.anchor: e for e in state.bundle.selected_evidence},
        request_id=state.request_id,
    )
    grammar = ruleset.grammar.bound(state.bundle.selected_evidence)
    answer = parse_answer(execution.raw_model_text, ctx.entries, grammar, ruleset.segmenter)
    reading = Reading(answer, ctx)
    return _verdict(reading, ctx, findings_of(reading, ctx))


def verdict_problem(state: Judged, policy: Policy) -> str | None:
    """Why a verdict that arrived as data may not stand, or None if R5 reaches it again.

    Every field of the verdict must be what :func:`validate_answer` gives on the state's
    own answer: status, reason, text, citations, findings and metrics, so nothing forged
    reaches a reader or the audit trail. A verdict of a policy with a support judge cannot
    be reached again without the judge, so one that lets an answer through is refused: send
    the answered state to R5 instead.
    """
    verdict = state.validation
    if policy.support_judge is not None:
        if verdict.validation_status is not ValidationStatus.FAILED:
            return "validation: a judged policy's verdict is only reached by R5 with its judge"
        verdict = verdict.model_copy(update={"judge": None})
    # The state as R5 received it: before a verdict an answered prompt was OK (a FAILED
    # state is never re-checked), and a refusal for want of evidence was NO_EVIDENCE.
    before = Outcome.ok() if state.prompt.build_status is BuildStatus.OK else state.outcome
    answered = state.carried_into(Answered, outcome=before)
    if validate_answer(answered, policy) != verdict:
        return "validation: not the verdict R5 reaches on this answer"
    return None


def findings_of(reading: Reading, ctx: Context) -> tuple[FirewallFinding, ...]:
    """Every finding of every rule of the ruleset on the answer ``reading`` reads, in order."""
    exact = reading.refusal.form is RefusalForm.EXACT
    modes = ctx.policy.firewall_modes
    return tuple(
        FirewallFinding(
            rule=finding.rule,
            reason=finding.reason,
            mode=ctx.ruleset.mode_of(rule.name, modes),
            sentence=finding.sentence,
            message=finding.message,
        )
        for rule in rules_of(ctx.ruleset)
        if rule.judges_exact_refusal or not exact
        for finding in rule.check(reading, ctx)
    )


def _verdict(
    reading: Reading, ctx: Context, findings: tuple[FirewallFinding, ...]
) -> ValidationResult:
    metrics = grounding_metrics(reading, ctx)
    failure = next((f for f in findings if f.mode == "enforce"), None)
    answer = reading.answer
    exact = reading.refusal.form is RefusalForm.EXACT
    citations = () if exact else tuple(dict.fromkeys(answer.used_anchors))
    names = citation_names(answer, citations if failure is None else (), ctx)
    if failure is not None:
        return failed_validation(
            ctx.request_id,
            failure.reason,
            failure.message,
            metrics,
            ruleset=ctx.ruleset,
            findings=findings,
            names=names,
        )
    status = GenerationStatus.NO_EVIDENCE if exact else GenerationStatus.OK
    return ValidationResult(
        request_id=ctx.request_id,
        generation_status=status,
        validation_status=ValidationStatus.PASSED,
        failure_reason=None,
        message=None,
        validated_answer_text=answer.text,
        validated_citations=citations,
        grounding_metrics=metrics,
        firewall_ruleset=ctx.ruleset.name,
        firewall_ruleset_sha256=ctx.ruleset.sha256,
        findings=findings,
        cited_ids=names.cited,
        invalid_citations=names.invalid,
        malformed_citations=names.malformed,
        retrieved_ids=names.retrieved,
    )


def upstream_failure(state: Answered) -> ValidationResult:
    """R5's result for a request that failed before there was an answer to validate."""
    return failed_validation(
        state.request_id,
        state.outcome.reason or ReasonCode.INTERNAL_ERROR,
        state.outcome.message,
    )


def failed_validation(
    request_id: str | None,
    reason: ReasonCode,
    message: str | None,
    metrics: GroundingMetrics | None = None,
    *,
    ruleset: Ruleset | None = None,
    findings: tuple[FirewallFinding, ...] = (),
    names: CitationNames | None = None,
) -> ValidationResult:
    """A FAILED verdict: no text, no citations, a reason (and the ruleset, if one judged).

    ``names``: what the judged answer cited wrongly and could have cited (none when no
    answer was judged).
    """
    return ValidationResult(
        request_id=request_id,
        generation_status=GenerationStatus.FAILED,
        validation_status=ValidationStatus.FAILED,
        failure_reason=reason,
        message=message,
        validated_answer_text="",
        validated_citations=(),
        grounding_metrics=metrics or GroundingMetrics.zero(),
        firewall_ruleset=ruleset.name if ruleset is not None else None,
        firewall_ruleset_sha256=ruleset.sha256 if ruleset is not None else None,
        findings=findings,
        invalid_citations=names.invalid if names is not None else (),
        malformed_citations=names.malformed if names is not None else (),
        retrieved_ids=names.retrieved if names is not None else (),
    )
