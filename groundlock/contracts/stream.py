"""What a streamed request yields: validated sentences, a retraction, then the response.

``chain.stream(bundle)`` (and ``astream``, ``astream_events``, the served ``/stream``
routes) yields these events, and nothing else leaves the chain while it streams:

* :class:`AnswerDelta`: one sentence R5 has judged, exactly as the model wrote it, with
  the public metadata of the entries it cites. Joined in order, the deltas of an OK
  response are its ``answer``.
* :class:`Retract`: under a ``progressive`` policy only, when an answer whose sentences
  were already emitted fails after all (a later sentence, a whole-answer rule, the support
  judge, the audit write). It names every delta emitted; the client withdraws them. (Also,
  rarely, with no reason, when the whole answer's sentence boundaries differ from those
  read while it streamed: the deltas after it are the answer's sentences again.)
* :class:`ResponseEvent`: exactly one, last, carrying the :class:`PublicResponse` that
  ``invoke`` would have returned. It is authoritative: a client that renders deltas must
  end with what it says (an OK response's answer is the deltas joined).

Like the response, no event has a field for chunk text, scores, the prompt, raw model
text or internal keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import NonNegativeInt

from groundlock.contracts._base import Contract
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.response import PublicCitation, PublicResponse

__all__ = ["AnswerDelta", "ResponseEvent", "Retract", "StreamEvent"]


class AnswerDelta(Contract):
    """One validated sentence of the answer, with what precedes it since the last one."""

    type: Literal["answer_delta"] = "answer_delta"
    request_id: str | None
    index: NonNegativeInt
    """0-based position among the request's deltas."""
    text: str
    """The answer's text from the end of the previous delta to the end of this sentence
    (its markers included; the last delta runs to the end of the answer)."""
    citations: tuple[PublicCitation, ...]
    """The entries this sentence cites, in the order it cites them."""


class Retract(Contract):
    """Withdraw deltas already emitted: the answer they belong to failed after all."""

    type: Literal["retract"] = "retract"
    request_id: str | None
    indexes: tuple[NonNegativeInt, ...]
    """Every delta emitted for this request."""
    reason: ReasonCode | None
    """Why the answer failed (the response's ``failure_reason``); null when it did not fail
    but its final reading cut its sentences otherwise: the deltas that follow replace
    them, and the response carries the answer."""


class ResponseEvent(Contract):
    """The last event of every stream: the request's public response."""

    type: Literal["response"] = "response"
    response: PublicResponse


StreamEvent = AnswerDelta | Retract | ResponseEvent
"""Any event a streamed request yields."""
