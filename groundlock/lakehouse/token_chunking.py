"""Chunking by tokens: 003's "300-800 tokens with overlap", cut where the text ends a thought.

A chunk is counted in the policy's token encoding (``cl100k_base`` for every built-in
policy; loaded offline, as every count in groundlock is), so the index's sizes are the sizes
R2 budgets evidence in. The rules, in order:

* A chunk holds at most ``max_tokens`` and, unless its whole page or document is shorter,
  at least ``min_tokens`` (the text left at a page's end is balanced with the chunk before
  it, so the last chunk is not a stub).
* It ends where a paragraph ends if one lies within those bounds (the last such), else
  where a sentence ends (the project's sentence segmenter, ``firewall_v1``'s word lists: a
  decimal or ``No. 4`` is no end), else between two words (a single sentence longer than
  the budget), else inside a word (a run with no space at all, cut between tokens).
* Each chunk after the first opens with the end of the one before it: the longest run of
  whole words there that is at most ``overlap_tokens`` tokens, so a fact cut at a boundary
  is whole in one of them. Every chunk is a literal slice of the page's text (whitespace
  at its ends stripped): the overlap is text the previous chunk ends with, not a copy.

Chunk ids are made from content (see ``chunk_document``): ``<document>#t<12 hex>``, the
first 12 hex digits of the sha256 of the chunk's text (a PDF page's ``#p<page>.t<hex>``).
Re-indexing unchanged text gives the same ids; an edit changes the id of the chunk that
holds it (and of the next one when the edit sits in its overlap), never of a chunk before
it, and when the edit leaves the cuts where they were (a value or a word changed) no chunk
after it changes either.

Cost is linear in the text: each sentence is encoded once (a sentence longer than the
budget once more, word by word, words cached), and each chunk once more to check it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

from groundlock.text.sentences import split_sentences
from groundlock.text.tokens import TokenCounter

__all__ = [
    "DEFAULT_MAX_CHARS",
    "PARAGRAPH_BREAK",
    "CharChunking",
    "Chunking",
    "TokenChunking",
    "chunking_from_record",
    "token_pieces",
]

DEFAULT_MAX_CHARS = 1200
"""The character chunker's default longest chunk (a paragraph is cut above it)."""

PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
"""What ends a paragraph, for both chunkers: a line break, blank lines, the next line."""
_WORD = re.compile(r"\s*\S+")
"""A word with the whitespace before it: how BPE encodings split text (`` word``)."""
_CHARS_PER_TOKEN_AT_MOST = 64
"""How far back an overlap is looked for: a token longer than this is rare (runs of
spaces); an overlap whose words do not fit the window is shorter, never wrong."""
_TRIES = 8
"""Candidate ends counted exactly per chunk before the fallback (see ``_choose``)."""


@dataclass(frozen=True)
class CharChunking:
    """The character chunker: one chunk per paragraph, a longer one cut between words.

    Its ids are positional (``<document>#<n>``, paragraph n); the default of
    ``groundlock index``, because gold sets and audit rows name those ids.
    """

    max_chars: int = DEFAULT_MAX_CHARS

    @property
    def settings(self) -> str:
        """What enters every document's hash (unchanged since indexes first recorded it)."""
        return f"max_chars={self.max_chars}"

    @property
    def record(self) -> dict[str, object]:
        """What the index's commits record (``groundlock.chunking``)."""
        return {"chunker": "chars", "max_chars": self.max_chars}

    def describe(self) -> str:
        """One line for a report: ``chars (at most 1200 characters)``."""
        return f"chars (at most {self.max_chars} characters)"


@dataclass(frozen=True)
class TokenChunking:
    """The token chunker (module docstring): ``min_tokens`` to ``max_tokens`` a chunk.

    The defaults are 003's range with its top lowered to 700: a built-in policy admits an
    evidence entry of at most 770 tokens (``max_chunk_token_ratio`` 0.35 of 2,200), header
    included, so an 800-token chunk would reach the model truncated.
    """

    min_tokens: int = 300
    max_tokens: int = 700
    overlap_tokens: int = 50
    encoding: str = "cl100k_base"
    """The tiktoken encoding counted in: the policy's ``token_encoding``."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise ValueError(
                f"chunk tokens {self.min_tokens}:{self.max_tokens}: the minimum must be at "
                "least 1 and at most the maximum"
            )
        if not 0 <= self.overlap_tokens < self.min_tokens or (
            2 * self.overlap_tokens > self.max_tokens
        ):
            raise ValueError(
                f"overlap of {self.overlap_tokens} tokens: it must be at least 0, below the "
                f"minimum ({self.min_tokens}) and at most half the maximum ({self.max_tokens})"
            )

    @property
    def settings(self) -> str:
        """What enters every document's hash: new settings re-chunk every document."""
        return (
            f"chunking=tokens:{self.min_tokens}:{self.max_tokens}:{self.overlap_tokens}:"
            f"{self.encoding}"
        )

    @property
    def record(self) -> dict[str, object]:
        """What the index's commits record (``groundlock.chunking``)."""
        return {
            "chunker": "tokens",
            "min_tokens": self.min_tokens,
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "encoding": self.encoding,
        }

    def describe(self) -> str:
        """One line for a report: ``tokens (300-700 cl100k_base tokens, overlap 50)``."""
        return (
            f"tokens ({self.min_tokens}-{self.max_tokens} {self.encoding} tokens, "
            f"overlap {self.overlap_tokens})"
        )


Chunking = CharChunking | TokenChunking
"""How an index chunks its documents."""


def chunking_from_record(text: str | None) -> Chunking | None:
    """The chunking an index's commit recorded (None: none recorded, or not readable)."""
    if not text:
        return None
    try:
        record = json.loads(text)
        if record.get("chunker") == "tokens":
            return TokenChunking(
                int(record["min_tokens"]),
                int(record["max_tokens"]),
                int(record["overlap_tokens"]),
                str(record["encoding"]),
            )
        if record.get("chunker") == "chars":
            return CharChunking(int(record["max_chars"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return None


class _Cut(IntEnum):
    """What ends a unit, best first: where a chunk may end, in order of preference."""

    PARAGRAPH = 0
    SENTENCE = 1
    WORD = 2
    INSIDE = 3


@dataclass(frozen=True)
class _Unit:
    """A span ``[start, end)`` of the page: the whitespace before a sentence, and it."""

    start: int
    end: int
    tokens: int
    cut: _Cut


def _sentence_ends(text: str, start: int, end: int) -> Iterator[tuple[int, _Cut]]:
    """Where sentences of ``text[start:end]`` (one paragraph) end, the last a paragraph end.

    A line break ends a sentence (the segmenter's rule: list items and headings are
    sentences of their own).
    """
    ends: list[int] = []
    pos = start
    for line in text[start:end].splitlines(keepends=True):
        found = pos
        for sentence in split_sentences(line):
            at = text.find(sentence, found, pos + len(line))
            if at < 0:  # not verbatim in the line (never seen): the line is one sentence
                break
            found = at + len(sentence)
            ends.append(found)
        line_end = pos + len(line.rstrip())
        if line_end > (ends[-1] if ends else start):
            ends.append(line_end)
        pos += len(line)
    for number, at in enumerate(ends):
        yield at, _Cut.PARAGRAPH if number == len(ends) - 1 else _Cut.SENTENCE


def _units(text: str, counter: TokenCounter, budget: int) -> list[_Unit]:
    """The page as consecutive units, each at most ``budget`` tokens."""
    units: list[_Unit] = []
    previous = 0
    paragraph_start = 0
    breaks = [*PARAGRAPH_BREAK.finditer(text), None]
    for found in breaks:
        paragraph_end = len(text) if found is None else found.start()
        for at, cut in _sentence_ends(text, paragraph_start, paragraph_end):
            if at <= previous:
                continue
            units.extend(_split_long(text, previous, at, cut, counter=counter, budget=budget))
            previous = at
        if found is not None:
            paragraph_start = found.end()
    return units


def _split_long(
    text: str, start: int, end: int, cut: _Cut, *, counter: TokenCounter, budget: int
) -> Iterator[_Unit]:
    """``text[start:end]`` as one unit, or, longer than ``budget``, cut between words."""
    tokens = counter.count(text[start:end])
    if tokens <= budget:
        yield _Unit(start, end, tokens, cut)
        return
    words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    for number, (word_start, word_end) in enumerate(words):
        last = number == len(words) - 1
        word_tokens = counter.count(text[word_start:word_end])
        if word_tokens <= budget:
            yield _Unit(word_start, word_end, word_tokens, cut if last else _Cut.WORD)
            continue
        kind = cut if last else _Cut.WORD
        yield from _split_word(text, word_start, word_end, kind, counter=counter, budget=budget)


def _split_word(
    text: str, start: int, end: int, cut: _Cut, *, counter: TokenCounter, budget: int
) -> Iterator[_Unit]:
    """A run without spaces, longer than ``budget``: cut between tokens, on characters."""
    pending = b""
    position = start
    tokens = counter.encode(text[start:end])
    for index in range(0, len(tokens), budget):
        final = index + budget >= len(tokens)
        pending += b"".join(counter.encoding.decode_tokens_bytes(tokens[index : index + budget]))
        piece = pending.decode("utf-8", errors="ignore")
        # Bytes of a character split between two groups wait for the next group.
        pending = pending[len(piece.encode("utf-8")) :]
        piece_end = end if final else position + len(piece)
        if piece_end > position:
            count = counter.count(text[position:piece_end])
            yield _Unit(position, piece_end, count, cut if final else _Cut.INSIDE)
            position = piece_end


def _overlap_start(text: str, start: int, end: int, limit: int, counter: TokenCounter) -> int:
    """Where the longest run of whole words ending ``text[start:end]`` of <= ``limit`` begins.

    Returns ``end`` when no word fits (``limit`` 0, or a last word longer than it). Words
    are summed back from the end (each counted once, cached), then the run is counted
    exactly and shortened by a word while the joins make it more than ``limit``.
    """
    if limit <= 0:
        return end
    window = max(start, end - _CHARS_PER_TOKEN_AT_MOST * limit)
    words = [m.start() for m in re.finditer(r"(?<!\S)\S", text[window:end])]
    if window > start and words:
        words = words[1:]  # the first may be the middle of a word the window cut
    starts: list[int] = []
    total = 0
    following = end
    for at in reversed([window + w for w in words]):
        total += counter.count(" " + text[at:following].rstrip())  # as BPE sees it
        if total > limit:
            break
        starts.append(at)
        following = at
    while starts and counter.count(text[starts[-1] : end].strip()) > limit:
        starts.pop()
    return starts[-1] if starts else end


def token_pieces(text: str, chunking: TokenChunking, counter: TokenCounter) -> list[str]:
    r"""``text`` (one page) as chunks by the rules of this module, in order.

    >>> from groundlock.text import get_token_counter
    >>> token_pieces("One. Two.\n\nThree.", TokenChunking(), get_token_counter("cl100k_base"))
    ['One. Two.\n\nThree.']
    """
    units = _units(text, counter, max(1, chunking.max_tokens - chunking.overlap_tokens))
    after = [0] * (len(units) + 1)  # tokens of the units from i to the end
    for i in range(len(units) - 1, -1, -1):
        after[i] = after[i + 1] + units[i].tokens
    pieces: list[str] = []
    first, begin = 0, 0
    while first < len(units):
        lead = counter.count(_piece(text, begin, units[first].start)) if pieces else 0
        if lead + after[first] <= chunking.max_tokens:  # the rest may fit: one last chunk
            last = _piece(text, begin, units[-1].end)
            if counter.count(last) <= chunking.max_tokens:
                pieces.append(last)
                break
        stop = _choose(text, begin, units, first, lead, after, chunking, counter)
        pieces.append(_piece(text, begin, units[stop].end))
        first = stop + 1
        if first < len(units):
            begin = _overlap_start(text, begin, units[stop].end, chunking.overlap_tokens, counter)
    return [piece for piece in pieces if piece]


def _choose(  # noqa: PLR0917  (private: one call site)
    text: str,
    begin: int,
    units: list[_Unit],
    first: int,
    lead: int,
    after: list[int],
    chunking: TokenChunking,
    counter: TokenCounter,
) -> int:
    """The index of the unit a chunk that starts at ``begin`` (``units[first]``) ends with.

    Candidates are the units the chunk can end with by the sum of the counts; they are
    tried best first (reaching the minimum, leaving a remainder that can stand as a chunk,
    the kind of end, the later), each counted exactly, and the first within bounds wins.
    """
    low, high, overlap = chunking.min_tokens, chunking.max_tokens, chunking.overlap_tokens
    candidates: list[tuple[int, int]] = []  # (unit index, estimated tokens)
    total = lead
    for index in range(first, len(units)):
        total += units[index].tokens
        if total > high and index > first:
            break
        candidates.append((index, total))

    def rank(candidate: tuple[int, int]) -> tuple[bool, bool, int, int]:
        index, estimate = candidate
        rest = after[index + 1]
        # A remainder that cannot stand: shorter than a chunk (the overlap it will open
        # with is not counted on), or too long for one chunk and too short for two.
        stub = 0 < rest < low or (overlap + rest > high and rest < 2 * (low - overlap))
        return (estimate < low, stub, int(units[index].cut), -index)

    for index, _estimate in sorted(candidates, key=rank)[:_TRIES]:
        tokens = counter.count(_piece(text, begin, units[index].end))
        if low <= tokens <= high:
            return index
    # None of the best is within bounds exactly (sums drift from counts by a token or two
    # at the joins): the longest that is not over the maximum, else the first unit.
    for index, _estimate in reversed(candidates[-_TRIES:]):
        if counter.count(_piece(text, begin, units[index].end)) <= high:
            return index
    return first


def _piece(text: str, start: int, end: int) -> str:
    return text[start:end].strip()
