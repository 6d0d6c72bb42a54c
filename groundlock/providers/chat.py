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
import sys
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from groundlock._lc import check_openai_shape, openai_request_payload
from groundlock.contracts.enums import FinishReason
from groundlock.contracts.execution import PinnedModel
from groundlock.errors import GroundlockError
from groundlock.policies.model import Policy

__all__ = [
    "ModelPinningError",
    "ModelReply",
    "chat_model_from_spec",
    "model_matches",
    "pin_model",
    "read_reply",
]

_SDK_CLIENT_FIELDS = frozenset({"client", "async_client", "root_client", "root_async_client"})
"""Clients a validator built from the old settings; they must be rebuilt, never reused."""
_OUTPUT_CAP_FIELDS = ("max_tokens", "max_output_tokens", "max_completion_tokens", "num_predict")
_TIMEOUT_FIELDS = ("request_timeout", "timeout")
_IDENTITY_FIELDS = ("model_name", "model", "model_id", "deployment_name")
_SNAPSHOT_SUFFIX_RE = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4})")
"""A dated snapshot of an alias: ``-2025-04-14`` today, ``-0613`` in older names."""


class ModelPinningError(GroundlockError):
    """The model cannot be pinned: it is wrapped, or a pinned setting does not stick."""


class ProviderUnavailableError(GroundlockError):
    """A ``provider:model`` string names a client that cannot be built here.

    Its integration package is not installed, or its SDK refuses to start (no API key):
    raised as this project's error, naming the cause, instead of the SDK's own exception.
    """


def pin_model(
    model: object,
    policy: Policy,
    *,
    allow_provider_storage: bool = False,
    output_tokens: int | None = None,
    streamed: bool = False,
) -> tuple[BaseChatModel, PinnedModel]:
    """Return ``model`` rebuilt with the policy's pinned settings, and the record of them.

    ``output_tokens`` is the output cap to pin (a query type's budget); by default the
    policy's ``reserved_output_tokens``. ``streamed``: the twin R4 streams from in
    ``chain.stream`` (its ``stream`` is the provider's stream, not one ``invoke``); every
    other pin, and so the record, is the same.

    Raises:
        ModelPinningError: ``model`` is not a plain chat model, a pin does not stick, or a
            setting of the model would override a pin or change where requests go.
    """
    if isinstance(model, str):
        model = chat_model_from_spec(model)
    if not isinstance(model, BaseChatModel):
        raise ModelPinningError(
            f"ExecuteModel needs a plain LangChain chat model or a 'provider:model' string, "
            f"got {type(model).__name__}. Fallbacks, configurable alternatives, bind() and "
            "with_retry() are refused: they hide which model answers or add a retry layer."
        )
    openai = _is_openai_family(model)
    if openai:
        check_openai_shape()
        _refuse_pin_overrides(model)
    cap = output_tokens if output_tokens is not None else policy.reserved_output_tokens
    pinned = _rebuild(
        model, policy, cap, allow_provider_storage=allow_provider_storage, streamed=streamed
    )
    if openai:
        _check_same_endpoint(model, pinned)
        _check_openai_request(pinned, cap)
    return pinned, _verify(pinned, cap)


def chat_model_from_spec(spec: str) -> BaseChatModel:
    """The chat model a ``provider:model`` string names, built by LangChain's resolver.

    Raises:
        ProviderUnavailableError: its integration package is missing, or the SDK refuses
            (no API key).
        ModelPinningError: the string names no model LangChain can build.
    """
    from langchain.chat_models import init_chat_model  # noqa: PLC0415  (heavy; only for strings)

    provider = spec.split(":", 1)[0] if ":" in spec else None
    defaults: dict[str, Any] = {}
    if provider == "openai":
        defaults["use_responses_api"] = True  # the specs' choice for OpenAI itself
    try:
        model: BaseChatModel = init_chat_model(spec, **defaults)
    except ImportError as exc:
        raise ProviderUnavailableError(
            f"cannot build a chat model from {spec!r}: its integration package is not "
            f"installed ({exc})"
        ) from exc
    except ValueError as exc:
        raise ModelPinningError(f"cannot build a chat model from {spec!r}: {exc}") from exc
    except Exception as exc:  # the SDK's own (OpenAIError: no API key; an auth error ...)
        raise ProviderUnavailableError(
            f"cannot build a chat model from {spec!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return model


def _is_openai_family(model: BaseChatModel) -> bool:
    # An instance of BaseChatOpenAI means its module is loaded: a model of another kind is
    # told apart without loading langchain-openai and the openai SDK.
    base = sys.modules.get("langchain_openai.chat_models.base")
    return base is not None and isinstance(model, base.BaseChatOpenAI)


def _is_azure(model: BaseChatModel) -> bool:
    return type(model).__name__ == "AzureChatOpenAI"


_PINNED_WIRE_KEYS = frozenset(
    {"model", "temperature", "top_p", "n", "max_tokens", "max_completion_tokens",
     "max_output_tokens", "store", "stream", "stream_options"}
)  # fmt: skip
"""Request keys that only the pins may set; extra_body or model_kwargs must not touch them."""


def _refuse_pin_overrides(model: BaseChatModel) -> None:
    for field in ("extra_body", "model_kwargs"):
        overrides = set(getattr(model, field, None) or {}) & _PINNED_WIRE_KEYS
        if overrides:
            raise ModelPinningError(
                f"{type(model).__name__}.{field} sets {sorted(overrides)}, which would override "
                "pinned settings on the wire; remove them"
            )
    if _is_azure(model) and "model_name" not in model.model_fields_set:
        raise ModelPinningError(
            "AzureChatOpenAI needs model=<the deployment's model, e.g. 'gpt-4.1-mini'>: the "
            "deployment name says nothing about which model answers, so drift cannot be checked"
        )


def _default_api(model: BaseChatModel) -> bool:
    """Responses API (the specs' choice) for OpenAI itself; chat completions elsewhere.

    OpenAI-compatible servers (vLLM, Ollama, llama.cpp) and Azure deployments commonly serve
    only chat completions, so for them the Responses API must be chosen explicitly.
    """
    explicit = getattr(model, "use_responses_api", None)
    if explicit is not None:
        return bool(explicit)
    base = getattr(model, "openai_api_base", None)
    return not _is_azure(model) and (base is None or "api.openai.com" in str(base))


def _rebuild(
    model: BaseChatModel,
    policy: Policy,
    output_tokens: int,
    *,
    allow_provider_storage: bool,
    streamed: bool = False,
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
        pins[cap] = output_tokens
    if "max_retries" in fields:
        pins["max_retries"] = 0
    if timeout := _first_field(fields, _TIMEOUT_FIELDS):
        pins[timeout] = policy.execution.attempt_timeout_seconds
    if "disable_streaming" in fields:
        # ``invoke`` never streams (a streaming handler in the config would otherwise turn
        # the call into a stream); the streamed twin streams only when R4 calls ``stream``,
        # inside a stage run whose event-stream readers are removed: tokens go to R5 only.
        pins["disable_streaming"] = not streamed
    if "streaming" in fields and not streamed:
        # disable_streaming only steers LangChain's own choice; an integration whose
        # _generate streams when streaming=True (ChatAnthropic does) would still hand every
        # raw token of a not yet validated answer to on_llm_new_token handlers. (The twin
        # leaves it unset: LangChain reads an explicit streaming=False as "never stream".)
        pins["streaming"] = False
    elif "streaming" in fields:
        kept.pop("streaming", None)
    if "refusal_text" in fields:
        pins["refusal_text"] = policy.refusal_text
    if _is_openai_family(model):
        use_responses = _default_api(model)
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


_ENDPOINT_ATTRIBUTES = ("base_url", "api_key", "organization", "project", "_custom_headers")


def _check_same_endpoint(original: BaseChatModel, pinned: BaseChatModel) -> None:
    """The rebuilt client must talk to the same place, as the same caller, with no retries.

    A client object passed in by the caller cannot be reused (it carries its own retry
    setting) and is rebuilt from the model's settings; if those point elsewhere (a client
    made for a local server, a model left on the default endpoint) requests would silently
    go to another host with other credentials, so that is refused.
    """
    for name in ("root_client", "root_async_client"):
        before, after = getattr(original, name, None), getattr(pinned, name, None)
        if after is None:
            continue
        if getattr(after, "max_retries", 0) != 0:
            raise ModelPinningError(f"the rebuilt {name} still retries on its own")
        if before is None:
            continue
        for attribute in _ENDPOINT_ATTRIBUTES:
            if str(getattr(before, attribute, None)) != str(getattr(after, attribute, None)):
                setting = attribute.lstrip("_")
                raise ModelPinningError(
                    f"{type(original).__name__} was given its own SDK client whose {setting} "
                    "differs from the model's settings; pass base_url, api_key, default_headers "
                    "and http_client to the model instead, so it can be rebuilt without SDK retries"
                )


def _check_openai_request(model: BaseChatModel, output_tokens: int) -> None:
    """Build the request the model would really send and check every pin in it."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415

    payload: dict[str, Any] = dict(openai_request_payload(model, [HumanMessage("probe")]))
    wire = {**payload, **(payload.pop("extra_body", None) or {})}
    expected: dict[str, Any] = {
        "model": model_identity(model),
        "temperature": 0.0,
        "max_output_tokens" if "input" in wire else "max_completion_tokens": output_tokens,
    }
    for key, value in expected.items():
        if wire.get(key) != value:
            raise ModelPinningError(
                f"{type(model).__name__} would send {key}={wire.get(key)!r}, not {value!r}"
            )
    if wire.get("stream") or (wire.get("n") or 1) != 1:
        raise ModelPinningError(f"{type(model).__name__} would stream or ask for several answers")


def _verify(model: BaseChatModel, output_tokens: int) -> PinnedModel:
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
    if cap and max_output != output_tokens:
        raise ModelPinningError(f"{provider} did not accept {cap}={output_tokens}")
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


def model_matches(pinned: str, reported: str | None, *, must_report: bool) -> bool:
    """Whether a response's model is the pinned one (a dated snapshot of an alias counts).

    ``must_report``: the provider always names the model (OpenAI does), so a reply that
    names none is not trusted either.

    >>> model_matches("gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", must_report=True)
    True
    >>> model_matches("gpt-4", "gpt-4-0613", must_report=True)
    True
    >>> model_matches("gpt-4.1-mini", "gpt-4o-mini-2024-07-18", must_report=True)
    False
    """
    if not reported:
        return not must_report
    if reported == pinned:
        return True
    return reported.startswith(pinned) and bool(
        _SNAPSHOT_SUFFIX_RE.fullmatch(reported[len(pinned) :])
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
    "MAX_TOKENS": FinishReason.LENGTH,
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
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        total_tokens=_count(usage.get("total_tokens")),
    )


def _count(value: object) -> int | None:
    """A provider's token count, or None when it is missing or not a count at all."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _finish_reason(meta: dict[str, Any]) -> FinishReason:
    if meta.get("status") == "incomplete":  # Responses API: the reason is in the details
        details = meta.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        return _FINISH.get(str(reason), FinishReason.OTHER)
    value = (
        meta.get("finish_reason")
        or meta.get("status")
        or meta.get("stop_reason")
        or meta.get("done_reason")
    )
    if value is None:
        return FinishReason.UNKNOWN
    return _FINISH.get(str(value), FinishReason.OTHER)
