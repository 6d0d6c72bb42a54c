"""What the stages pass each other while a request streams (never seen outside the chain).

In ``chain.stream`` each stage's ``transform`` reads the stream of the stage before. From
R4 on, that stream is a few of these items and then the stage's usual output state:

* R4 yields :class:`Opened` (the request whose model is now streaming), then
  :class:`ModelText` for each piece of text the model sends, then its ``Answered`` state;
* R5 passes :class:`Opened` on, turns the model's text into :class:`Released` sentences
  (each judged), and ends with its ``Judged`` state; the audit step passes them on;
* R6 turns them into the public events of :mod:`groundlock.contracts.stream`.

Model text stops at R5: no stage after it ever receives any. The stages themselves are
hidden from event streams, so none of these items reaches an ``astream_events`` reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config

from groundlock.contracts.state import Assembled
from groundlock.core.streaming import Piece

__all__ = [
    "ModelText",
    "Opened",
    "Released",
    "Withdrawn",
    "subject_of",
    "without_token_events",
]


@dataclass(frozen=True, slots=True)
class Opened:
    """The request whose answer is now being produced: its identity for the stages after."""

    state: Assembled


@dataclass(frozen=True, slots=True)
class ModelText:
    """Text the model streamed: unjudged, so it goes to R5 and no further."""

    text: str


@dataclass(frozen=True, slots=True)
class Released:
    """A sentence R5 has judged, for the reader.

    Under a buffered policy the whole answer has passed; under a progressive one, this
    sentence and every sentence before it have.
    """

    piece: Piece


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """The sentences released so far did not survive: the final answer cut them otherwise."""


def subject_of(item: object) -> object:
    """The state a stream item is about (for tracing metadata and for failing closed)."""
    return item.state if isinstance(item, Opened) else item


def _no_token(*args: object, **kwargs: object) -> None:
    """A handler's ``on_llm_new_token`` while R4 streams: the token goes to R5 only."""


class _Tokenless:
    """A callback handler as it is, but deaf to the model's tokens.

    Everything is read from the handler itself (its class too, so LangChain's isinstance
    checks see it, and its counters and run maps stay the handler's own), except
    ``on_llm_new_token``: under ``invoke`` the pinned model never streams, so no handler
    ever hears a token, and the streamed twin must not change that.
    """

    def __init__(self, handler: object) -> None:
        object.__setattr__(self, "_handler", handler)

    def __getattribute__(self, name: str) -> Any:  # noqa: ANN401  (any attribute of any handler)
        if name == "on_llm_new_token":
            return _no_token
        return getattr(object.__getattribute__(self, "_handler"), name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(object.__getattribute__(self, "_handler"), name, value)


def without_token_events(config: RunnableConfig) -> RunnableConfig:
    """``config`` for R4's streamed model call: its handlers hear no token.

    Tracers and every other handler still see the model's run start and end (with its
    whole reply, as under ``invoke``); the tokens go to R5 alone, which judges them before
    anything reaches a reader. Handlers the run's configuration adds later (a tracing
    context) are tracers, which record what they would record of an ``invoke``.
    """
    callbacks = config.get("callbacks")
    if callbacks is None:
        return config
    proxies: dict[int, object] = {}

    def deaf(handler: object) -> Any:  # noqa: ANN401  (a handler of any class)
        return proxies.setdefault(id(handler), _Tokenless(handler))

    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.handlers = [deaf(h) for h in callbacks.handlers]
        manager.inheritable_handlers = [deaf(h) for h in callbacks.inheritable_handlers]
        return patch_config(config, callbacks=manager)
    if isinstance(callbacks, list):
        return {**config, "callbacks": [deaf(h) for h in callbacks]}
    return config
