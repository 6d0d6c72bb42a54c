"""The R2 input contract accepts both spec row shapes and nothing looser."""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from datetime import UTC, date, datetime
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from groundlock import FiltersApplied, RetrievalBundle, RetrievalRow
from groundlock.contracts._fields import Identifier, IsoDate
from groundlock.text.sanitize import HIDDEN_CHARACTERS_PATTERN, WHITESPACE_CHARACTERS
from tests.builders import make_bundle


def test_row_in_the_000_shape_parses_with_knowledge_id_defaulting_to_chunk_id():
    row = RetrievalRow.model_validate(
        {
            "chunk_id": "c-1", "rank": 0, "faiss_id": 12, "similarity": 0.8,
            "chunk_text": "Check the seal.", "knowledge_type_effective": "SAFETY_NOTICE",
            "equipment_id": None, "event_date": "2025-03-04",
        }
    )  # fmt: skip
    assert row.similarity_score == 0.8
    assert row.knowledge_id is None
    assert row.knowledge_key == "c-1"
    assert row.event_date == date(2025, 3, 4)


def test_row_in_the_001_shape_parses():
    row = RetrievalRow.model_validate(
        {
            "chunk_id": "c-2", "knowledge_id": "DOC-9", "chunk_text": "Check the seal.",
            "rank": 3, "similarity_score": 0.9, "source_reference": "Manual p.4",
        }
    )  # fmt: skip
    assert (row.knowledge_key, row.source_reference, row.faiss_id) == ("DOC-9", "Manual p.4", None)


def test_contract_models_are_frozen():
    bundle = RetrievalBundle.model_validate(make_bundle())
    with pytest.raises(ValidationError):
        bundle.top_k = 100  # type: ignore[misc]


def test_bundle_round_trips_through_json():
    bundle = RetrievalBundle.model_validate(make_bundle())
    assert RetrievalBundle.model_validate_json(bundle.model_dump_json()) == bundle


def test_single_knowledge_type_filter_becomes_a_tuple():
    assert FiltersApplied(knowledge_type="REGULATION").knowledge_type == ("REGULATION",)


def test_date_filter_admits_only_dated_rows_in_range():
    window = FiltersApplied(date_from=date(2025, 1, 1))
    assert window.admits_date(date(2025, 1, 1))
    assert not window.admits_date(date(2024, 12, 31))
    assert not window.admits_date(None)
    assert FiltersApplied().admits_date(None)


_BREAKOUT = set("[]|<>")


@pytest.mark.parametrize("code", range(128))
def test_every_ascii_character_is_judged_by_the_header_rules(code: int):
    # Printable ASCII ids take a fast path; this pins it to the rules for every character:
    # printable and not one of []|<> inside an id, and no space at either end.
    char = chr(code)
    allowed_inside = char.isprintable() and char not in _BREAKOUT

    def accepted(chunk_id: str) -> bool:
        try:
            RetrievalRow.model_validate(
                {"chunk_id": chunk_id, "knowledge_id": "K", "rank": 0,
                 "similarity_score": 0.5, "chunk_text": "Check the seal."}
            )  # fmt: skip
        except ValidationError as exc:
            return exc.errors()[0]["type"] != "identifier"  # any other error fails the test
        return True

    assert accepted(f"a{char}b") is allowed_inside
    assert accepted(f"ab{char}") is (allowed_inside and char != " ")
    assert accepted(f"{char}ab") is (allowed_inside and char != " ")


@pytest.mark.parametrize("chunk_id", ["a\u200bb", "caf\u00e9", "a\u2028b", "x" * 257])
def test_ids_off_the_ascii_fast_path_are_still_checked(chunk_id: str):
    accepted = chunk_id == "caf\u00e9"
    row = {"chunk_id": chunk_id, "knowledge_id": "K", "rank": 0, "similarity_score": 0.5,
           "chunk_text": "Check the seal."}  # fmt: skip
    if accepted:
        assert RetrievalRow.model_validate(row).chunk_id == chunk_id
    else:
        with pytest.raises(ValidationError):
            RetrievalRow.model_validate(row)


def test_the_id_rule_agrees_with_the_sanitiser_on_every_code_point():
    # The id pattern runs in pydantic-core's Rust engine; the reference here is the Python
    # rule spelled from the sanitiser's own definitions: no header character, no hidden
    # character, no whitespace but the space, and no space at either end.
    forbidden = re.compile(
        "[" + re.escape("[]|<>" + "".join(WHITESPACE_CHARACTERS - {" "})) + "]|"
        + HIDDEN_CHARACTERS_PATTERN
    )  # fmt: skip
    ids = TypeAdapter(Identifier)

    def accepted(value: str) -> bool:
        try:
            ids.validate_python(value)
        except ValidationError:
            return False
        return True

    disagreements = [
        hex(point)
        for point in range(0x110000)
        for value in (f"a{chr(point)}b",)
        if accepted(value) is bool(forbidden.search(value))
    ]
    assert disagreements == []
    assert (accepted(" a"), accepted("a "), accepted("a b")) == (False, False, True)
    assert (accepted("x" * 256), accepted("x" * 257)) == (True, False)


class _CalendarDay(date):
    """A ``date`` subclass that is not a datetime: a date all the same."""


class _HourlyDay(date):
    """A ``date`` subclass that claims an hour: refused, as a datetime is."""

    hour = 0


_DATE_CASES: list[object] = [
    "2025-06-01", "0001-01-01", "9999-12-31", "2024-02-29", "2025-02-29", "2025-02-30",
    "2025-13-01", "2025-00-10", "0000-01-01", "2025-6-1", "2025-06-01 ", " 2025-06-01",
    "2025-06-01\n", "2025/06/01", "20250601", "+2025-06-01", "2025-06-01T00:00",
    "2025-06-01T00:00:00Z", "2025-06-01 00:00:00", "1700000000", "\uff12\uff10\uff12\uff15-06-01",
    "\u0662\u0660\u0662\u0665-06-01", "", "today", date(2025, 6, 1), _CalendarDay(2025, 6, 1),
    _HourlyDay(2025, 6, 1), datetime(2025, 6, 1), datetime(2025, 6, 1, tzinfo=UTC), 0,
    1700000000, 1.5, True, None, b"2025-06-01", bytearray(b"2025-06-01"), ["2025-06-01"],
]  # fmt: skip


def _python_date_rule(value: object) -> date | None:
    """The rule as it was written in Python: a date without an hour, or the text."""
    if isinstance(value, date) and not hasattr(value, "hour"):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


class _Dated(BaseModel):
    day: IsoDate


@pytest.mark.parametrize("strict", [None, True, False])
@pytest.mark.parametrize("value", _DATE_CASES)
def test_the_date_rule_agrees_with_its_python_statement(
    value: object,
    strict: bool | None,  # noqa: FBT001  (a pytest parameter)
):
    # The rule runs in pydantic-core; this is its reference, in Python and from JSON, and
    # whatever strict mode the caller asks for: no mode widens or narrows it.
    expected = _python_date_rule(value)
    if expected is None:
        with pytest.raises(ValidationError) as caught:
            _Dated.model_validate({"day": value}, strict=strict)
        assert [error["type"] for error in caught.value.errors()] == ["date_format"]
    else:
        day = _Dated.model_validate({"day": value}, strict=strict).day
        assert day == expected  # a datetime never equals a date
    if isinstance(value, str):
        text = json.dumps({"day": value})
        try:
            from_json: date | None = _Dated.model_validate_json(text, strict=strict).day
        except ValidationError:
            from_json = None
        assert from_json == expected


def test_a_dated_row_serialises_its_date_as_text():
    row = RetrievalRow.model_validate(
        {"chunk_id": "c", "knowledge_id": "K", "rank": 0, "similarity": 0.5,
         "chunk_text": "Check the seal.", "event_date": date(2025, 6, 1)}
    )  # fmt: skip
    assert row.model_dump(mode="json")["event_date"] == "2025-06-01"
    assert RetrievalRow.model_validate_json(row.model_dump_json()) == row


@pytest.mark.parametrize("mapping", [dict, OrderedDict])
def test_both_similarity_names_must_agree_in_any_mapping(mapping: type[dict[str, Any]]):
    row = {"chunk_id": "c", "knowledge_id": "K", "rank": 0, "chunk_text": "Check the seal."}
    agreeing = mapping({**row, "similarity": 0.5, "similarity_score": 0.5})
    assert RetrievalRow.model_validate(agreeing).similarity_score == 0.5
    differing = mapping({**row, "similarity": 0.5, "similarity_score": 0.6})
    with pytest.raises(ValidationError) as caught:
        RetrievalRow.model_validate(differing)
    assert caught.value.errors()[0]["type"] == "similarity_integrity"
