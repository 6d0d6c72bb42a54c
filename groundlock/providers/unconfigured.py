"""The stand-in R4 holds when no model could be built and the policy says to refuse (``004``).

Spec 004 answers with its refusal and ``model_used: none`` when no model is configured. A
policy with ``on_model_unavailable: refuse`` asks for that; R4 then holds this stand-in
instead of a model. It is not a fallback: it never answers, and R4 never calls it (a call
would raise). What R4 pins for it, :data:`NO_MODEL`, names no provider and no model.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from typing_extensions import override

from groundlock.contracts.execution import NO_MODEL, NO_MODEL_NAME

__all__ = ["NO_MODEL", "NO_MODEL_NAME", "NoModelConfigured"]


class NoModelConfigured(BaseChatModel):
    """Stands where the model would be; refuses to be called.

    ``reason`` says why no model could be built (the builder's error, first line), for the
    audit row's message.
    """

    reason: str
    """Why no model was built, e.g. ``ProviderUnavailableError: ... no API key``."""

    @property
    @override
    def _llm_type(self) -> str:
        return "groundlock-no-model"

    @override
    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:  # fmt: skip
        raise RuntimeError("no model is configured; R4 refuses before calling one")
