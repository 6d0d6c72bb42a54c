"""The shell every groundlock stage shares: typed, traced, and closed on failure.

A stage's decision lives in a pure function; the stage routes LCEL calls to it through
LangChain's own ``_call_with_config`` (``invoke``) and ``_acall_with_config`` (``ainvoke``),
so every stage is a named run with its callbacks, metadata and context exactly as any
runnable's: a runnable the stage calls without passing config is parented under it too.

Everything generic is here, once:

* **Fail closed.** If the stage's work raises, that is a bug, not bad input (bad input is a
  FAILED outcome by design). The stage logs the traceback without the exception message,
  which may quote evidence, and returns its output type with ``INTERNAL_ERROR``.
* **Stage data stays out of event streams** (:func:`groundlock._lc.without_stream_readers`).
* For the stages that take a run state (:class:`StateStage`, R3 on):
  - **input that arrives as data** (a dict from JSON, not a state instance from the stage
    before) is validated into the stage's input state, then checked by the stage's own
    :meth:`StateStage.verify`, called from here and nowhere else;
  - **a state from another policy** is refused;
  - **pass-through**: a stage runs only on the outcomes it declares (``runs_on``); on any
    other it adds its section in the form that says it did not run
    (:mod:`groundlock.core.skipped`).
"""

from __future__ import annotations

import inspect
import itertools
import logging
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
)
from pydantic import Field, ValidationError, field_validator
from typing_extensions import override

from groundlock._lc import run_child_config, streams_to_readers, without_stream_readers
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Assembled, Outcome
from groundlock.core.intake import salvage_identity
from groundlock.core.skipped import advanced, failed_state
from groundlock.policies.loader import (
    DEFAULT_POLICY,
    check_policy_identity,
    load_policy,
    resolve_policy,
)
from groundlock.policies.model import Policy
from groundlock.runnables._streaming import subject_of

__all__ = ["ALL_OUTCOMES", "PolicyStage", "Stage", "StateStage", "describe_invalid"]

logger = logging.getLogger("groundlock")

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")
StateT = TypeVar("StateT", bound=Assembled)
T = TypeVar("T")
ManagerT = TypeVar("ManagerT")
A = TypeVar("A")

_MAX_METADATA_ID = 200
ALL_OUTCOMES = frozenset(GenerationStatus)
"""``runs_on`` for a stage that runs whatever happened before it (the audit step, R6)."""


_NOTHING: Any = object()


class Stage(RunnableSerializable[InputT, OutputT]):
    """Base class of the pipeline stages (not part of the public API)."""

    streams: ClassVar[bool] = False
    """Whether the stage works on a stream in ``chain.stream`` (R4 on: see
    :mod:`groundlock.runnables._streaming`); the others read their whole input first, as
    LangChain's default ``transform`` does."""

    def _stream(
        self, first: object, rest: Iterator[object], config: RunnableConfig
    ) -> Iterator[Any]:
        """The stage's work on a stream whose first item is ``first``."""
        raise NotImplementedError

    def _astream(
        self, first: object, rest: AsyncIterator[object], config: RunnableConfig
    ) -> AsyncIterator[Any]:
        """Async twin of ``_stream``."""
        raise NotImplementedError

    def _work(self, stage_input: object, config: RunnableConfig) -> OutputT:
        """The stage's work; ``config`` is the stage run's child config."""
        raise NotImplementedError

    async def _awork(self, stage_input: object, config: RunnableConfig) -> OutputT:
        """Async twin of ``_work``; only stages doing I/O override it."""
        return self._work(stage_input, config)

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> OutputT:
        """The stage's output for ``stage_input`` when it cannot do its work."""
        raise NotImplementedError

    def trace_metadata(self, stage_input: object) -> dict[str, str]:
        """What this stage's run carries as tracing metadata (and passes to its child runs).

        ``request_id`` of the request and, once R3 has built it, ``prompt_sha256``: enough
        to find every run of one request, and to group runs that sent the same prompt bytes.
        """
        metadata: dict[str, str] = {}
        if isinstance(stage_input, Assembled):  # a state: its fields are what they claim
            request_id = stage_input.request_id
            prompt = getattr(stage_input, "prompt", None)
            if prompt is not None and prompt.prompt_sha256 is not None:
                metadata["prompt_sha256"] = prompt.prompt_sha256
        else:  # anything else is read through the fail-safe salvage, which never raises
            request_id = salvage_identity(stage_input)[0]
        if request_id is not None and len(request_id) <= _MAX_METADATA_ID:
            metadata["request_id"] = request_id
        return metadata

    # Call-time keyword options are ignored on purpose: a stage's behaviour is fixed by its
    # policy at construction, so nothing can change a pin (a stop sequence, a model) per call.
    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> OutputT:
        config = self._configured(input, config, asynchronous=False)
        return self._call_with_config(_read_once(self._guarded, _GUARDED), input, config)

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> OutputT:
        config = self._configured(input, config, asynchronous=True)
        return await self._acall_with_config(_read_once(self._aguarded, _AGUARDED), input, config)

    @override
    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        if not self.streams:
            yield from super().stream(input, config, **kwargs)
            return
        yield from self.transform(iter([input]), config, **kwargs)

    @override
    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        if not self.streams:
            async for item in super().astream(input, config, **kwargs):
                yield item
            return
        async for item in self.atransform(_one(input), config, **kwargs):
            yield item

    @override
    def transform(
        self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        if not self.streams:
            yield from super().transform(input, config, **kwargs)
            return
        items = iter(input)
        first = next(items, _NOTHING)
        if first is _NOTHING:
            return
        config = self._configured(subject_of(first), config, asynchronous=False)
        guarded = _read_stream_once(self._guarded_stream, _GUARDED_STREAM)
        yield from self._transform_stream_with_config(
            itertools.chain([first], items), guarded, config
        )

    @override
    async def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        if not self.streams:
            async for item in super().atransform(input, config, **kwargs):
                yield item
            return
        items = aiter(input)
        first = await anext(items, _NOTHING)
        if first is _NOTHING:
            return
        config = self._configured(subject_of(first), config, asynchronous=True)
        guarded = _read_stream_once(self._aguarded_stream, _AGUARDED_STREAM)
        async for item in self._atransform_stream_with_config(
            cast("AsyncIterator[InputT]", _prepend(first, items)), guarded, config
        ):
            yield item

    def _guarded_stream(
        self,
        items: Iterator[object],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Iterator[Any]:
        first = next(items)
        try:
            yield from self._stream(first, items, config)
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            yield self._failed_by_bug(subject_of(first), exc)

    async def _aguarded_stream(
        self,
        items: AsyncIterator[object],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[Any]:
        first = await anext(items)
        try:
            async for item in self._astream(first, items, config):
                yield item
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            yield self._failed_by_bug(subject_of(first), exc)

    # The stage function takes the input alone. Had it asked for ``config`` (or
    # ``run_manager``), LangChain would build the run's child config a second time to pass
    # it (one more child callback manager, config copy and metadata merge per stage); the
    # one it has already set in the context for the run's children is the same, so the
    # stage reads that (:func:`groundlock._lc.run_child_config`).
    def _guarded(self, stage_input: object) -> OutputT:
        try:
            return self._work(stage_input, run_child_config())
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            return self._failed_by_bug(stage_input, exc)

    async def _aguarded(self, stage_input: object) -> OutputT:
        try:
            return await self._awork(stage_input, run_child_config())
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            return self._failed_by_bug(stage_input, exc)

    def _failed_by_bug(self, stage_input: object, exc: Exception) -> OutputT:
        frames = "".join(traceback.format_tb(exc.__traceback__))
        logger.error(
            "stage %s failed closed with %s\n%s", self.get_name(), type(exc).__name__, frames
        )
        return self._fail_closed(
            stage_input,
            ReasonCode.INTERNAL_ERROR,
            f"{self.get_name()}: internal error ({type(exc).__name__})",
        )

    def _configured(
        self, stage_input: object, config: RunnableConfig | None, *, asynchronous: bool
    ) -> RunnableConfig:
        """``config`` with this stage's metadata, and its run hidden from stream readers.

        Only the metadata and the callbacks are read here; LangChain completes the config
        (defaults, the context's values) when it opens the run. A config that carries both,
        as a sequence hands each step, is used as it is; otherwise they are what
        ``ensure_config`` takes from the context.
        """
        if config is None or config.get("metadata") is None or config.get("callbacks") is None:
            config = ensure_config(config)
        metadata = {**config["metadata"], **self.trace_metadata(stage_input)}
        config = {**config, "metadata": metadata}
        if not streams_to_readers(config.get("callbacks")):
            return config
        config = ensure_config(config)
        manager = (
            get_async_callback_manager_for_config(config)
            if asynchronous
            else get_callback_manager_for_config(config)
        )
        patched = patch_config(config, callbacks=without_stream_readers(manager))
        # patch_config drops run_name and run_id along with the callbacks (they name one
        # run); the handlers changed, the run did not: a streamed run keeps its name and id.
        for key in ("run_name", "run_id"):
            if key in config:
                patched[key] = config[key]
        return patched


# LangChain reads the stage function's signature twice a run (does it take run_manager,
# config?). For a bound method, inspect rebuilds it from the function's each time (about
# 20 us a stage); for a plain function that has a ``__signature__`` it returns that. So a
# run is handed a plain function with the method's signature, computed once, here.
_GUARDED = inspect.signature(Stage._guarded).replace(
    parameters=tuple(inspect.signature(Stage._guarded).parameters.values())[1:]
)
_AGUARDED = inspect.signature(Stage._aguarded).replace(
    parameters=tuple(inspect.signature(Stage._aguarded).parameters.values())[1:]
)
_GUARDED_STREAM = inspect.signature(Stage._guarded_stream).replace(
    parameters=tuple(inspect.signature(Stage._guarded_stream).parameters.values())[1:]
)
_AGUARDED_STREAM = inspect.signature(Stage._aguarded_stream).replace(
    parameters=tuple(inspect.signature(Stage._aguarded_stream).parameters.values())[1:]
)


async def _one(item: object) -> AsyncIterator[object]:
    yield item


async def _prepend(first: object, rest: AsyncIterator[object]) -> AsyncIterator[object]:
    yield first
    async for item in rest:
        yield item


def _read_once(
    method: Callable[[object], T], signature: inspect.Signature
) -> Callable[[object], T]:
    """``method`` (bound) as a plain function whose signature inspect returns as given."""

    def call(stage_input: object) -> T:
        return method(stage_input)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


def _read_stream_once(
    method: Callable[[A, ManagerT, RunnableConfig], T], signature: inspect.Signature
) -> Callable[[A, ManagerT, RunnableConfig], T]:
    """:func:`_read_once` for a stream function (which takes its run manager and config)."""

    def call(items: A, run_manager: ManagerT, config: RunnableConfig) -> T:
        return method(items, run_manager, config)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


class PolicyStage(Stage[InputT, OutputT]):
    """A stage configured by a policy (a ``Policy`` or a version name), checked at build time.

    The policy's identity (a built-in name must carry the built-in content), its template
    and its tokenizer are all verified when the stage is constructed, never per request.
    """

    policy: Policy = Field(default_factory=lambda: load_policy(DEFAULT_POLICY))
    """Frozen policy; its version and sha256 travel in every trace."""

    @override
    def trace_metadata(self, stage_input: object) -> dict[str, str]:
        return {
            "policy_version": self.policy.policy_version,
            "policy_sha256": self.policy.policy_sha256,
            **super().trace_metadata(stage_input),
        }

    @field_validator("policy", mode="before")
    @classmethod
    def _load_named_policy(cls, value: object) -> object:
        policy = load_policy(value) if isinstance(value, str) else value
        if isinstance(policy, Policy):
            check_policy_identity(policy)
            resolve_policy(policy)  # its ruleset, template and tokenizer, checked once
        return policy


class StateStage(PolicyStage[StateT, OutputT], Generic[StateT, OutputT]):
    """A stage that takes a run state: admission, policy check and pass-through, once.

    A subclass names the state it ``consumes``, the outcomes it ``runs_on``, and provides
    ``_run`` (its work on an admitted state), ``_passed_over`` (its output for a state it
    does not run on) and, for input that arrived as data, ``verify``.
    """

    consumes: ClassVar[type[Assembled]] = Assembled
    runs_on: ClassVar[frozenset[GenerationStatus]] = frozenset({GenerationStatus.OK})

    def _run(self, state: StateT, config: RunnableConfig) -> OutputT:
        raise NotImplementedError

    async def _arun(self, state: StateT, config: RunnableConfig) -> OutputT:
        return self._run(state, config)

    def _passed_over(self, state: StateT) -> OutputT:
        raise NotImplementedError

    def verify(self, state: StateT) -> Outcome | None:
        """Why a state that arrived as data may not go on (a FAILED outcome), or None.

        Called only for data: a state instance comes from the stage before, in this
        process. By default, nothing beyond the contracts' own checks.
        """
        return None

    @override
    def _work(self, stage_input: object, config: RunnableConfig) -> OutputT:
        state = self._admitted(stage_input)
        if state.status in self.runs_on:
            return self._run(state, config)
        return self._passed_over(state)

    @override
    async def _awork(self, stage_input: object, config: RunnableConfig) -> OutputT:
        state = self._admitted(stage_input)
        if state.status in self.runs_on:
            return await self._arun(state, config)
        return self._passed_over(state)

    def _admitted(self, stage_input: object) -> StateT:
        """``stage_input`` as this stage's input state, FAILED if it may not go on."""
        consumes = self.consumes
        if isinstance(stage_input, consumes):
            state = stage_input
            from_data = False
        else:
            try:
                state = consumes.model_validate(stage_input)
            except ValidationError as exc:
                return self._failed_input(stage_input, describe_invalid(exc, consumes))
            from_data = True
        problem: Outcome | None = None
        if state.policy_sha256 != self.policy.policy_sha256:
            # (The message reaches the caller: it names neither policy.)
            problem = Outcome.failed(
                ReasonCode.INPUT_SCHEMA_INVALID,
                "state: built under another policy than this stage's",
            )
        elif from_data and state.status is not GenerationStatus.FAILED:
            problem = self.verify(state)  # type: ignore[arg-type]
        if problem is not None:
            state = state.with_outcome(problem)
        return state  # type: ignore[return-value]

    def _failed_input(self, stage_input: object, message: str) -> StateT:
        outcome = Outcome.failed(ReasonCode.INPUT_SCHEMA_INVALID, message)
        if isinstance(stage_input, Assembled):  # a state of an earlier stage: keep its identity
            failed = stage_input.with_outcome(outcome)
        else:
            reason = ReasonCode.INPUT_SCHEMA_INVALID
            failed = failed_state(stage_input, self.policy, reason, message)
        return advanced(failed, self.consumes, self.policy)  # type: ignore[return-value]

    @override
    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> OutputT:
        outcome = Outcome.failed(reason, message)
        if isinstance(stage_input, self.consumes):
            return self._passed_over(stage_input.with_outcome(outcome))  # type: ignore[arg-type]
        failed = self._failed_input(stage_input, message)
        return self._passed_over(failed.with_outcome(outcome))


def describe_invalid(exc: ValidationError, model: type[Any]) -> str:
    """The first problem of ``exc``, by field path, never quoting the input."""
    first = exc.errors(include_url=False, include_input=False)[0]
    location = ".".join(str(part) for part in first["loc"]) or "input"
    return f"{location}: {first['msg']} (expected a {model.__name__})"
