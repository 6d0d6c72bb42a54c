"""``grounded_answer_chain``: the whole pipeline as one plain LCEL ``RunnableSequence``."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableSequence

from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import Policy
from groundlock.providers.extractive import ExtractiveChatModel
from groundlock.runnables.assemble import AssembleEvidence
from groundlock.runnables.build import BuildPrompt
from groundlock.runnables.execute import ExecuteModel
from groundlock.runnables.package import PackageResponse
from groundlock.runnables.record import RecordValidation
from groundlock.runnables.retrieve import RetrievalFront
from groundlock.runnables.validate import ValidateAnswer
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.delta import DeltaAuditStore
from groundlock.stores.sink import AuditSink

__all__ = ["CHAIN_NAME", "grounded_answer_chain"]

CHAIN_NAME = "groundlock.grounded_answer"
"""The run name of the whole chain in traces."""


def grounded_answer_chain(
    *,
    model: BaseChatModel | str | None = None,
    policy: str | Policy = DEFAULT_POLICY,
    allow_provider_storage: bool = False,
    store: AuditSink | str | os.PathLike[str] | None = None,
    judge: BaseChatModel | str | Runnable[Any, Any] | None = None,
    front: RetrievalFront | None = None,
    archive: EvidenceArchive | str | os.PathLike[str] | None = None,
) -> RunnableSequence[Any, Any]:
    """A retrieval bundle in (or, with a ``front``, a question), a public response out.

    ``model`` is any LangChain chat model or a ``provider:model`` string, pinned at
    construction (by default the offline :class:`ExtractiveChatModel`); ``policy`` a
    version name or a loaded :class:`Policy`, shared by every stage. The chain is
    R2 | R3 | R4 | R5 | R6, a plain ``RunnableSequence``: each stage a named run, one run
    state passed from stage to stage (:mod:`groundlock.contracts.state`), a non-OK outcome
    passed through without work, and nothing returned, streamed or logged before R5 has
    validated the answer; R6 returns the :class:`~groundlock.PublicResponse`.

    With a ``front`` (a :class:`~groundlock.RetrievalFront`), R1 comes first: the chain
    takes a question (a string or a request mapping), and the front checks it under the
    chain's policy.

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

    With an ``archive`` too (an :class:`~groundlock.stores.archive.EvidenceArchive`, or a
    path or URI of its own Delta table), each request's evidence, prompt and raw model text
    are archived before its audit rows, for ``groundlock replay`` and ``records show``. It
    is off by default: the archive holds text the firewall refused, and is never served.

    >>> chain = grounded_answer_chain()
    >>> [step.name for step in chain.steps]
    ['R2.AssembleEvidence', 'R3.BuildPrompt', 'R4.ExecuteModel', 'R5.ValidateAnswer', \
'R6.PackageResponse']
    >>> chain.invoke({"request_id": "r1"}).failure_reason.value
    'INPUT_SCHEMA_INVALID'
    """
    loaded = load_policy(policy) if isinstance(policy, str) else policy
    steps: list[Runnable[Any, Any]] = []
    if front is not None:
        # The front's gates (question limits and token budget) must be the chain's.
        steps.append(
            front if front.policy == loaded else front.model_copy(update={"policy": loaded})
        )
    steps += [
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
    if archive is not None and store is None:
        raise ValueError("an evidence archive needs a store: it is written with the trail")
    if store is not None:
        audit = store if isinstance(store, AuditSink) else DeltaAuditStore(store)
        kept = (
            archive
            if archive is None or isinstance(archive, EvidenceArchive)
            else EvidenceArchive(archive)
        )
        steps.append(RecordValidation(store=audit, policy=loaded, archive=kept))
    steps.append(PackageResponse(policy=loaded))
    return RunnableSequence(*steps, name=CHAIN_NAME)
