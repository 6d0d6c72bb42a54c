"""Every private LangChain name groundlock touches, in one module, with a shape check.

groundlock uses LangChain's public API everywhere else. A private name appears here only
where a safety property needs it:

* **Stage data stays out of event streams.** ``astream_events`` and ``astream_log`` are how
  an app streams to its readers; a stage's run would hand them the evidence, the prompt
  and the model's answer before R5 has judged it. Their handlers carry LangChain's own
  marks (``_StreamingCallbackHandler``, ``_V2StreamingCallbackHandler``), which LangChain
  checks itself; :func:`without_stream_readers` removes those handlers from a stage's run.
* **A retriever's search reports to no one.** R1's search would otherwise report every
  document it found, denied ones included, to callbacks, tracers and event streams:
  :func:`search_unobserved` runs it with the context's observers cleared (the configure
  hooks, the tracing context variable, the inherited child config) and calls the
  retriever's documented override point, ``_get_relevant_documents``, without a run.
* **A store's relevance scale is the store's.** ``_select_relevance_score_fn`` names it.
* **A stage reads its run's child config where LangChain put it.** While a run's function
  runs, LangChain holds the config for the run's children in ``var_child_runnable_config``
  (that is how a runnable called without a config is parented under the run). A stage
  function that asked for ``config`` would make LangChain build that config a second
  time; :func:`run_child_config` reads the one already built.
* **Pinning is verified against the bytes LangChain would send.** langchain-openai's
  ``_get_request_payload`` builds the request an OpenAI-family model will make.

:func:`check_shape` runs at import: a changed langchain-core name or shape raises
:class:`LangChainShapeError` at once, rather than letting a guard fail open.
:func:`check_openai_shape` does the same for the langchain-openai name when an OpenAI-family
model is pinned (:func:`groundlock.providers.chat.pin_model`), before its payload is built:
importing langchain-openai loads the openai SDK, which a chain on another model never needs.
The conformance test (``tests/test_lc_shape.py``) also checks that LangChain has no stream
handler this module does not know.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackManager,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langchain_core.tracers._streaming import (
    _StreamingCallbackHandler,
    _V2StreamingCallbackHandler,
)
from langchain_core.tracers.context import _configure_hooks, tracing_v2_callback_var
from langchain_core.vectorstores import VectorStore
from langsmith import tracing_context

from groundlock.errors import GroundlockError

__all__ = [
    "STREAM_READER_MARKS",
    "LangChainShapeError",
    "asearch_unobserved",
    "check_openai_shape",
    "check_shape",
    "openai_request_payload",
    "relevance_function",
    "run_child_config",
    "search_unobserved",
    "streams_to_readers",
    "without_stream_readers",
]

STREAM_READER_MARKS: tuple[type, ...] = (_StreamingCallbackHandler, _V2StreamingCallbackHandler)
"""The classes LangChain marks the handlers of ``astream_events``/``astream_log`` with."""

ManagerT = TypeVar("ManagerT", bound=BaseCallbackManager)


class LangChainShapeError(GroundlockError):
    """A private LangChain name groundlock relies on is missing or has another shape."""


def streams_to_readers(callbacks: object) -> bool:
    """Whether ``callbacks`` (a config's: a manager, a list or None) holds a stream reader.

    ``astream_events`` and ``astream_log`` put their handler in the run's config. A
    configure hook (a context variable LangChain adds handlers from) could bring one too, so
    while any hook is set the answer is yes, to be safe; otherwise a config without a
    stream reader needs no filtering, and a stage leaves its callbacks as they are.
    """
    if any(hook.get() is not None for hook, *_ in _configure_hooks):
        return True
    if callbacks is None:
        return False
    if isinstance(callbacks, BaseCallbackManager):
        handlers = [*callbacks.handlers, *callbacks.inheritable_handlers]
    elif isinstance(callbacks, list):
        handlers = callbacks
    else:
        return True  # unknown shape: filter, to be safe
    return any(isinstance(handler, STREAM_READER_MARKS) for handler in handlers)


def without_stream_readers(manager: ManagerT) -> ManagerT:
    """``manager`` without the handlers that stream to an application's readers.

    Only for a run nested in another (a stage in the chain): a stage invoked on its own is
    the root run, and is what its caller streams. ``manager`` must be the run's own copy.
    """
    if manager.parent_run_id is None:
        return manager
    for handler in [*manager.handlers, *manager.inheritable_handlers]:
        if isinstance(handler, STREAM_READER_MARKS):
            manager.remove_handler(handler)
    return manager


def run_child_config() -> RunnableConfig:
    """The config of the children of the run in progress, as LangChain set it for them.

    Inside a function that ``_call_with_config`` or ``_acall_with_config`` runs, this is
    the very config LangChain would pass as the function's ``config`` argument (the run's
    config with the run's child callbacks), without building it again: read it, never
    change it. Outside a run, :func:`~langchain_core.runnables.config.ensure_config`'s.
    """
    config = var_child_runnable_config.get()
    return config if config is not None else ensure_config()


def _clear_observers() -> None:
    """Clear, in the current (copied) context, everything that could observe a run."""
    var_child_runnable_config.set(None)
    tracing_v2_callback_var.set(None)
    for hook, *_ in _configure_hooks:
        hook.set(None)


def _search(retriever: BaseRetriever, question: str) -> list[Document]:
    _clear_observers()
    with tracing_context(enabled=False):
        if retriever._new_arg_supported:
            noop = CallbackManagerForRetrieverRun.get_noop_manager()
            return retriever._get_relevant_documents(question, run_manager=noop)
        return retriever._get_relevant_documents(question)  # type: ignore[call-arg]


async def _asearch(retriever: BaseRetriever, question: str) -> list[Document]:
    _clear_observers()
    with tracing_context(enabled=False):
        if retriever._new_arg_supported:
            noop = AsyncCallbackManagerForRetrieverRun.get_noop_manager()
            return await retriever._aget_relevant_documents(question, run_manager=noop)
        return await retriever._aget_relevant_documents(question)  # type: ignore[call-arg]


def search_unobserved(retriever: BaseRetriever, question: str) -> list[Document]:
    """The retriever's own search, with no run, callback or tracer to see its documents.

    ``retriever.invoke`` minus its run, in a copy of the context where nothing observes what
    the search calls in turn; the caller's context is untouched.
    """
    return contextvars.copy_context().run(_search, retriever, question)


async def asearch_unobserved(retriever: BaseRetriever, question: str) -> list[Document]:
    """Async twin of :func:`search_unobserved` (a task runs in a copy of the context)."""
    import asyncio  # noqa: PLC0415  (only the async path needs it)

    return await asyncio.create_task(_asearch(retriever, question))


def relevance_function(store: VectorStore) -> Callable[[float], float]:
    """The store's own map from raw scores to relevance in [0, 1].

    Raises ``NotImplementedError`` for a store that defines none.
    """
    return store._select_relevance_score_fn()


def openai_request_payload(model: Any, messages: list[BaseMessage]) -> Mapping[str, Any]:  # noqa: ANN401  (any BaseChatOpenAI)
    """The request body langchain-openai would send for ``messages`` (no network call)."""
    payload: Mapping[str, Any] = model._get_request_payload(messages)
    return payload


def check_shape() -> None:
    """Raise :class:`LangChainShapeError` if a private langchain-core name changed its shape.

    The langchain-openai name is :func:`check_openai_shape`'s.
    """
    problems = [
        f"{mark!r} is no longer a class"
        for mark in STREAM_READER_MARKS
        if not isinstance(mark, type)
    ]
    if not isinstance(var_child_runnable_config, contextvars.ContextVar):
        problems.append("var_child_runnable_config is no longer a ContextVar")
    if not isinstance(_configure_hooks, list) or any(
        not isinstance(entry, tuple)
        or len(entry) != 4
        or not isinstance(entry[0], contextvars.ContextVar)
        for entry in _configure_hooks
    ):
        problems.append("_configure_hooks is no longer a list of (ContextVar, ...) 4-tuples")
    for owner, name in (
        (BaseRetriever, "_get_relevant_documents"),
        (BaseRetriever, "_aget_relevant_documents"),
        (VectorStore, "_select_relevance_score_fn"),
    ):
        if not callable(getattr(owner, name, None)):
            problems.append(f"{owner.__name__}.{name} is gone")
    if problems:
        raise LangChainShapeError(
            "langchain-core changed a name groundlock's safety relies on: " + "; ".join(problems)
        )


def check_openai_shape() -> None:
    """Raise :class:`LangChainShapeError` if :func:`openai_request_payload`'s name is gone.

    Called each time an OpenAI-family model is pinned, before its request is built (a
    ``getattr``: cheap next to the rebuild), so a changed name refuses the model instead of
    letting the pin check fail open.
    """
    from langchain_openai.chat_models.base import BaseChatOpenAI  # noqa: PLC0415  (the SDK)

    if not callable(getattr(BaseChatOpenAI, "_get_request_payload", None)):
        raise LangChainShapeError(
            "langchain-openai changed a name groundlock's safety relies on: "
            "BaseChatOpenAI._get_request_payload is gone"
        )


check_shape()
