"""R4 as an LCEL stage: a ``Prompted`` state -> an ``Answered`` one (the model call).

The model is pinned at construction (see :mod:`groundlock.providers.chat`). Per request:

* a NO_EVIDENCE request answers with the policy's exact refusal and a FAILED one passes its
  reason through — both with zero attempts: no model is called;
* otherwise the same messages are sent on every attempt (system, any history turns as
  ``HumanMessage``/``AIMessage``, then the user message), and before and after each
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
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.runnables import RunnableConfig
from pydantic import Field, model_validator
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception
from typing_extensions import override

from groundlock.contracts.enums import BuildStatus, FinishReason, GenerationStatus
from groundlock.contracts.execution import AttemptRecord, LLMExecutionResult, PinnedModel
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Answered, Assembled, Outcome, Prompted
from groundlock.core.attempts import (
    Attempt,
    Stop,
    attempt_records,
    final_reason,
    is_retried,
    stop_reason,
    wait_seconds,
)
from groundlock.core.prompt_build import build_prompt, check_outside_bundle
from groundlock.core.skipped import unanswered
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import ExecutionLimits, Policy
from groundlock.providers.chat import (
    ModelReply,
    ProviderUnavailableError,
    model_matches,
    pin_model,
    read_reply,
)
from groundlock.providers.extractive import ExtractiveChatModel
from groundlock.providers.failures import FailureVerdict, classify_failure
from groundlock.providers.unconfigured import NO_MODEL, NoModelConfigured
from groundlock.runnables._stage import StateStage
from groundlock.runnables._streaming import ModelText, Opened, without_token_events

__all__ = ["ExecuteModel"]

logger = logging.getLogger("groundlock")


class PromptIntegrityError(Exception):
    """The messages about to be sent no longer hash to the prompt's sha256."""


class ExecuteModel(StateStage[Prompted, Answered]):
    """R4: send the frozen prompt to a pinned model, retrying only transient failures.

    ``model`` is any LangChain chat model or a ``provider:model`` string
    (``"openai:gpt-4.1-mini"``); by default the offline :class:`ExtractiveChatModel`.

    >>> from groundlock import AssembleEvidence, BuildPrompt
    >>> stage = ExecuteModel()
    >>> stage.pinned.model_name, stage.pinned.temperature
    ('groundlock-extractive-v1', 0.0)
    """

    name: str | None = "R4.ExecuteModel"
    consumes = Prompted
    runs_on = frozenset({GenerationStatus.OK, GenerationStatus.NO_EVIDENCE})
    model: BaseChatModel
    """The pinned chat model (rebuilt from what was passed in)."""
    pinned: PinnedModel
    """What was pinned; recorded in every result."""
    budget_models: dict[int, tuple[BaseChatModel, PinnedModel]] = Field(
        default_factory=dict, exclude=True
    )
    """The same model pinned with each other output cap of the policy's query types, by cap:
    a summary's longer budget is a pin like any other, never a per-call override."""
    stream_models: dict[int, BaseChatModel] = Field(default_factory=dict, exclude=True)
    """The streamed twin of each pinned model, by output cap: the same pins, but its
    ``stream`` streams (``chain.stream``); the pinned ones never stream."""
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
        given = values.get("model", ExtractiveChatModel())
        storage = bool(values.get("allow_provider_storage", False))
        if isinstance(given, NoModelConfigured):
            if policy.on_model_unavailable != "refuse":
                raise ProviderUnavailableError(f"no model configured: {given.reason}")
            return _unconfigured(values, policy, given)
        try:
            model, pinned = pin_model(given, policy, allow_provider_storage=storage)
        except ProviderUnavailableError as exc:
            if policy.on_model_unavailable != "refuse":
                raise
            reason = (str(exc).splitlines() or ["-"])[0]
            return _unconfigured(
                values, policy, NoModelConfigured(reason=f"{type(exc).__name__}: {reason}")
            )
        values.update(
            policy=policy,
            model=model,
            pinned=pinned,
            budget_models={
                cap: pin_model(given, policy, allow_provider_storage=storage, output_tokens=cap)
                for cap in policy.output_budgets[1:]
            },
            stream_models={
                cap: pin_model(
                    given, policy, allow_provider_storage=storage, output_tokens=cap, streamed=True
                )[0]
                for cap in policy.output_budgets
            },
        )
        return values

    def streamed_for(self, state: Prompted) -> BaseChatModel:
        """The streamed twin of :meth:`pinned_for`'s model."""
        tokens = state.prompt.tokens
        cap = tokens.reserved_output_tokens if tokens is not None else None
        return self.stream_models[cap if cap is not None else self.policy.reserved_output_tokens]

    def pinned_for(self, state: Prompted) -> tuple[BaseChatModel, PinnedModel]:
        """The pinned model whose output cap is the budget the prompt reserved."""
        tokens = state.prompt.tokens
        cap = tokens.reserved_output_tokens if tokens is not None else None
        if cap is None or cap == self.policy.reserved_output_tokens:
            return self.model, self.pinned
        return self.budget_models[cap]

    @property
    def unconfigured(self) -> bool:
        """Whether no model could be built and the policy refuses instead (004)."""
        return isinstance(self.model, NoModelConfigured)

    def _uncalled(self, state: Prompted) -> Answered | None:
        """R4's result when no model is to be called, else None (call it).

        A NO_EVIDENCE request's refusal, or, with no model under ``on_model_unavailable:
        refuse``, ``MODEL_NOT_CONFIGURED``: one decision for ``invoke``, ``ainvoke`` and
        both streams.
        """
        if state.status is GenerationStatus.NO_EVIDENCE:
            return self._refused(state)
        if self.unconfigured:
            return self._not_configured(state)
        return None

    def _not_configured(self, state: Prompted) -> Answered:
        """R4 with no model under ``on_model_unavailable: refuse``: nothing is called.

        The request fails here as ``MODEL_NOT_CONFIGURED``, so R5 judges nothing and the
        trail says why; R6 turns it into the policy's refusal with ``model_used`` none.
        """
        assert isinstance(self.model, NoModelConfigured)  # noqa: S101  (unconfigured checked)
        message = (
            f"model: none configured ({self.model.reason}); refused by the policy "
            "(on_model_unavailable: refuse)"
        )
        execution = LLMExecutionResult.uncalled(
            GenerationStatus.FAILED,
            reason=ReasonCode.MODEL_NOT_CONFIGURED,
            message=message,
            pinned=self.pinned,
        )
        outcome = Outcome.failed(ReasonCode.MODEL_NOT_CONFIGURED, message)
        return state.answered(execution, outcome=outcome)

    @override
    def _run(self, state: Prompted, config: RunnableConfig) -> Answered:
        if (uncalled := self._uncalled(state)) is not None:
            return uncalled
        call = _Call(self, state)

        def send(sent: list[BaseMessage]) -> BaseMessage:
            return call.model.invoke(sent, config)

        try:
            retrying = Retrying(sleep=self.sleep, **call.retry_policy())
            message = retrying(call.attempt, send)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            return call.failed(exc)
        return call.finish(message)

    @override
    async def _arun(self, state: Prompted, config: RunnableConfig) -> Answered:
        if (uncalled := self._uncalled(state)) is not None:
            return uncalled
        call = _Call(self, state)

        async def send(sent: list[BaseMessage]) -> BaseMessage:
            return await call.model.ainvoke(sent, config)

        try:
            retrying = AsyncRetrying(sleep=self.async_sleep, **call.retry_policy())
            message: BaseMessage = await retrying(call.attempt_async, send)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            return call.failed(exc)
        return call.finish(message)

    streams: ClassVar[bool] = True

    @override
    def _stream(
        self, first: object, rest: Iterator[object], config: RunnableConfig
    ) -> Iterator[Any]:
        """Stream the model's reply to R5: :class:`Opened`, its text, then the result.

        The same pins, checks and attempts as ``invoke``, the model's own ``stream``
        instead of ``invoke``; an attempt that has sent text is not retried (R5 has read
        it), so a failure after the first token fails the request.
        """
        state = self._admitted(first)
        if state.status not in self.runs_on:
            yield self._passed_over(state)
        elif (uncalled := self._uncalled(state)) is not None:
            yield uncalled
        else:
            yield Opened(state)
            yield from _Call(self, state).streamed(config)

    @override
    async def _astream(
        self, first: object, rest: AsyncIterator[object], config: RunnableConfig
    ) -> AsyncIterator[Any]:
        state = self._admitted(first)
        if state.status not in self.runs_on:
            yield self._passed_over(state)
        elif (uncalled := self._uncalled(state)) is not None:
            yield uncalled
        else:
            yield Opened(state)
            async for item in _Call(self, state).astreamed(config):
                yield item

    @override
    def _passed_over(self, state: Prompted) -> Answered:
        return unanswered(state, self.pinned)

    @override
    def verify(self, state: Prompted) -> Outcome | None:
        """A prompt that arrived as data must be exactly what R3 renders over its evidence.

        It must come from this policy's template, its evidence must pass R3's own checks,
        and rendering that evidence again must give the same bytes: only then is what is
        sent what the audit trail will say was sent.
        """
        prompt = state.prompt
        if prompt.refusal_text != self.policy.refusal_text:
            return _integrity("prompt: demands another refusal text than this stage's policy")
        template = self.policy.template
        if (prompt.template_version, prompt.template_sha256) != (template.version, template.sha256):
            built = f"built from {prompt.template_version}, not {template.version}"
            return _integrity(f"prompt: {built}")
        if prompt.build_status is not BuildStatus.OK:
            return None
        problem = check_outside_bundle(state.bundle, self.policy)
        if problem:
            return _integrity(problem)
        rebuilt = build_prompt(Assembled.of(state.bundle), self.policy)
        if rebuilt.prompt.prompt_sha256 != prompt.prompt_sha256:
            return _integrity("prompt: not what the policy's template renders over its own bundle")
        return None

    def _refused(self, state: Prompted) -> Answered:
        """NO_EVIDENCE: the policy's exact refusal (its own, never the input's), uncalled."""
        execution = LLMExecutionResult.uncalled(
            GenerationStatus.NO_EVIDENCE, text=self.policy.refusal_text, pinned=self.pinned
        )
        return state.answered(execution)

    def _execution(
        self,
        status: GenerationStatus,
        *,
        text: str = "",
        reason: ReasonCode | None = None,
        message: str | None = None,
        attempts: tuple[AttemptRecord, ...] = (),
        latency_ms: float = 0.0,
        reply: ModelReply | None = None,
        pinned: PinnedModel | None = None,
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
            pinned=pinned if pinned is not None else self.pinned,
        )


def _unconfigured(values: dict[str, Any], policy: Policy, stand_in: NoModelConfigured) -> object:
    """The stage's values with no model: the stand-in, pinned as nothing, for every budget."""
    values.update(
        policy=policy,
        model=stand_in,
        pinned=NO_MODEL,
        budget_models=dict.fromkeys(policy.output_budgets[1:], (stand_in, NO_MODEL)),
        stream_models=dict.fromkeys(policy.output_budgets, stand_in),
    )
    return values


def _joined(chunks: list[BaseMessage]) -> BaseMessage:
    """A streamed reply's chunks as one message, merged once, by LangChain's own merge.

    Adding them one by one would copy the text so far at every token. A model without a
    stream of its own hands LangChain's fallback its whole reply as one message.
    """
    if not chunks:
        return AIMessageChunk(content="")
    if len(chunks) == 1:
        return chunks[0]
    first, *rest = chunks
    if isinstance(first, AIMessageChunk) and all(isinstance(c, AIMessageChunk) for c in rest):
        return add_ai_message_chunks(first, *rest)  # type: ignore[arg-type]
    merged: Any = first
    for chunk in rest:
        merged = merged + chunk
    return cast("BaseMessage", merged)


def _integrity(message: str) -> Outcome:
    return Outcome.failed(ReasonCode.PROMPT_INTEGRITY, message)


_Send = Callable[[list[BaseMessage]], BaseMessage]
_AsyncSend = Callable[[list[BaseMessage]], Awaitable[BaseMessage]]

_ROLE_CLASS: dict[str, type[BaseMessage]] = {
    "system": SystemMessage,
    "user": HumanMessage,
    "assistant": AIMessage,  # a history turn of the model's side (004's layout)
}
_CLASS_ROLE = {cls: role for role, cls in _ROLE_CLASS.items()}


@dataclass
class _Call:
    """The state of one request's attempts; shared by the sync and async paths.

    Tenacity runs every attempt, the first included, and asks the hooks below what to do
    after each; they keep the state and leave the decisions to :mod:`groundlock.core.attempts`.
    """

    stage: ExecuteModel
    state: Prompted
    limits: ExecutionLimits = field(init=False)
    start: float = field(init=False)
    attempts: list[Attempt] = field(default_factory=list)
    deadline_hit: bool = False
    model: BaseChatModel = field(init=False)
    pinned: PinnedModel = field(init=False)
    sent_text: bool = False
    """Whether a streamed attempt has passed text on (then it is not retried)."""
    drifted: bool = False
    """Whether a streamed chunk named another model than the pinned one (no text passes)."""

    def __post_init__(self) -> None:
        self.limits = self.stage.policy.execution
        self.start = self.stage.clock()
        self.model, self.pinned = self.stage.pinned_for(self.state)

    # -- one attempt -------------------------------------------------------------------
    def _fresh_messages(self) -> list[BaseMessage]:
        """New message objects per attempt, so a change made during one cannot carry over."""
        return [_ROLE_CLASS[m.role](content=m.content) for m in self.state.prompt.messages]

    def _intact(self, messages: list[BaseMessage]) -> bool:
        sent = [(_CLASS_ROLE.get(type(m)), m.content) for m in messages]
        return sent == [(m.role, m.content) for m in self.state.prompt.messages]

    def _begin(self, messages: list[BaseMessage]) -> Attempt:
        if not self._intact(messages):
            raise PromptIntegrityError
        attempt = Attempt(number=len(self.attempts) + 1, started=self.stage.clock())
        self.attempts.append(attempt)
        return attempt

    def _end(self, attempt: Attempt, messages: list[BaseMessage], exc: Exception | None) -> None:
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
            self.state.request_id,
            attempt.number,
            self.limits.max_attempts,
            "ok" if exc is None else type(exc).__name__,
            attempt.verdict.status_code if attempt.verdict else None,
            attempt.verdict.reason.value if attempt.verdict else None,
        )

    def _failed_attempt(
        self, attempt: Attempt, messages: list[BaseMessage], exc: Exception
    ) -> NoReturn:
        self._end(attempt, messages, exc)
        if attempt.error is exc or attempt.error is None:
            raise exc
        raise attempt.error from exc  # the integrity failure outranks the call's own

    def _passed_attempt(
        self, attempt: Attempt, messages: list[BaseMessage], message: BaseMessage
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

    # -- one streamed attempt, and the attempts of a streamed request --------------------
    def _stream_once(self, config: RunnableConfig) -> Generator[ModelText, None, BaseMessage]:
        messages = self._fresh_messages()
        attempt = self._begin(messages)
        chunks: list[BaseMessage] = []
        try:
            for chunk in self.model.stream(messages, without_token_events(config)):
                if (text := self._read_chunk(chunk, chunks)) is not None:
                    yield text
        except Exception as exc:  # noqa: BLE001  (classified, recorded, re-raised)
            self._failed_attempt(attempt, messages, exc)
        return self._passed_attempt(attempt, messages, _joined(chunks))

    def _read_chunk(self, chunk: BaseMessage, chunks: list[BaseMessage]) -> ModelText | None:
        """Keep ``chunk``; its text for R5, unless the stream has drifted or has none.

        Stops passing text on once a chunk names another model; ends at the deadline.

        The reply is still read to its end (the attempt's record keeps it), and the result
        fails ``MODEL_DRIFT`` as ``invoke``'s would; a stream that runs past the policy's
        request deadline fails as an attempt past it does (each read has its own timeout,
        so a provider that drips text could otherwise run far past it).
        """
        reported = chunk.response_metadata.get("model_name") if chunk.response_metadata else None
        if isinstance(reported, str) and not model_matches(
            self.pinned.model_name, reported, must_report=False
        ):
            self.drifted = True
        if self.stage.clock() - self.start > self.limits.request_deadline_seconds:
            self.deadline_hit = True
            raise TimeoutError("the stream ran past the request deadline")
        chunks.append(chunk)
        text = str(chunk.text)
        if not text or self.drifted:
            return None
        self.sent_text = True
        return ModelText(text)

    def streamed(self, config: RunnableConfig) -> Iterator[ModelText | Answered]:
        """The model's text as it arrives, then the request's result (as ``invoke``'s)."""
        self.model = self.stage.streamed_for(self.state)
        message: BaseMessage | None = None
        try:
            for attempt in Retrying(sleep=self.stage.sleep, **self.retry_policy()):
                escaped: BaseException | None = None
                with attempt:
                    try:
                        message = yield from self._stream_once(config)
                    except Exception:
                        raise  # the attempt's failure: tenacity's to judge
                    except BaseException as exc:  # noqa: BLE001  (the reader closed the stream)
                        escaped = exc  # not the model's failure: tenacity must not swallow it
                if escaped is not None:
                    raise escaped  # noqa: TRY301  (out of tenacity's reach, then out)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            yield self.failed(exc)
            return
        assert message is not None  # noqa: S101  (a finished attempt returned its reply)
        yield self.finish(message)

    async def astreamed(self, config: RunnableConfig) -> AsyncIterator[ModelText | Answered]:
        """Async twin of :meth:`streamed`."""
        self.model = self.stage.streamed_for(self.state)
        message: BaseMessage | None = None
        try:
            async for attempt in AsyncRetrying(sleep=self.stage.async_sleep, **self.retry_policy()):
                escaped: BaseException | None = None
                with attempt:
                    try:
                        messages = self._fresh_messages()
                        started = self._begin(messages)
                        chunks: list[BaseMessage] = []
                        try:
                            deaf = without_token_events(config)
                            async for chunk in self.model.astream(messages, deaf):
                                if (text := self._read_chunk(chunk, chunks)) is not None:
                                    yield text
                        except Exception as exc:  # noqa: BLE001  (classified, recorded, re-raised)
                            self._failed_attempt(started, messages, exc)
                        message = self._passed_attempt(started, messages, _joined(chunks))
                    except Exception:
                        raise
                    except BaseException as exc:  # noqa: BLE001  (closed or cancelled)
                        escaped = exc
                if escaped is not None:
                    raise escaped  # noqa: TRY301  (out of tenacity's reach, then out)
        except Exception as exc:  # noqa: BLE001  (every failure becomes a FAILED result)
            yield self.failed(exc)
            return
        assert message is not None  # noqa: S101
        yield self.finish(message)

    # -- tenacity hooks: the state is here, the decisions in groundlock.core.attempts ---
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
        # before sending (a prompt-integrity failure) belongs to no attempt. A streamed
        # attempt that has sent text is not retried: R5 has read it.
        last = self.attempts[-1] if self.attempts else None
        return (
            last is not None
            and last.error is exc
            and is_retried(last.verdict)
            and not self.sent_text
        )

    def wait(self, retry_state: RetryCallState) -> float:
        verdict = self.attempts[-1].verdict
        retry_after = verdict.retry_after_seconds if verdict is not None else None
        seconds = wait_seconds(retry_state.attempt_number, retry_after, self.limits)
        self.attempts[-1].wait = seconds
        return seconds

    def stop(self, retry_state: RetryCallState) -> bool:
        elapsed = self.stage.clock() - self.start
        upcoming = retry_state.upcoming_sleep or 0.0
        reason = stop_reason(retry_state.attempt_number, elapsed, upcoming, self.limits)
        if reason is None:
            return False
        self.attempts[-1].wait = None
        self.deadline_hit = reason is Stop.DEADLINE
        return True

    # -- outcome -----------------------------------------------------------------------
    def _records(self) -> tuple[AttemptRecord, ...]:
        return attempt_records(self.attempts, self.start)

    def _latency_ms(self) -> float:
        return max(0.0, (self.stage.clock() - self.start) * 1000)

    def _failed_with(self, reason: ReasonCode, message: str) -> Answered:
        execution = self.stage._execution(
            GenerationStatus.FAILED,
            pinned=self.pinned,
            reason=reason,
            message=message,
            attempts=self._records(),
            latency_ms=self._latency_ms(),
        )
        return self.state.answered(execution, outcome=Outcome.failed(reason, message))

    def failed(self, exc: Exception) -> Answered:
        if isinstance(exc, PromptIntegrityError):
            return self._failed_with(
                ReasonCode.PROMPT_INTEGRITY,
                "prompt: the messages handed to the model no longer match prompt_sha256",
            )
        last = self.attempts[-1] if self.attempts else None
        verdict = last.verdict if last is not None and last.error is exc else None
        reason = final_reason(verdict, deadline_hit=self.deadline_hit)
        return self._failed_with(
            reason, f"model: {type(exc).__name__} after {len(self.attempts)} attempt(s)"
        )

    def finish(self, message: BaseMessage) -> Answered:
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

    def _succeeded(self, message: BaseMessage) -> Answered:
        reply = read_reply(message)
        pinned = self.pinned
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
        execution = self.stage._execution(
            status,
            pinned=self.pinned,
            text=reply.text,
            reason=reason,
            message=note,
            attempts=self._records(),
            latency_ms=self._latency_ms(),
            reply=reply,
        )
        outcome = Outcome.failed(reason, note) if reason is not None else self.state.outcome
        return self.state.answered(execution, outcome=outcome)
