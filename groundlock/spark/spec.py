"""``ChainSpec``: what each Spark worker builds its chain from, and the chains it keeps.

What runs where. The driver only plans: it builds no chain and opens no table. Each Python
worker process builds the chain of a :class:`ChainSpec` once (kept per process, keyed by
the spec) and reuses it for every task Spark gives it, so a policy, a token encoder and a
model client are loaded once per worker, not once per row or batch.
"""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.stores.location import delta_location

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import RunnableSequence

    from groundlock.policies.model import Policy
    from groundlock.runnables.retrieve import RetrievalFront
    from groundlock.stores.delta import DeltaAuditStore

__all__ = ["ChainSpec", "Worker", "built"]


@dataclass(frozen=True)
class ChainSpec:
    """What each worker builds its chain from: picklable, built where it runs.

    ``model`` is a ``provider:model`` string, a picklable callable returning a LangChain
    chat model (a local test double, a configured client), or None for the offline
    extractive model. ``policy`` a built-in name or a policy file's path the workers can
    read (by default the library's default, or ``R2_POLICY_V4_LEXICAL`` over a lexical
    ``index``). ``store`` the audit trail's path or URI (every worker writes to it);
    ``index`` a Delta index (built by ``groundlock index``) for question input.
    """

    policy: str | None = None
    model: str | Callable[[], BaseChatModel] | None = None
    store: str | None = None
    storage_options: dict[str, str] | None = None
    index: str | None = None
    top_k: int = 8
    max_concurrency: int = 4
    """Model calls in flight per worker process."""
    requests_per_second: float | None = None
    """Model calls started per second per worker process (None: unpaced)."""
    key: str = field(init=False, compare=False)
    """Which built chain a worker reuses: drawn for every new spec (``dataclasses.replace``
    included), kept when the spec is pickled to the workers."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", uuid.uuid4().hex)
        if not 1 <= self.max_concurrency <= 256:
            raise ValueError("max_concurrency must be between 1 and 256")
        if self.requests_per_second is not None and not self.requests_per_second > 0:
            raise ValueError("requests_per_second must be positive")
        if not 1 <= self.top_k <= 100:
            raise ValueError("top_k must be between 1 and 100")
        # Here, on the driver: a relative local path is the driver's (a worker's working
        # directory is Spark's own), and a path delta-rs cannot open fails the call, not
        # every task.
        for name in ("store", "index"):
            location = getattr(self, name)
            if location is not None:
                object.__setattr__(self, name, delta_location(location))

    def build(self) -> Worker:
        """The chain and what goes with it, as a worker builds them (also usable locally)."""
        from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
        from groundlock.stores.delta import DeltaAuditStore  # noqa: PLC0415

        front = None
        policy_name = self.policy or DEFAULT_POLICY
        if self.index is not None:
            from groundlock.lakehouse import LEXICAL_POLICY, open_lexical_index  # noqa: PLC0415
            from groundlock.runnables.retrieve import RetrievalFront  # noqa: PLC0415

            index = open_lexical_index(self.index, storage_options=self.storage_options)
            front = RetrievalFront.over_index(index, top_k=self.top_k)
            policy_name = self.policy or LEXICAL_POLICY
        policy = load_policy(policy_name)
        # Every worker of a job appends to one trail, and appends are serialised across
        # writers (the key guard): a commit may lose a few races before it lands.
        store = (
            DeltaAuditStore(self.store, self.storage_options, commit_attempts=_COMMIT_ATTEMPTS)
            if self.store is not None
            else None
        )
        chain = grounded_answer_chain(
            model=self._model(policy), policy=policy, store=store, front=front
        )
        return Worker(chain=chain, store=store, policy=policy, front=front)

    def _model(self, policy: Policy) -> BaseChatModel:
        from groundlock.providers.chat import chat_model_from_spec  # noqa: PLC0415
        from groundlock.providers.extractive import ExtractiveChatModel  # noqa: PLC0415

        if isinstance(self.model, str):
            model = chat_model_from_spec(self.model)
        elif self.model is not None:
            model = self.model()
        else:
            model = ExtractiveChatModel(
                refusal_text=policy.refusal_text, firewall_ruleset=policy.firewall_ruleset
            )
        if self.requests_per_second is None:
            return model
        from langchain_core.rate_limiters import InMemoryRateLimiter  # noqa: PLC0415

        limiter = InMemoryRateLimiter(
            requests_per_second=self.requests_per_second,
            check_every_n_seconds=min(0.1, 0.5 / self.requests_per_second),
            max_bucket_size=1,  # no burst: a worker never starts more than the pace allows
        )
        return model.model_copy(update={"rate_limiter": limiter})


@dataclass(frozen=True, slots=True)
class Worker:
    """A worker process's chain, with the store, policy and front it was built with."""

    chain: RunnableSequence[Any, Any]
    store: DeltaAuditStore | None
    policy: Policy
    front: RetrievalFront | None


_BUILT: dict[str, Worker] = {}
_BUILD_LOCK = threading.Lock()
_KEEP_BUILT = 4
"""Chains a worker process keeps: a long-lived worker runs job after job, each with a spec
of its own; the oldest is dropped (and its store closed) when a fifth arrives."""
_COMMIT_ATTEMPTS = 30


def built(spec: ChainSpec) -> Worker:
    """This process's chain for ``spec``: built on its first task, reused by the next."""
    with _BUILD_LOCK:
        if spec.key not in _BUILT:
            while len(_BUILT) >= _KEEP_BUILT:
                oldest = _BUILT.pop(next(iter(_BUILT)))
                if oldest.store is not None:
                    oldest.store.close()
            _BUILT[spec.key] = spec.build()
            # The chain lives as long as the worker: out of the collector's sight, so a full
            # collection does not walk it every few large bundles (as groundlock serve does).
            gc.freeze()
        return _BUILT[spec.key]
