"""ExtractiveChatModel passes langchain-tests' standard chat-model suites.

Skipped only where the model cannot have the capability: it calls no tools, produces no
structured output or JSON mode, and reads only text (no images, audio, PDF).
"""

from __future__ import annotations

from typing import Any

from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from groundlock.providers import ExtractiveChatModel


class _Standard:
    @property
    def chat_model_class(self) -> type[ExtractiveChatModel]:
        return ExtractiveChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": "groundlock-extractive-v1", "temperature": 0.0}

    @property
    def has_tool_calling(self) -> bool:
        return False  # an extractive model quotes evidence; it cannot call tools

    @property
    def has_structured_output(self) -> bool:
        return False  # it only ever emits evidence sentences or the refusal

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def model_override_value(self) -> str:
        return "groundlock-extractive-override"


class TestExtractiveChatModelUnit(_Standard, ChatModelUnitTests):
    pass


class TestExtractiveChatModelIntegration(_Standard, ChatModelIntegrationTests):
    pass
