"""The shell every groundlock stage shares: typed, traced, and closed on failure.

A stage's decision lives in a pure function; the stage only routes LCEL calls to it. Both
``invoke`` and ``ainvoke`` open the same named run (callbacks, tracing metadata,
``run_name``) and end in the same ``_run``: there is no second, async copy of the logic to
drift.

If ``_run`` raises, that is a bug, not bad input (bad input is a FAILED result by design).
The stage logs the traceback without the exception message, which may quote evidence, and
returns the stage's FAILED output with ``INTERNAL_ERROR``: it fails closed, never open.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from typing import Any, TypeGuard, TypeVar

from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackManager, CallbackManager
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
)
from langchain_core.tracers._streaming import (  # the two marks LangChain checks itself
    _StreamingCallbackHandler,
    _V2StreamingCallbackHandler,
)
from pydantic import BaseModel, Field, ValidationError, field_validator
from typing_extensions import override

from groundlock.contracts.reasons import ReasonCode
from groundlock.policies.loader import DEFAULT_POLICY, check_policy_identity, load_policy
from groundlock.policies.model import Policy
from groundlock.prompts.template import load_template
from groundlock.text.tokens import get_token_counter

__all__ = [
    "AsyncQuietCallbackManager",
    "PolicyStage",
    "QuietCallbackManager",
    "Stage",
    "coerce_input",
]

logger = logging.getLogger("groundlock")

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")
ModelT = TypeVar("ModelT", bound=BaseModel)

_MAX_METADATA_ID = 200


class Stage(RunnableSerializable[InputT, OutputT]):
    """Base class of the pipeline stages (not part of the public API)."""

    def _run(self, stage_input: object, config: RunnableConfig) -> OutputT:
        """The stage's work; ``config`` carries the child callbacks for nested runs."""
        raise NotImplementedError

    async def _arun(self, stage_input: object, config: RunnableConfig) -> OutputT:
        """Async twin of ``_run``; only stages doing I/O override it."""
        return self._run(stage_input, config)

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> OutputT:
        raise NotImplementedError

    @property
    def has_own_callbacks(self) -> bool:
        """Whether something inside the stage (R4's model) carries handlers of its own."""
        return False

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

    def trace_metadata(self, stage_input: object) -> dict[str, str]:
        """What this stage's run carries as tracing metadata (and passes to its child runs).

        ``request_id`` of the request and, once R3 has built it, ``prompt_sha256``: enough to
        find every run of one request, and to group runs that sent the same prompt bytes.
        """
        metadata: dict[str, str] = {}
        if isinstance(stage_input, Mapping):
            request_id = stage_input.get("request_id")
        else:
            request_id = getattr(stage_input, "request_id", None)
            prompt_sha256 = getattr(stage_input, "prompt_sha256", None)
            if isinstance(prompt_sha256, str):
                metadata["prompt_sha256"] = prompt_sha256
        if isinstance(request_id, str) and len(request_id) <= _MAX_METADATA_ID:
            metadata["request_id"] = request_id
        return metadata

    # The run plumbing of ``Runnable._call_with_config``, done directly: that helper inspects
    # the wrapped function's signature and copies the context on every call, which costs
    # more than most stages' own work. Callbacks, run names, run ids, tags and metadata reach
    # handlers exactly as before; the model in R4 receives its child config explicitly.
    # Call-time keyword options are ignored on purpose: a stage's behaviour is fixed by its
    # policy at construction, so nothing can change a pin (a stop sequence, a model) per call.
    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> OutputT:
        if _unobserved(config):
            try:
                return self._run(input, config)
            except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
                return self._failed_by_bug(input, exc)
        config = self._traced(input, config)
        run_manager = _for_tracers(get_callback_manager_for_config(config)).on_chain_start(
            None,
            input,
            name=config.get("run_name") or self.get_name(),
            run_id=config.pop("run_id", None),
        )
        try:
            output = self._run(input, patch_config(config, callbacks=run_manager.get_child()))
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            output = self._failed_by_bug(input, exc)
        except BaseException as exc:  # interrupts are not bugs: report and propagate
            run_manager.on_chain_error(exc)
            raise
        run_manager.on_chain_end(output)
        return output

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> OutputT:
        if _unobserved(config):
            try:
                return await self._arun(input, config)
            except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
                return self._failed_by_bug(input, exc)
        config = self._traced(input, config)
        manager = _for_tracers(get_async_callback_manager_for_config(config))
        run_manager = await manager.on_chain_start(
            None,
            input,
            name=config.get("run_name") or self.get_name(),
            run_id=config.pop("run_id", None),
        )
        try:
            child = patch_config(config, callbacks=run_manager.get_child())
            output = await self._arun(input, child)
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            output = self._failed_by_bug(input, exc)
        except BaseException as exc:  # cancellation and interrupts propagate
            await run_manager.on_chain_error(exc)
            raise
        await run_manager.on_chain_end(output)
        return output

    def _traced(self, stage_input: object, config: RunnableConfig | None) -> RunnableConfig:
        config = ensure_config(config)
        return {**config, "metadata": {**config["metadata"], **self.trace_metadata(stage_input)}}


ManagerT = TypeVar("ManagerT", bound=BaseCallbackManager)


def _for_tracers(manager: ManagerT) -> ManagerT:
    """``manager`` without the handlers that stream to an application's readers.

    ``astream_events`` and ``astream_log`` (and their v3 successor) are how LangChain apps
    stream to the people reading the answer, and they report every run: a stage's run
    would hand them the retrieved evidence, the prompt and the model's answer before R5
    has judged it, and the model's run its raw tokens. So those handlers see the chain's
    own run only (the caller's input, then the validated response), never a stage or the
    model inside one. Tracers, ``collect_runs``, LangSmith and any other handler still see
    every stage with its metadata. A stage invoked on its own is the root run and keeps
    them: it is what its caller streams. ``manager`` is the stage's own copy: removing from
    it changes no other run's handlers.
    """
    if manager.parent_run_id is None:
        return manager  # the stage is the root run: it is what the caller streams
    for handler in [*manager.handlers, *manager.inheritable_handlers]:
        if isinstance(handler, _StreamingCallbackHandler | _V2StreamingCallbackHandler):
            manager.remove_handler(handler)
    return manager


class QuietCallbackManager(CallbackManager):
    """What a :class:`~groundlock.GroundedAnswerChain` hands its stages when nobody listens.

    The chain configures callbacks once per request, exactly as LangChain does for any
    run (handlers passed in, LangSmith tracing from the environment or a context, debug
    output, ``collect_runs``). Only when that finds no handler at all, and no stage brings
    handlers of its own, does it pass this empty manager down: a stage that receives it
    calls its work directly instead of opening a run that would report to no one. A stage
    invoked any other way (on its own, or inside another graph) always opens its run.
    """


class AsyncQuietCallbackManager(AsyncCallbackManager):
    """The async twin of :class:`QuietCallbackManager`."""


def _unobserved(config: RunnableConfig | None) -> TypeGuard[RunnableConfig]:
    callbacks = config.get("callbacks") if config else None
    return (
        isinstance(callbacks, QuietCallbackManager | AsyncQuietCallbackManager)
        and not callbacks.handlers
    )


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
            get_token_counter(policy.token_encoding)
            load_template(policy.prompt_template)
        return policy


def coerce_input(model: type[ModelT], value: object) -> ModelT | str:
    """``value`` as ``model`` (a dict from JSON is validated), or a message saying why not.

    Stages after R2 normally receive the previous stage's model instance; a dict appears
    only when a stage is invoked on its own, e.g. through a server.
    """
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        location = ".".join(str(part) for part in first["loc"]) or "input"
        return f"{location}: {first['msg']} (expected a {model.__name__})"
