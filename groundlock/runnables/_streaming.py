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

from groundlock.contracts.state import Assembled
from groundlock.core.streaming import Piece

__all__ = ["ModelText", "Opened", "Released", "Withdrawn", "subject_of"]


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
