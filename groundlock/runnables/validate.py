"""R5 as an LCEL stage: an ``Answered`` state -> a ``Judged`` one (the firewall)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, model_validator
from typing_extensions import override

from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Answered, Judged, Outcome, Prompted
from groundlock.contracts.validation import JudgeRecord, JudgeVerdict, ValidationResult
from groundlock.core.firewall import validate_answer
from groundlock.core.firewall.judging import JudgeQuestion, judge_questions, judged, verdicts_of
from groundlock.core.skipped import unjudged
from groundlock.core.streaming import Release
from groundlock.errors import GroundlockError
from groundlock.providers.judge import ChatModelJudge
from groundlock.runnables._stage import StateStage
from groundlock.runnables._streaming import ModelText, Opened, Released, Withdrawn

__all__ = ["ValidateAnswer"]


class ValidateAnswer(StateStage[Answered, Judged]):
    """R5: accept the model's answer exactly as written, or reject it with a reason code.

    It calls no model and never edits text (see :mod:`groundlock.core.firewall` for the
    rules and their order). A FAILED request passes its reason through.

    With a policy that names a ``support_judge``, a ``judge`` is required: a chat model
    (pinned like R4's, given the frozen judge prompt) or any runnable mapping
    ``{"sentence", "evidence"}`` to ``{"verdict", "score"}``. It runs after the
    deterministic rules, on answers that passed them (see
    :mod:`groundlock.core.firewall.judging`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "R5.ValidateAnswer"
    consumes = Answered
    runs_on = frozenset({GenerationStatus.OK, GenerationStatus.NO_EVIDENCE})
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

    @override
    def _run(self, state: Answered, config: RunnableConfig) -> Judged:
        result = validate_answer(state, self.policy)
        questions = self._questions(result, state)
        if not questions:
            return _judged(state, result)
        settings = self.policy.support_judge
        assert settings is not None  # noqa: S101  (questions exist only with a judge)
        if len(questions) > settings.max_sentences:
            error = self._too_many(settings.max_sentences)
            return _judged(state, self._record(result, questions, None, error))
        inputs = [q.as_input() for q in questions]
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            outputs = pool.submit(self.judge.batch, inputs, config).result(settings.timeout_seconds)
        except concurrent.futures.TimeoutError:
            return _judged(state, self._record(result, questions, None, "timed out"))
        except Exception as exc:  # noqa: BLE001  (any judge failure is the judge's verdict)
            error = f"failed ({type(exc).__name__})"
            return _judged(state, self._record(result, questions, None, error))
        finally:
            pool.shutdown(wait=False)  # a timed-out judge is abandoned, not waited for
        return _judged(state, self._record(result, questions, outputs, None))

    @override
    async def _arun(self, state: Answered, config: RunnableConfig) -> Judged:
        result = validate_answer(state, self.policy)
        questions = self._questions(result, state)
        if not questions:
            return _judged(state, result)
        settings = self.policy.support_judge
        assert settings is not None  # noqa: S101
        if len(questions) > settings.max_sentences:
            error = self._too_many(settings.max_sentences)
            return _judged(state, self._record(result, questions, None, error))
        inputs = [q.as_input() for q in questions]
        try:
            outputs = await asyncio.wait_for(
                self.judge.abatch(inputs, config), settings.timeout_seconds
            )
        except TimeoutError:
            return _judged(state, self._record(result, questions, None, "timed out"))
        except Exception as exc:  # noqa: BLE001  (any judge failure is the judge's verdict)
            error = f"failed ({type(exc).__name__})"
            return _judged(state, self._record(result, questions, None, error))
        return _judged(state, self._record(result, questions, outputs, None))

    streams: ClassVar[bool] = True

    @override
    def _stream(
        self, first: object, rest: Iterator[object], config: RunnableConfig
    ) -> Iterator[Any]:
        """Judge a streamed answer: its sentences as they settle, the whole when it ends.

        Model text stops here. What goes on is :class:`Opened`, the :class:`Released`
        sentences (as they pass under a progressive policy, all at the end under a
        buffered one), :class:`Withdrawn` if released ones did not survive, and the
        ``Judged`` state ``invoke`` would return (the final verdict is always R5's on the
        whole answer).
        """
        if not isinstance(first, Opened):  # the model did not stream: a whole state
            yield from self._released(self._work(first, config), None)
            return
        yield first
        release = self._release(first)
        final: object = None
        for item in rest:
            if isinstance(item, ModelText):
                yield from map(Released, release.feed(item.text))
            else:
                final = item
        yield from self._released(self._work(final, config), release)

    @override
    async def _astream(
        self, first: object, rest: AsyncIterator[object], config: RunnableConfig
    ) -> AsyncIterator[Any]:
        if not isinstance(first, Opened):
            for item in self._released(await self._awork(first, config), None):
                yield item
            return
        yield first
        release = self._release(first)
        final: object = None
        async for item in rest:
            if isinstance(item, ModelText):
                for piece in release.feed(item.text):
                    yield Released(piece)
            else:
                final = item
        for item in self._released(await self._awork(final, config), release):
            yield item

    def _release(self, opened: Opened) -> Release:
        state = opened.state
        assert isinstance(state, Prompted)  # noqa: S101  (R4 opens a prompted request)
        # A sentence goes out early only when the rules are the whole verdict: under a
        # policy with a support judge, the judge has not seen it yet, so it waits.
        progressive = self.policy.stream_mode == "progressive" and self.judge is None
        return Release(state, self.policy, progressive=progressive)

    def _released(self, judged: Judged, release: Release | None) -> Iterator[object]:
        """What follows the verdict: the sentences still to release, then the state."""
        if release is None:
            release = Release(judged, self.policy, progressive=False)
            pieces, _ = release.finish(judged.validation)
            if pieces:
                yield Opened(judged)
        else:
            pieces, withdrawn = release.finish(judged.validation)
            if withdrawn:
                yield Withdrawn()
        yield from map(Released, pieces)
        yield judged

    @override
    def _passed_over(self, state: Answered) -> Judged:
        return unjudged(state)

    @override
    def verify(self, state: Answered) -> Outcome | None:
        """An answer that arrived as data must answer a prompt with this policy's refusal."""
        if state.prompt.refusal_text != self.policy.refusal_text:
            return Outcome.failed(
                ReasonCode.INPUT_SCHEMA_INVALID,
                "prompt: demands another refusal text than this stage's policy",
            )
        return None

    def _questions(self, result: ValidationResult, state: Answered) -> tuple[JudgeQuestion, ...]:
        if self.judge is None:
            return ()
        return judge_questions(result, state.bundle, self.policy)

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


def _judged(state: Answered, result: ValidationResult) -> Judged:
    """``state`` with R5's verdict; the verdict decides the outcome."""
    if result.validation_status is ValidationStatus.FAILED:
        outcome = Outcome.failed(result.failure_reason or ReasonCode.INTERNAL_ERROR, result.message)
    elif result.generation_status is GenerationStatus.NO_EVIDENCE:
        outcome = (
            state.outcome
            if state.outcome.status is GenerationStatus.NO_EVIDENCE
            else Outcome(status=GenerationStatus.NO_EVIDENCE, reason=None, message=None)
        )
    else:
        outcome = Outcome.ok()
    return state.judged(result, outcome=outcome)
