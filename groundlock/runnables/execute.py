"""R4 as an LCEL stage: ``PromptBuildResult`` -> ``LLMExecutionResult``.

The model is pinned at construction (see :mod:`groundlock.providers.chat`). Per request:

* a prompt that is NO_EVIDENCE answers with the policy's exact refusal and a FAILED prompt
  passes its reason through — both with zero attempts: no model is called;
* otherwise the same two messages are sent on every attempt, and before and after each
  attempt their roles and contents are compared with the prompt's (equal pairs are equal
  canonical bytes, so this is the ``prompt_sha256`` check without hashing 15 kB twice);
* tenacity is the only retry layer: transient failures are retried up to the policy's
  ``max_attempts``, waiting what the provider asks (Retry-After, up to the cap) or an
  exponential backoff with jitter, and never past the request deadline; anything else fails
  at once with its own reason code;
* the reply is read the same way for every API; a reply from another model than the one
  pinned (model drift) or withheld by a content filter fails; nothing in the text is edited.

Every attempt is recorded (outcome, status, reason, waits) and logged without any content.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import Field, model_validator
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception
from typing_extensions import override

from groundlock.contracts.enums import BuildStatus, FinishReason, GenerationStatus
from groundlock.contracts.execution import AttemptRecord, LLMExecutionResult, PinnedModel
from groundlock.contracts.prompt import PromptBuildResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.prompt import (
    build_prompt,
    check_outside_bundle,
    failed_prompt,
    policy_mismatch,
)
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import ExecutionLimits, Policy
from groundlock.prompts.template import load_template
from groundlock.providers.chat import ModelReply, model_matches, pin_model, read_reply
from groundlock.providers.extractive import ExtractiveChatModel
from groundlock.providers.failures import FailureVerdict, classify_failure
from groundlock.runnables._stage import PolicyStage, coerce_input

__all__ = ["ExecuteModel"]

logger = logging.getLogger("groundlock")


class PromptIntegrityError(Exception):
    """The messages about to be sent no longer hash to the prompt's sha256."""


class ExecuteModel(PolicyStage[PromptBuildResult, LLMExecutionResult]):
    """R4: send the frozen prompt to a pinned model, retrying only transient failures.

    ``model`` is any LangChain chat model or a ``provider:model`` string
    (``"openai:gpt-4.1-mini"``); by default the offline :class:`ExtractiveChatModel`.

    >>> from groundlock import AssembleEvidence, BuildPrompt
    >>> stage = ExecuteModel()
    >>> stage.pinned.model_name, stage.pinned.temperature
    ('groundlock-extractive-v1', 0.0)
    """

    name: str | None = "R4.ExecuteModel"
    model: BaseChatModel
    """The pinned chat model (rebuilt from what was passed in)."""
    pinned: PinnedModel
    """What was pinned; recorded in every result."""
    allow_provider_storage: bool = False
    """Let the provider retain prompts (Responses API ``store``); off unless opted in."""
    sleep: Callable[[float], None] = Field(default=time.sleep, exclude=True)
    """How to wait between attempts (tests inject a fake clock)."""
    async_sleep: Callable[[float], Awaitable[None]] = Field(default=asyncio.sleep, exclude=True)
    clock: Callable[[], float] = Field(default=time.monotonic, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _pin(cls, data: object) -> object:
        # Always pin, even when a ``pinned`` record is passed in: a record says what was
        # pinned, it cannot stand in for pinning.
        if not isinstance(data, dict):
            return data
        values = dict(data)
        policy = values.get("policy", DEFAULT_POLICY)
        policy = load_policy(policy) if isinstance(policy, str) else policy
        if not isinstance(policy, Policy):
            return values  # the policy field's own validation reports the problem
        model, pinned = pin_model(
            values.get("model", ExtractiveChatModel()),
            policy,
            allow_provider_storage=bool(values.get("allow_provider_storage", False)),
        )
        values.update(policy=policy, model=model, pinned=pinned)
        return values

    @property
    @override
    def has_own_callbacks(self) -> bool:
        callbacks = self.model.callbacks
        return callbacks is not None and callbacks != []

    def _start(self, stage_input: object) -> PromptBuildResult | LLMExecutionResult:
        prompt = coerce_input(PromptBuildResult, stage_input)
        if isinstance(prompt, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, prompt)
        if prompt.build_status is BuildStatus.OK:
            problem = self._prompt_problem(prompt, outside=prompt is not stage_input)
            if problem:
                return self._result(
                    prompt, GenerationStatus.FAILED, reason=ReasonCode.PROMPT_INTEGRITY,
                    message=problem,
                )  # fmt: skip
        if prompt.build_status is BuildStatus.NO_EVIDENCE:
            return self._result(prompt, GenerationStatus.NO_EVIDENCE, text=prompt.refusal_text)
        if prompt.build_status is BuildStatus.FAILED:
            return self._result(
                prompt,
                GenerationStatus.FAILED,
                reason=prompt.reason_code or ReasonCode.INTERNAL_ERROR,
                message=prompt.message,
            )
        return prompt

    def _prompt_problem(self, prompt: PromptBuildResult, *, outside: bool) -> str | None:
        """Why ``prompt`` may not be sent under this stage's policy, or None.

        A prompt must come from this policy's template; one that arrived as data (not from
        R3 in this process) must also be exactly what R3 renders over its bundle.
        """
        template = load_template(self.policy.prompt_template)
        if (prompt.template_version, prompt.template_sha256) != (template.version, template.sha256):
            return f"prompt: built from {prompt.template_version}, not {template.version}"
        problem = policy_mismatch(prompt.bundle, self.policy)
        if problem or not outside:
            return problem
        problem = check_outside_bundle(prompt.bundle, self.policy)
        if problem:
            return problem
        if build_prompt(prompt.bundle, self.policy).prompt_sha256 != prompt.prompt_sha256:
            return "prompt: not what the policy's template renders over its own bundle"
        return None

    def _run(self, stage_input: object, config: RunnableConfig) -> LLMExecutionResult:
        prompt = self._start(stage_input)
        if isinstance(prompt, LLMExecutionResult):
            return prompt
        call = _Call(self, prompt)

        def send(sent: list[BaseMessage]) -> BaseMessage:
            return self.model.invoke(sent, config)

        try:
            try:
                message = call.attempt(send)
            except Exception as first:  # noqa: BLE001  (tenacity decides, as for any attempt)
                retrying = Retrying(sleep=self.sleep, **call.retry_policy())
                message = retrying(call.replaying(first, call.attempt), send)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            return call.failed(exc)
        return call.finish(message)

    async def _arun(self, stage_input: object, config: RunnableConfig) -> LLMExecutionResult:
        prompt = self._start(stage_input)
        if isinstance(prompt, LLMExecutionResult):
            return prompt
        call = _Call(self, prompt)

        async def send(sent: list[BaseMessage]) -> BaseMessage:
            return await self.model.ainvoke(sent, config)

        try:
            try:
                message = await call.attempt_async(send)
            except Exception as first:  # noqa: BLE001  (tenacity decides, as for any attempt)
                retrying = AsyncRetrying(sleep=self.async_sleep, **call.retry_policy())
                message = await retrying(call.replaying_async(first, call.attempt_async), send)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            return call.failed(exc)
        return call.finish(message)

    def _result(
        self,
        prompt: PromptBuildResult,
        status: GenerationStatus,
        *,
        text: str = "",
        reason: ReasonCode | None = None,
        message: str | None = None,
        attempts: tuple[AttemptRecord, ...] = (),
        latency_ms: float = 0.0,
        reply: ModelReply | None = None,
    ) -> LLMExecutionResult:
        return LLMExecutionResult(
            generation_status=status,
            reason_code=reason,
            message=message,
            raw_model_text=text,
            reported_model_name=reply.reported_model if reply else None,
            finish_reason=reply.finish_reason if reply else FinishReason.UNKNOWN,
            attempts=attempts,
            llm_latency_ms=latency_ms,
            prompt_tokens_actual=reply.input_tokens if reply else None,
            completion_tokens_actual=reply.output_tokens if reply else None,
            total_tokens_actual=reply.total_tokens if reply else None,
            response_id=reply.response_id if reply else None,
            pinned=self.pinned,
            prompt=prompt,
        )

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> LLMExecutionResult:
        prompt = (
            stage_input
            if isinstance(stage_input, PromptBuildResult)
            else failed_prompt(stage_input, self.policy, reason, message)
        )
        return self._result(prompt, GenerationStatus.FAILED, reason=reason, message=message)


@dataclass
class _Attempt:
    number: int
    started: float
    duration: float = 0.0
    error: BaseException | None = None
    verdict: FailureVerdict | None = None
    wait: float | None = None


_Send = Callable[[list[BaseMessage]], BaseMessage]
_AsyncSend = Callable[[list[BaseMessage]], Awaitable[BaseMessage]]

_ROLE_CLASS: dict[str, type[BaseMessage]] = {"system": SystemMessage, "user": HumanMessage}
_CLASS_ROLE = {cls: role for role, cls in _ROLE_CLASS.items()}


@dataclass
class _Call:
    """The state of one request's attempts; shared by the sync and async paths."""

    stage: ExecuteModel
    prompt: PromptBuildResult
    limits: ExecutionLimits = field(init=False)
    start: float = field(init=False)
    attempts: list[_Attempt] = field(default_factory=list)
    deadline_hit: bool = False

    def __post_init__(self) -> None:
        self.limits = self.stage.policy.execution
        self.start = self.stage.clock()

    # -- one attempt -------------------------------------------------------------------
    def _fresh_messages(self) -> list[BaseMessage]:
        """New message objects per attempt, so a change made during one cannot carry over."""
        return [_ROLE_CLASS[m.role](content=m.content) for m in self.prompt.messages]

    def _intact(self, messages: list[BaseMessage]) -> bool:
        sent = [(_CLASS_ROLE.get(type(m)), m.content) for m in messages]
        return sent == [(m.role, m.content) for m in self.prompt.messages]

    def _begin(self, messages: list[BaseMessage]) -> _Attempt:
        if not self._intact(messages):
            raise PromptIntegrityError
        attempt = _Attempt(number=len(self.attempts) + 1, started=self.stage.clock())
        self.attempts.append(attempt)
        return attempt

    def _end(self, attempt: _Attempt, messages: list[BaseMessage], exc: Exception | None) -> None:
        attempt.duration = self.stage.clock() - attempt.started
        if not self._intact(messages):
            # Something in the call (a callback) edited the messages as they went out: the
            # bytes sent were not the prompt's, so neither the reply nor a retry can be used.
            exc = PromptIntegrityError()
            attempt.verdict = FailureVerdict(
                transient=False, reason=ReasonCode.PROMPT_INTEGRITY, status_code=None,
                retry_after_seconds=None,
            )  # fmt: skip
        elif exc is not None:
            attempt.verdict = classify_failure(exc, self.limits.retry_after_cap_seconds)
        attempt.error = exc
        # A clean attempt is routine (the request's own log line counts attempts); a failed
        # one is worth a line of its own whether or not it will be retried.
        logger.log(
            logging.DEBUG if exc is None else logging.WARNING,
            "groundlock R4 request=%s attempt=%d/%d outcome=%s status=%s reason=%s",
            self.prompt.request_id,
            attempt.number,
            self.limits.max_attempts,
            "ok" if exc is None else type(exc).__name__,
            attempt.verdict.status_code if attempt.verdict else None,
            attempt.verdict.reason.value if attempt.verdict else None,
        )

    def _failed_attempt(
        self, attempt: _Attempt, messages: list[BaseMessage], exc: Exception
    ) -> NoReturn:
        self._end(attempt, messages, exc)
        if attempt.error is exc or attempt.error is None:
            raise exc
        raise attempt.error from exc  # the integrity failure outranks the call's own

    def _passed_attempt(
        self, attempt: _Attempt, messages: list[BaseMessage], message: BaseMessage
    ) -> BaseMessage:
        self._end(attempt, messages, None)
        if attempt.error is not None:
            raise attempt.error
        return message

    def attempt(self, send: _Send) -> BaseMessage:
        messages = self._fresh_messages()
        attempt = self._begin(messages)
        try:
            message = send(messages)
        except Exception as exc:  # noqa: BLE001  (classified, recorded, re-raised)
            self._failed_attempt(attempt, messages, exc)
        return self._passed_attempt(attempt, messages, message)

    async def attempt_async(self, send: _AsyncSend) -> BaseMessage:
        messages = self._fresh_messages()
        attempt = self._begin(messages)
        try:
            message = await send(messages)
        except Exception as exc:  # noqa: BLE001  (classified, recorded, re-raised)
            self._failed_attempt(attempt, messages, exc)
        return self._passed_attempt(attempt, messages, message)

    # -- tenacity hooks ----------------------------------------------------------------
    # The first attempt runs before tenacity is set up: it is the only attempt of nearly
    # every request, and tenacity's bookkeeping (12 us sync, 23 us async) would cost more
    # than the rest of the stage. If it fails, tenacity starts with that failure replayed
    # as its attempt 1, so every decision (retry or not, wait, stop) is tenacity's, made
    # with the same attempt numbers as if it had run the first attempt itself.
    @staticmethod
    def replaying(
        failure: Exception, attempt: Callable[[_Send], BaseMessage]
    ) -> Callable[[_Send], BaseMessage]:
        """``attempt``, except that its first call raises ``failure`` (attempt 1, done)."""
        pending = [failure]

        def replayed(send: _Send) -> BaseMessage:
            if pending:
                raise pending.pop()
            return attempt(send)

        return replayed

    @staticmethod
    def replaying_async(
        failure: Exception, attempt: Callable[[_AsyncSend], Awaitable[BaseMessage]]
    ) -> Callable[[_AsyncSend], Awaitable[BaseMessage]]:
        """The async twin of :meth:`replaying`."""
        pending = [failure]

        async def replayed(send: _AsyncSend) -> BaseMessage:
            if pending:
                raise pending.pop()
            return await attempt(send)

        return replayed

    def retry_policy(self) -> dict[str, Any]:
        """The tenacity settings shared by the sync and async paths (sleep aside)."""
        return {
            "retry": retry_if_exception(self.should_retry),
            "wait": self.wait,
            "stop": self.stop,
            "reraise": True,
        }

    def should_retry(self, exc: BaseException) -> bool:
        # Only the failure of the attempt just made can be retried: an exception raised
        # before sending (a prompt-integrity failure) belongs to no attempt.
        last = self.attempts[-1] if self.attempts else None
        return bool(last and last.error is exc and last.verdict and last.verdict.transient)

    def wait(self, retry_state: RetryCallState) -> float:
        verdict = self.attempts[-1].verdict
        if verdict is not None and verdict.retry_after_seconds:
            seconds = verdict.retry_after_seconds
        else:
            exponent = retry_state.attempt_number - 1
            ceiling = min(self.limits.backoff_max_seconds,
                          self.limits.backoff_initial_seconds * 2**exponent)  # fmt: skip
            seconds = ceiling * random.uniform(0.75, 1.0)  # noqa: S311  (jitter, not secrets)
        self.attempts[-1].wait = seconds
        return seconds

    def stop(self, retry_state: RetryCallState) -> bool:
        if retry_state.attempt_number >= self.limits.max_attempts:
            self.attempts[-1].wait = None
            return True
        # Start another attempt only if it can finish, at its timeout, within the deadline.
        elapsed = self.stage.clock() - self.start
        upcoming = (retry_state.upcoming_sleep or 0.0) + self.limits.attempt_timeout_seconds
        if elapsed + upcoming > self.limits.request_deadline_seconds:
            self.attempts[-1].wait = None
            self.deadline_hit = True
            return True
        return False

    # -- outcome -----------------------------------------------------------------------
    def _records(self) -> tuple[AttemptRecord, ...]:
        return tuple(
            AttemptRecord(
                number=a.number,
                started_ms=max(0.0, (a.started - self.start) * 1000),
                duration_ms=max(0.0, a.duration * 1000),
                outcome="ok"
                if a.verdict is None
                else ("transient_error" if a.verdict.transient else "error"),
                error_type=type(a.error).__name__ if a.error is not None else None,
                status_code=a.verdict.status_code if a.verdict else None,
                reason_code=a.verdict.reason if a.verdict else None,
                retry_after_seconds=a.verdict.retry_after_seconds if a.verdict else None,
                wait_seconds=a.wait,
            )
            for a in self.attempts
        )

    def _latency_ms(self) -> float:
        return max(0.0, (self.stage.clock() - self.start) * 1000)

    def _failed_with(self, reason: ReasonCode, message: str) -> LLMExecutionResult:
        return self.stage._result(
            self.prompt,
            GenerationStatus.FAILED,
            reason=reason,
            message=message,
            attempts=self._records(),
            latency_ms=self._latency_ms(),
        )

    def failed(self, exc: Exception) -> LLMExecutionResult:
        if isinstance(exc, PromptIntegrityError):
            return self._failed_with(
                ReasonCode.PROMPT_INTEGRITY,
                "prompt: the messages handed to the model no longer match prompt_sha256",
            )
        last = self.attempts[-1] if self.attempts else None
        verdict = last.verdict if last is not None and last.error is exc else None
        reason = verdict.reason if verdict else ReasonCode.MODEL_ERROR
        if verdict is not None and verdict.transient:
            reason = (
                ReasonCode.MODEL_DEADLINE_EXCEEDED
                if self.deadline_hit
                else ReasonCode.MODEL_UNAVAILABLE
            )
        return self._failed_with(
            reason, f"model: {type(exc).__name__} after {len(self.attempts)} attempt(s)"
        )

    def finish(self, message: BaseMessage) -> LLMExecutionResult:
        """The result for a reply; a bug while reading it still keeps the attempt records."""
        try:
            return self._succeeded(message)
        except Exception as exc:  # noqa: BLE001  (fail closed, but keep the audit trail)
            frames = "".join(traceback.format_tb(exc.__traceback__))
            logger.error(  # noqa: TRY400  (the message may quote the reply; log frames only)
                "R4 failed closed reading a reply with %s\n%s", type(exc).__name__, frames
            )
            return self._failed_with(
                ReasonCode.INTERNAL_ERROR, f"model: reply could not be read ({type(exc).__name__})"
            )

    def _succeeded(self, message: BaseMessage) -> LLMExecutionResult:
        reply = read_reply(message)
        pinned = self.stage.pinned
        status, reason, note = GenerationStatus.OK, None, None
        if not model_matches(
            pinned.model_name, reply.reported_model, must_report=pinned.api is not None
        ):
            status, reason = GenerationStatus.FAILED, ReasonCode.MODEL_DRIFT
            note = (
                f"model: response came from {reply.reported_model!r}, pinned {pinned.model_name!r}"
            )
        elif reply.finish_reason is FinishReason.CONTENT_FILTER:
            status, reason = GenerationStatus.FAILED, ReasonCode.OUTPUT_CONTENT_FILTERED
            note = "model: the provider withheld the output (content filter)"
        return self.stage._result(
            self.prompt,
            status,
            text=reply.text,
            reason=reason,
            message=note,
            attempts=self._records(),
            latency_ms=self._latency_ms(),
            reply=reply,
        )
