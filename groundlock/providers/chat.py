"""One narrow seam to any LangChain chat model: pin it, then read its replies uniformly.

**Pinning.** R4 accepts a ``BaseChatModel`` instance or a ``provider:model`` string (resolved
with LangChain's ``init_chat_model``). Anything else — ``with_fallbacks()``,
``configurable_alternatives()``, ``bind()``, ``with_retry()`` — hides which model answers or
adds a second retry layer, and is refused. The model is then *rebuilt* with pinned values
(temperature 0.0, output cap = the policy's reserved output tokens, the SDK's own retries
off, a per-attempt timeout, and for OpenAI an explicit API choice with ``store=False``), so
that SDK clients are recreated with those settings. Finally the rebuilt model is *checked*:
an integration that silently drops the temperature (langchain-openai does for ``gpt-5``)
or ignores another pin is refused with a clear error, at construction, not per request.

**Reading.** Chat Completions and the Responses API report the end state, the model, the
response id and usage in different places; :func:`read_reply` maps both to one shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from groundlock.contracts.enums import FinishReason
from groundlock.contracts.execution import PinnedModel
from groundlock.errors import GroundlockError
from groundlock.policies.model import Policy

__all__ = ["ModelPinningError", "ModelReply", "model_matches", "pin_model", "read_reply"]

_SDK_CLIENT_FIELDS = frozenset({"client", "async_client", "root_client", "root_async_client"})
"""Clients a validator built from the old settings; they must be rebuilt, never reused."""
_OUTPUT_CAP_FIELDS = ("max_tokens", "max_output_tokens", "max_completion_tokens", "num_predict")
_TIMEOUT_FIELDS = ("request_timeout", "timeout")
_IDENTITY_FIELDS = ("model_name", "model", "model_id", "deployment_name")
_OPENAI_PROVIDERS = frozenset({"openai", "azure_openai"})
_DATED_SNAPSHOT_RE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class ModelPinningError(GroundlockError):
    """The model cannot be pinned: it is wrapped, or a pinned setting does not stick."""


def pin_model(
    model: object, policy: Policy, *, allow_provider_storage: bool = False
) -> tuple[BaseChatModel, PinnedModel]:
    """Return ``model`` rebuilt with the policy's pinned settings, and the record of them.

    Raises:
        ModelPinningError: ``model`` is not a plain chat model, or a pin does not stick.
    """
    if isinstance(model, str):
        model = _from_spec(model)
    if not isinstance(model, BaseChatModel):
        raise ModelPinningError(
            f"ExecuteModel needs a plain LangChain chat model or a 'provider:model' string, "
            f"got {type(model).__name__}. Fallbacks, configurable alternatives, bind() and "
            "with_retry() are refused: they hide which model answers or add a retry layer."
        )
    pinned = _rebuild(model, policy, allow_provider_storage=allow_provider_storage)
    return pinned, _verify(pinned, policy)


def _from_spec(spec: str) -> BaseChatModel:
    from langchain.chat_models import init_chat_model  # noqa: PLC0415  (heavy; only for strings)

    provider = spec.split(":", 1)[0] if ":" in spec else None
    defaults: dict[str, Any] = {}
    if provider in _OPENAI_PROVIDERS:
        defaults["use_responses_api"] = True  # the specs' choice; chat completions by instance
    try:
        model: BaseChatModel = init_chat_model(spec, **defaults)
    except (ImportError, ValueError) as exc:
        raise ModelPinningError(f"cannot build a chat model from {spec!r}: {exc}") from exc
    return model


def _is_openai_family(model: BaseChatModel) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI  # noqa: PLC0415
    except ImportError:  # pragma: no cover  (langchain-openai is a dependency)
        return False
    return isinstance(model, BaseChatOpenAI)


def _rebuild(
    model: BaseChatModel, policy: Policy, *, allow_provider_storage: bool
) -> BaseChatModel:
    fields = type(model).model_fields
    kept = {
        name: getattr(model, name)
        for name in model.model_fields_set
        if name in fields and name not in _SDK_CLIENT_FIELDS
    }
    pins: dict[str, Any] = {}
    if "temperature" in fields:
        pins["temperature"] = 0.0
    if cap := _first_field(fields, _OUTPUT_CAP_FIELDS):
        pins[cap] = policy.reserved_output_tokens
    if "max_retries" in fields:
        pins["max_retries"] = 0
    if timeout := _first_field(fields, _TIMEOUT_FIELDS):
        pins[timeout] = policy.execution.attempt_timeout_seconds
    if _is_openai_family(model):
        use_responses = getattr(model, "use_responses_api", None) is not False
        pins["use_responses_api"] = use_responses
        pins["output_version"] = "responses/v1" if use_responses else "v0"
        if use_responses:
            pins["store"] = allow_provider_storage
    values = {**kept, **pins}
    # Pass every value under the name the constructor is sure to accept: its alias.
    arguments = {(fields[name].alias or name): value for name, value in values.items()}
    try:
        return type(model)(**arguments)
    except Exception as exc:
        raise ModelPinningError(
            f"cannot rebuild {type(model).__name__} with pinned settings: {exc}"
        ) from exc


def _verify(model: BaseChatModel, policy: Policy) -> PinnedModel:
    fields = type(model).model_fields
    provider = type(model).__name__
    name = model_identity(model)
    temperature = getattr(model, "temperature", None) if "temperature" in fields else None
    if "temperature" in fields and temperature != 0.0:
        raise ModelPinningError(
            f"{provider} would not send temperature 0.0 for model {name!r} (the integration "
            "drops or overrides it for this model family); groundlock needs a model it can "
            "run at temperature 0"
        )
    cap = _first_field(fields, _OUTPUT_CAP_FIELDS)
    max_output = getattr(model, cap) if cap else None
    if cap and max_output != policy.reserved_output_tokens:
        raise ModelPinningError(f"{provider} did not accept {cap}={policy.reserved_output_tokens}")
    retries = getattr(model, "max_retries", None) if "max_retries" in fields else None
    if "max_retries" in fields and retries != 0:
        raise ModelPinningError(f"{provider} did not accept max_retries=0")
    timeout_field = _first_field(fields, _TIMEOUT_FIELDS)
    timeout = getattr(model, timeout_field) if timeout_field else None
    openai = _is_openai_family(model)
    return PinnedModel(
        provider=provider,
        model_name=name,
        temperature=temperature,
        max_output_tokens=max_output,
        sdk_max_retries=retries,
        api=("responses" if getattr(model, "use_responses_api", False) else "chat_completions")
        if openai
        else None,
        store=getattr(model, "store", None) if openai else None,
        timeout_seconds=float(timeout) if isinstance(timeout, int | float) else None,
    )


def _first_field(fields: dict[str, Any], candidates: tuple[str, ...]) -> str | None:
    return next((name for name in candidates if name in fields), None)


def model_identity(model: BaseChatModel) -> str:
    """The model name an integration sends, or its class name if it has none."""
    for field in _IDENTITY_FIELDS:
        value = getattr(model, field, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def model_matches(pinned: str, reported: str | None) -> bool:
    """Whether a response's model is the pinned one (a dated snapshot of an alias counts).

    >>> model_matches("gpt-4.1-mini", "gpt-4.1-mini-2025-04-14")
    True
    >>> model_matches("gpt-4.1-mini", "gpt-4o-mini-2024-07-18")
    False
    """
    if reported is None or reported == pinned:
        return True
    return reported.startswith(pinned) and bool(
        _DATED_SNAPSHOT_RE.fullmatch(reported[len(pinned) :])
    )


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What R4 needs from a model's message, whichever API produced it."""

    text: str
    finish_reason: FinishReason
    reported_model: str | None
    response_id: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None


_FINISH = {
    "stop": FinishReason.STOP,
    "completed": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def read_reply(message: BaseMessage) -> ModelReply:
    """Map a chat model's message to one shape for Chat Completions and the Responses API."""
    meta: dict[str, Any] = dict(message.response_metadata or {})
    usage = getattr(message, "usage_metadata", None) or {}
    reported = meta.get("model_name") or meta.get("model")
    response_id = meta.get("id")
    if response_id is None and isinstance(message.id, str) and message.id.startswith("resp_"):
        response_id = message.id
    return ModelReply(
        text=str(message.text),
        finish_reason=_finish_reason(meta),
        reported_model=str(reported) if reported else None,
        response_id=str(response_id) if response_id else None,
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        total_tokens=usage.get("total_tokens"),
    )


def _finish_reason(meta: dict[str, Any]) -> FinishReason:
    if meta.get("status") == "incomplete":  # Responses API: the reason is in the details
        details = meta.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        return _FINISH.get(str(reason), FinishReason.OTHER)
    value = meta.get("finish_reason") or meta.get("status") or meta.get("stop_reason")
    if value is None:
        return FinishReason.UNKNOWN
    return _FINISH.get(str(value), FinishReason.OTHER)
