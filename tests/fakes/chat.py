"""A chat model that answers with chosen text: the stand-in for a remote provider.

It is a real ``BaseChatModel`` (so R4 pins it, calls it and reads its reply like any
other); only what the "provider" says is scripted: the text, the finish reason and the
model name it reports.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


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


class TokenStreamModel(BaseChatModel):
    """Streams ``tokens`` one by one (a provider's stream), then reports its model name.

    ``fail_after``: raise after that many tokens (a connection dropped mid-stream);
    ``seconds_per_token``: how long each token takes to arrive.
    """

    tokens: list[str]
    model_name: str = "token-stream-model"
    temperature: float = 0.0
    fail_after: int | None = None
    seconds_per_token: float = 0.0
    name_first: bool = False
    """Report the model name with the first chunk (as OpenAI's chunks do), not the last."""

    @property
    def _llm_type(self) -> str:
        return "token-stream"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        chunks = list(self._stream(messages, stop, run_manager, **kwargs))
        message = AIMessage(
            "".join(str(c.message.content) for c in chunks),
            response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for number, token in enumerate(self.tokens):
            if self.fail_after is not None and number == self.fail_after:
                raise ConnectionError("the stream was cut")
            if self.seconds_per_token:
                time.sleep(self.seconds_per_token)
            named = self.name_first and number == 0
            metadata = {"model_name": self.model_name} if named else {}
            yield ChatGenerationChunk(
                message=AIMessageChunk(content=token, response_metadata=metadata)
            )
        last: dict[str, Any] = {"finish_reason": "stop"}
        if not self.name_first:
            last["model_name"] = self.model_name
        yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=last))


class ModelCalls(BaseCallbackHandler):
    """Counts chat model calls, keeps the messages each received, and records the name and
    metadata of every chain run."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.runs: list[tuple[str, dict[str, Any]]] = []
        self.messages: list[list[BaseMessage]] = []
        """The message list of every chat model call, as the model received it."""

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.model_calls += 1
        self.messages.extend(list(batch) for batch in messages)

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", dict(kwargs.get("metadata") or {})))
