"""Model adapters: pin any LangChain chat model, read its replies, classify its failures.

Also home of the offline, deterministic ``ExtractiveChatModel``.
"""

from groundlock.providers.chat import (
    ModelPinningError,
    ProviderUnavailableError,
    pin_model,
    read_reply,
)
from groundlock.providers.extractive import ExtractiveChatModel

__all__ = [
    "ExtractiveChatModel",
    "ModelPinningError",
    "ProviderUnavailableError",
    "pin_model",
    "read_reply",
]
