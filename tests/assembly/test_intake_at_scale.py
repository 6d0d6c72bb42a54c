"""Intake checks over every row: the same refusals and messages, however many rows.

The whole-bundle checks (input limits, ranks, chunk ids) pass a valid bundle without a
Python step per row, and walk the rows only to name the one that fails: these tests pin
the names and messages at positions deep inside a large bundle.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import ValidationError

from groundlock import ReasonCode, load_policy
from groundlock.contracts.retrieval import RetrievalBundle, RetrievalRow
from groundlock.core.intake import Rejection, raw_limit_problem, read_bundle
from tests.builders import make_bundle
from tests.builders import make_row as _make_row

POLICY = load_policy()


def make_row(rank: int, /, **fields: Any) -> dict[str, Any]:
    """The builders' row, its similarity falling slowly enough to stay valid for 5,000 rows."""
    return _make_row(rank, **{"similarity": 0.95 - rank * 0.0001, **fields})


LIMITS = POLICY.input_limits
SIZE = 1000


def _rows(size: int = SIZE) -> list[dict[str, Any]]:
    return [make_row(rank) for rank in range(size)]


def _rejected(payload: object) -> Rejection:
    read = read_bundle(payload, LIMITS)
    assert isinstance(read, Rejection), read
    return read


def test_a_valid_thousand_row_bundle_is_read_whole():
    read = read_bundle(make_bundle(_rows()), LIMITS)
    assert isinstance(read, RetrievalBundle)
    assert [row.rank for row in read.results] == list(range(SIZE))
    assert read_bundle(read, LIMITS) is read  # an instance passes its limits again


def test_a_long_chunk_deep_in_the_bundle_is_named():
    rows = _rows()
    rows[737]["chunk_text"] = "x" * (LIMITS.max_chunk_chars + 1)
    rejection = _rejected(make_bundle(rows))
    assert rejection.reason is ReasonCode.INPUT_LIMIT_EXCEEDED
    assert rejection.message == (
        f"results[737].chunk_text: longer than the limit of {LIMITS.max_chunk_chars} characters"
    )


def test_a_long_chunk_is_named_among_null_and_non_text_chunks():
    rows = _rows(10)
    rows[2]["chunk_text"] = None
    rows[3]["chunk_text"] = 12
    rows[4]["chunk_text"] = ["x" * (LIMITS.max_chunk_chars + 1)]  # not text: not measured
    rows[6]["chunk_text"] = "y" * (LIMITS.max_chunk_chars + 1)
    assert raw_limit_problem(make_bundle(rows), LIMITS) == (
        f"results[6].chunk_text: longer than the limit of {LIMITS.max_chunk_chars} characters"
    )


def test_rows_that_are_not_mappings_are_skipped_when_naming_a_long_chunk():
    # As before: the index counts the mappings (validation refuses the others later).
    rows: list[Any] = _rows(5)
    rows[1] = "not a row"
    rows[4]["chunk_text"] = "y" * (LIMITS.max_chunk_chars + 1)
    assert raw_limit_problem(make_bundle(rows), LIMITS) == (
        f"results[3].chunk_text: longer than the limit of {LIMITS.max_chunk_chars} characters"
    )
    rows[2] = MappingProxyType(rows[2])  # a mapping that is not a dict still counts
    assert raw_limit_problem(make_bundle(rows), LIMITS) == (
        f"results[3].chunk_text: longer than the limit of {LIMITS.max_chunk_chars} characters"
    )


def test_too_many_rows_are_refused_on_their_count():
    rows = [{} for _ in range(LIMITS.max_results + 1)]
    assert raw_limit_problem(make_bundle(rows), LIMITS) == (
        f"results: {LIMITS.max_results + 1} rows exceed the limit of {LIMITS.max_results}"
    )


@pytest.mark.parametrize(
    ("change", "reason", "message"),
    [
        (
            lambda rows: rows[900].update(rank=17),
            ReasonCode.RANK_INTEGRITY,
            "results[900].rank: repeats the rank of results[17]",
        ),
        (
            lambda rows: rows[999].update(rank=1000),
            ReasonCode.RANK_INTEGRITY,
            "results[999].rank: out of range; 1000 rows must be ranked 0..999 with no gaps",
        ),
        (
            lambda rows: rows[0].update(rank=-1),
            ReasonCode.RANK_INTEGRITY,
            "results[0].rank: out of range; 1000 rows must be ranked 0..999 with no gaps",
        ),
        (
            lambda rows: rows[950].update(chunk_id="chunk-004"),
            ReasonCode.DUPLICATE_CHUNK_ID,
            "results[950].chunk_id: the same chunk_id appears in an earlier row",
        ),
    ],
)
def test_rank_and_chunk_id_problems_deep_in_the_bundle_are_named(change, reason, message):
    rows = _rows()
    change(rows)
    rejection = _rejected(make_bundle(rows))
    assert (rejection.reason, rejection.message) == (reason, message)


def test_a_row_without_its_shape_is_refused_in_a_bundle_and_alone():
    rows = _rows()
    del rows[612]["faiss_id"]
    rejection = _rejected(make_bundle(rows))
    assert rejection.reason is ReasonCode.INPUT_SCHEMA_INVALID
    assert rejection.message.startswith("results[612]: a row needs knowledge_id")
    with pytest.raises(ValidationError, match="a row needs knowledge_id"):
        RetrievalRow.model_validate(rows[612])


@pytest.mark.parametrize("mapping", [dict, MappingProxyType])
def test_the_similarity_alias_rules_hold_for_every_kind_of_row(mapping):
    both_agree = make_row(0, similarity_score=0.95 - 0, similarity=0.95)
    row = RetrievalRow.model_validate(mapping(both_agree))
    assert row.similarity_score == 0.95
    alias_only = RetrievalRow.model_validate(mapping(make_row(0, similarity=0.9)))
    assert alias_only.similarity_score == 0.9
    rows = _rows(30)
    rows[21] = {**rows[21], "similarity_score": 0.5}  # disagrees with its similarity
    rejection = _rejected(make_bundle([mapping(r) for r in rows]))
    assert rejection.reason is ReasonCode.SIMILARITY_INTEGRITY
    assert rejection.message == (
        "results[21]: similarity and similarity_score are both given and differ"
    )


class _Unreadable(Mapping[str, Any]):
    """A caller's mapping row that fails when read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("cannot be read")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_the_question_is_checked_before_any_row_is_read() -> None:
    # A long question is named as before, even if a caller's row fails when read.
    bundle = make_bundle([_Unreadable()], user_question="q" * 5_000)
    assert raw_limit_problem(bundle, LIMITS) == (
        f"user_question: longer than the limit of {LIMITS.max_question_chars} characters"
    )
    read = read_bundle(bundle, LIMITS)
    assert isinstance(read, Rejection)
    assert read.reason is ReasonCode.INPUT_LIMIT_EXCEEDED


def test_a_subclass_of_the_row_contract_keeps_its_check() -> None:
    class PlantRow(RetrievalRow):
        pass

    assert PlantRow.model_validate(make_row(0, knowledge_id="K1")).knowledge_key == "K1"
    with pytest.raises(ValidationError, match="a row needs knowledge_id"):
        PlantRow.model_validate({"chunk_id": "c", "rank": 0, "similarity": 0.9,
                                 "chunk_text": "x"})  # fmt: skip
