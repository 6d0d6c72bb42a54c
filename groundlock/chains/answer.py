"""``grounded_answer_chain``: the whole pipeline as one LCEL ``RunnableSequence``."""

from __future__ import annotations

import os
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
)
from typing_extensions import override

from groundlock.contracts.response import PublicResponse
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import Policy
from groundlock.providers.extractive import ExtractiveChatModel
from groundlock.runnables._stage import AsyncQuietCallbackManager, QuietCallbackManager, Stage
from groundlock.runnables.assemble import AssembleEvidence
from groundlock.runnables.execute import ExecuteModel
from groundlock.runnables.package import PackageResponse
from groundlock.runnables.prompt import BuildPrompt
from groundlock.runnables.record import RecordValidation
from groundlock.runnables.validate import ValidateAnswer
from groundlock.stores.delta import DeltaAuditStore
from groundlock.stores.sink import AuditSink

__all__ = ["CHAIN_NAME", "GroundedAnswerChain", "grounded_answer_chain"]

CHAIN_NAME = "groundlock.grounded_answer"
"""The run name of the whole chain in traces."""


class GroundedAnswerChain(RunnableSequence[Any, PublicResponse]):
    """The stages as one ``RunnableSequence`` that opens no run nobody would see.

    With any callback handler (a ``callbacks=[...]`` argument, LangSmith tracing,
    ``collect_runs``, debug output, or handlers set on the model itself) ``invoke`` and
    ``ainvoke`` are exactly ``RunnableSequence``'s: the chain and each stage are runs with
    their metadata. With none, ``RunnableSequence`` would still build a child callback
    manager, copy the config and (async) schedule a task for every step, about 80 us a step,
    to report to no one; here the steps are called in turn instead. ``batch`` and ``stream``
    are inherited unchanged.
    """

    def __init__(self, *steps: Runnable[Any, Any], name: str | None = None) -> None:
        super().__init__(*steps, name=name)

    def _traced(self, chain_input: object, config: RunnableConfig) -> RunnableConfig:
        # The chain's own run carries the request's id and the policy, like its stages, so
        # a trace can be found by request_id from the top.
        first = self.first
        metadata = first.trace_metadata(chain_input) if isinstance(first, Stage) else {}
        return {**config, "metadata": {**config.get("metadata", {}), **metadata}}

    def _observed(self, manager: BaseCallbackManager) -> bool:
        # A model built with callbacks=[...] is observed too: its handler expects the stage
        # runs as parents and their metadata, so the chain keeps every run open.
        return bool(
            manager.handlers
            or manager.inheritable_handlers
            or any(isinstance(s, Stage) and s.has_own_callbacks for s in self.steps)
        )

    @override
    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        config = ensure_config(config)
        manager = get_callback_manager_for_config(config)
        if self._observed(manager):
            return super().invoke(input, self._traced(input, config), **kwargs)
        quiet = _quiet(config, QuietCallbackManager(handlers=[]))
        for step in self.steps:
            input = step.invoke(input, quiet)
        return cast("PublicResponse", input)

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        config = ensure_config(config)
        manager = get_async_callback_manager_for_config(config)
        if self._observed(manager):
            return await super().ainvoke(input, self._traced(input, config), **kwargs)
        quiet = _quiet(config, AsyncQuietCallbackManager(handlers=[]))
        for step in self.steps:
            input = await step.ainvoke(input, quiet)
        return cast("PublicResponse", input)


def _quiet(config: RunnableConfig, manager: BaseCallbackManager) -> RunnableConfig:
    """``patch_config(config, callbacks=manager)`` without its second ``ensure_config``.

    The steps get the (empty) manager; the chain's own run name and id stay with the chain.
    """
    quiet = config.copy()
    quiet["callbacks"] = manager
    quiet.pop("run_name", None)
    quiet.pop("run_id", None)
    return quiet


def grounded_answer_chain(
    *,
    model: BaseChatModel | str | None = None,
    policy: str | Policy = DEFAULT_POLICY,
    allow_provider_storage: bool = False,
    store: AuditSink | str | os.PathLike[str] | None = None,
    judge: BaseChatModel | str | Runnable[Any, Any] | None = None,
) -> GroundedAnswerChain:
    """A retrieval bundle in, a :class:`~groundlock.PublicResponse` out.

    ``model`` is any LangChain chat model or a ``provider:model`` string, pinned at
    construction (by default the offline :class:`ExtractiveChatModel`); ``policy`` a
    version name or a loaded :class:`Policy`, shared by every stage. The chain is
    R2 | R3 | R4 | R5 | R6: each stage a named run, a non-OK status passed through without
    work, and nothing returned, streamed or logged before R5 has validated the answer.

    A policy that names a ``support_judge`` (``R2_POLICY_V2_JUDGED``) needs a ``judge``: a
    chat model or ``provider:model`` string (pinned like the answering model, given the
    frozen judge prompt) or any runnable mapping ``{"sentence", "evidence"}`` to
    ``{"verdict", "score"}``; R5 asks it about every cited sentence of an answer that passed
    the deterministic rules.

    With a ``store`` (any :class:`~groundlock.stores.AuditSink`, such as a
    :class:`~groundlock.DeltaAuditStore`, or a path or URI to open a Delta store at),
    :class:`~groundlock.runnables.record.RecordValidation` runs between R5 and R6: every
    request's validation and query rows are durable before its response is packaged, and a
    request whose rows cannot be made durable fails closed with ``AUDIT_WRITE_FAILED``.

    >>> chain = grounded_answer_chain()
    >>> [step.name for step in chain.steps]
    ['R2.AssembleEvidence', 'R3.BuildPrompt', 'R4.ExecuteModel', 'R5.ValidateAnswer', \
'R6.PackageResponse']
    >>> chain.invoke({"request_id": "r1"}).failure_reason.value
    'INPUT_SCHEMA_INVALID'
    """
    loaded = load_policy(policy) if isinstance(policy, str) else policy
    steps: list[Runnable[Any, Any]] = [
        AssembleEvidence(policy=loaded),
        BuildPrompt(policy=loaded),
        ExecuteModel.model_validate(
            {
                "model": model
                if model is not None
                else ExtractiveChatModel(
                    refusal_text=loaded.refusal_text, firewall_ruleset=loaded.firewall_ruleset
                ),
                "policy": loaded,
                "allow_provider_storage": allow_provider_storage,
            }
        ),
        ValidateAnswer(policy=loaded, judge=judge),
    ]
    if store is not None:
        audit = store if isinstance(store, AuditSink) else DeltaAuditStore(store)
        steps.append(RecordValidation(store=audit))
    steps.append(PackageResponse(policy=loaded))
    return GroundedAnswerChain(*steps, name=CHAIN_NAME)
