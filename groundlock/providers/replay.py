"""``ReplayChatModel``: an answer that already exists, replayed as a model's reply.

``groundlock validate`` judges an answer written elsewhere (by another system, or by hand)
against a bundle, without calling any model: the answer goes through R4 and R5 exactly as
a model's reply would, so the verdict is the one the chain would reach on that text.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from typing_extensions import override

__all__ = ["ReplayChatModel"]


class ReplayChatModel(BaseChatModel):
    """Answers every prompt with ``text``, unchanged, reporting a normal stop."""

    text: str
    model_name: str = "replayed-answer"

    @property
    @override
    def _llm_type(self) -> str:
        return "replay"

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        metadata = {"model_name": self.model_name, "finish_reason": "stop"}
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(self.text, response_metadata=metadata))]
        )
