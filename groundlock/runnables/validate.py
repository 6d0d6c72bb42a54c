"""R5 as an LCEL stage: ``LLMExecutionResult`` -> ``ValidationResult`` (the firewall)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, model_validator
from typing_extensions import override

from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.validation import JudgeRecord, JudgeVerdict, ValidationResult
from groundlock.core.firewall import failed_validation, validate_answer
from groundlock.core.firewall.judge import JudgeQuestion, judge_questions, judged, verdicts_of
from groundlock.core.intake import salvage_nested_request_id
from groundlock.core.prompt import policy_mismatch
from groundlock.errors import GroundlockError
from groundlock.providers.judge import ChatModelJudge
from groundlock.runnables._stage import PolicyStage, coerce_input

__all__ = ["ValidateAnswer"]


class ValidateAnswer(PolicyStage[LLMExecutionResult, ValidationResult]):
    """R5: accept the model's answer exactly as written, or reject it with a reason code.

    It calls no model and never edits text (see :mod:`groundlock.core.firewall` for the
    rules and their order). A FAILED execution passes its reason through.

    With a policy that names a ``support_judge``, a ``judge`` is required: a chat model
    (pinned like R4's, given the frozen judge prompt) or any runnable mapping
    ``{"sentence", "evidence"}`` to ``{"verdict", "score"}``. It runs after the
    deterministic rules, on answers that passed them (see
    :mod:`groundlock.core.firewall.judge`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "R5.ValidateAnswer"
    judge: Any = None
    """The support judge the policy's ``support_judge`` settings call for (None: no judge)."""

    @model_validator(mode="after")
    def _judge_matches_policy(self) -> Self:
        settings = self.policy.support_judge
        if settings is None and self.judge is not None:
            raise GroundlockError(
                f"policy {self.policy.policy_version!r} names no support_judge: a judge given "
                "without one would leave no trace of its settings; use a policy that names it"
            )
        if settings is not None and self.judge is None:
            raise GroundlockError(
                f"policy {self.policy.policy_version!r} requires a support judge: pass judge="
            )
        if isinstance(self.judge, BaseChatModel | str):
            object.__setattr__(self, "judge", ChatModelJudge.pinned(self.judge, self.policy))
        elif self.judge is not None and not isinstance(self.judge, Runnable):
            raise GroundlockError("judge must be a chat model, a 'provider:model' or a Runnable")
        return self

    def _run(self, stage_input: object, config: RunnableConfig) -> ValidationResult:
        result = self._validated(stage_input)
        questions = self._questions(result)
        if not questions:
            return result
        settings = self.policy.support_judge
        assert settings is not None  # noqa: S101  (questions exist only with a judge)
        if len(questions) > settings.max_sentences:
            return self._record(result, questions, None, self._too_many(settings.max_sentences))
        inputs = [q.as_input() for q in questions]
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            outputs = pool.submit(self.judge.batch, inputs, config).result(settings.timeout_seconds)
        except concurrent.futures.TimeoutError:
            return self._record(result, questions, None, "timed out")
        except Exception as exc:  # noqa: BLE001  (any judge failure is the judge's verdict)
            return self._record(result, questions, None, f"failed ({type(exc).__name__})")
        finally:
            pool.shutdown(wait=False)  # a timed-out judge is abandoned, not waited for
        return self._record(result, questions, outputs, None)

    @override
    async def _arun(self, stage_input: object, config: RunnableConfig) -> ValidationResult:
        result = self._validated(stage_input)
        questions = self._questions(result)
        if not questions:
            return result
        settings = self.policy.support_judge
        assert settings is not None  # noqa: S101
        if len(questions) > settings.max_sentences:
            return self._record(result, questions, None, self._too_many(settings.max_sentences))
        inputs = [q.as_input() for q in questions]
        try:
            outputs = await asyncio.wait_for(
                self.judge.abatch(inputs, config), settings.timeout_seconds
            )
        except TimeoutError:
            return self._record(result, questions, None, "timed out")
        except Exception as exc:  # noqa: BLE001  (any judge failure is the judge's verdict)
            return self._record(result, questions, None, f"failed ({type(exc).__name__})")
        return self._record(result, questions, outputs, None)

    def _validated(self, stage_input: object) -> ValidationResult:
        execution = coerce_input(LLMExecutionResult, stage_input)
        if isinstance(execution, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, execution)
        problem = policy_mismatch(execution.prompt.bundle, self.policy)
        if problem is None and execution.prompt.refusal_text != self.policy.refusal_text:
            problem = "prompt: demands another refusal text than this stage's policy"
        if problem:
            return failed_validation(
                execution.request_id, execution, ReasonCode.INPUT_SCHEMA_INVALID, problem
            )
        return validate_answer(execution, self.policy)

    def _questions(self, result: ValidationResult) -> tuple[JudgeQuestion, ...]:
        if self.judge is None:
            return ()
        return judge_questions(result, self.policy)

    def _record(
        self,
        result: ValidationResult,
        questions: tuple[JudgeQuestion, ...],
        outputs: list[Any] | None,
        error: str | None,
    ) -> ValidationResult:
        settings = self.policy.support_judge
        assert settings is not None  # noqa: S101
        verdicts: tuple[JudgeVerdict, ...] = ()
        if error is None and outputs is not None:
            try:
                verdicts = verdicts_of(questions, outputs, settings)
            except ValueError:
                error = "answered outside its contract"
        judge = self.judge
        record = JudgeRecord(
            judge=judge.pinned_model.model_name
            if isinstance(judge, ChatModelJudge)
            else str(judge.get_name()),
            prompt_version=judge.prompt.version if isinstance(judge, ChatModelJudge) else None,
            prompt_sha256=judge.prompt.sha256 if isinstance(judge, ChatModelJudge) else None,
            verdicts=verdicts,
            error=error,
        )
        return judged(result, settings, record)

    @staticmethod
    def _too_many(limit: int) -> str:
        return f"the answer has more than {limit} sentences to judge"

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> ValidationResult:
        if isinstance(stage_input, LLMExecutionResult):
            return failed_validation(stage_input.request_id, stage_input, reason, message)
        request_id = salvage_nested_request_id(stage_input, "prompt", "bundle")
        return failed_validation(request_id, None, reason, message)
