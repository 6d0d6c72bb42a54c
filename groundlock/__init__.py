"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out."""

import logging

from groundlock.errors import GroundlockError, PolicyError, TokenizerUnavailableError

logging.getLogger("groundlock").addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = ["GroundlockError", "PolicyError", "TokenizerUnavailableError", "__version__"]
