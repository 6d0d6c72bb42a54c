"""A chat model that answers with chosen text: the stand-in for a remote provider.

It is a real ``BaseChatModel`` (so R4 pins it, calls it and reads its reply like any
other); only what the "provider" says is scripted: the text, the finish reason and the
model name it reports.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedChatModel(BaseChatModel):
    """Replies with ``text`` to every prompt."""

    text: str
    finish_reason: str = "stop"
    model_name: str = "scripted-model"
    reported_model: str | None = None
    """The model the "provider" says answered (default: ``model_name``)."""
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = AIMessage(
            self.text,
            response_metadata={
                "model_name": self.reported_model or self.model_name,
                "finish_reason": self.finish_reason,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class ModelCalls(BaseCallbackHandler):
    """Counts chat model calls and records the name and metadata of every chain run."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.model_calls += 1

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", dict(kwargs.get("metadata") or {})))
