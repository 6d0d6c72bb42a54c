"""Annotated field types shared by the contracts.

Each type rejects bad values with a :class:`PydanticCustomError` whose *type* names the spec's
validation group (``similarity_integrity``, ``text_integrity``, ...), so a validation failure
can be turned into the right reason code without parsing messages. Messages name the rule,
never the offending value: a similarity score or chunk text must not leak into a log line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from groundlock.text.sanitize import HIDDEN_RANGES, WHITESPACE_CHARACTERS

__all__ = [
    "INT64_MAX",
    "ChunkText",
    "Count",
    "Identifier",
    "IsoDate",
    "NonNegativeFinite",
    "RerankScore",
    "Similarity",
    "SourceReference",
]

INT64_MAX = 2**63 - 1
"""The largest integer the audit tables (Arrow int64) hold."""

Count = Annotated[int, Field(strict=True, ge=0, le=INT64_MAX)]
PageNumber = Annotated[int, Field(strict=True, ge=1, le=INT64_MAX)]
"""A page of a document, counted from 1 (never a boolean, a float or a string)."""
"""A non-negative integer of the input contract, bounded by what the audit trail stores: a
larger one fails the input gate (``INPUT_SCHEMA_INVALID``) instead of the audit write after
the model call."""


# Characters that would let a metadata value break out of an evidence header
# "[C0 | chunk_id=... | knowledge_id=... | source=...]", spread over several lines, or hide:
# the header characters, every whitespace character but the space, and every hidden
# character sanitising removes. Written for pydantic-core's Rust regex engine, so a value is
# checked without a Python call (a 20-row bundle carries about 80 ids). Surrogates are left
# out: they are not Unicode scalar values, and pydantic-core refuses a string holding one
# (``string_unicode``) before any pattern runs. A test compares this with the Python rule
# over every code point.
def _rust_class(ranges: Iterable[tuple[int, int]]) -> str:
    parts = []
    for low, high in ranges:
        if low >= 0xD800 and high <= 0xDFFF:
            continue
        if low < 0xD800 <= high:
            high = 0xD7FF  # noqa: PLW2901  (clipped at the surrogates, see above)
        parts.append(f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}")
    return "".join(parts)


_FORBIDDEN = (
    r"\[\]|<>"
    + _rust_class((ord(c), ord(c)) for c in sorted(WHITESPACE_CHARACTERS - {" "}))
    + _rust_class(HIDDEN_RANGES)
)
METADATA_TEXT_PATTERN = rf"^[^ {_FORBIDDEN}](?:[^{_FORBIDDEN}]*[^ {_FORBIDDEN}])?$"
"""A whole metadata value: no forbidden character, and no space at either end."""


@dataclass(frozen=True, slots=True, eq=False)
class _Checked:
    """A field type pydantic-core checks without calling Python: hot, per-row fields.

    ``strict`` decides the type (a wrong type keeps pydantic's own error, e.g.
    ``string_type``); ``rules`` then checks the value, and whatever rule it breaks is
    reported as ``error_type`` with ``message``, naming the rule and never the value.
    """

    strict: core_schema.CoreSchema
    rules: core_schema.CoreSchema
    error_type: str
    message: str
    json_schema: JsonSchemaValue

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.chain_schema(
            [
                self.strict,
                core_schema.custom_error_schema(
                    self.rules, custom_error_type=self.error_type, custom_error_message=self.message
                ),
            ]
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # Published as written here, in both modes: the id pattern is in Rust regex
        # syntax, which JSON Schema readers (ECMA-262) do not share.
        return dict(self.json_schema)


def _metadata_text(max_length: int) -> _Checked:
    return _Checked(
        strict=core_schema.str_schema(strict=True),
        rules=core_schema.str_schema(max_length=max_length, pattern=METADATA_TEXT_PATTERN),
        error_type="identifier",
        message=(
            f"must be 1 to {max_length} characters on one line, with no space at either end "
            "and no '[', ']', '|', '<', '>', tab, control or invisible character"
        ),
        json_schema={"type": "string", "maxLength": max_length},
    )


Identifier = Annotated[str, _metadata_text(256)]
"""An id that appears in evidence headers or audit rows: printable, single-line, no brackets."""

SourceReference = Annotated[str, _metadata_text(512)]
"""A human-readable source (document title, page); same character rules, up to 512 chars."""

Similarity = Annotated[
    float,
    _Checked(
        strict=core_schema.float_schema(strict=True),
        rules=core_schema.float_schema(ge=0.0, le=1.0, allow_inf_nan=False),
        error_type="similarity_integrity",
        message="must be a finite number between 0.0 and 1.0",
        json_schema={"type": "number", "minimum": 0.0, "maximum": 1.0},
    ),
]
"""A retrieval score normalised to [0, 1]; strings and booleans are type errors."""

RerankScore = Annotated[
    float,
    _Checked(
        strict=core_schema.float_schema(strict=True),
        rules=core_schema.float_schema(allow_inf_nan=False),
        error_type="similarity_integrity",
        message="must be a finite number",
        json_schema={"type": "number"},
    ),
]
"""A reranker's score on its own scale (a cross-encoder's may be negative): any finite
number; NaN, infinities, strings and booleans fail the score check (V3) like a similarity."""

ChunkText = Annotated[
    str | None,
    _Checked(
        strict=core_schema.nullable_schema(core_schema.str_schema(strict=True)),
        rules=core_schema.str_schema(min_length=1),
        error_type="text_integrity",
        message="chunk_text must be a non-empty string",
        json_schema={"anyOf": [{"type": "string"}, {"type": "null"}]},
    ),
]
"""Raw chunk text: a string, where null or empty is a text-integrity failure (V4), not a
schema error, so the reason code names the rule the spec gives it."""


def _check_non_negative_finite(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise PydanticCustomError("value_error", "must be a finite, non-negative number")
    return value


NonNegativeFinite = Annotated[float, Strict(), AfterValidator(_check_non_negative_finite)]

_ISO_DATE_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _date_object(value: object) -> date:
    if isinstance(value, date) and not hasattr(value, "hour"):  # a datetime is not a date
        return value
    raise ValueError("not a date")


@dataclass(frozen=True, slots=True, eq=False)
class _IsoDateSchema:
    """``YYYY-MM-DD`` text or a ``date`` (never a ``datetime``), text checked without Python.

    A Python validator was a call per row, about a sixth of reading a 20-row bundle. Text,
    the usual case, is now matched by pydantic-core and parsed by ``date.fromisoformat``
    (C, no Python frame); only a non-text value reaches Python. No step is one of
    pydantic's own date or lax string parsers, so a ``strict=`` given per call or in a
    model's config cannot widen the rule (to timestamps, datetimes or bytes) or narrow it.
    A test compares it with the rule written in Python, in every strict mode.
    """

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        parse = core_schema.no_info_plain_validator_function(date.fromisoformat)
        shaped = core_schema.str_schema(pattern=_ISO_DATE_TEXT)
        return core_schema.custom_error_schema(
            core_schema.json_or_python_schema(
                json_schema=core_schema.chain_schema([shaped, parse]),
                python_schema=core_schema.union_schema(
                    [
                        core_schema.chain_schema(
                            [core_schema.is_instance_schema(str), shaped, parse]
                        ),
                        core_schema.no_info_plain_validator_function(_date_object),
                    ],
                    mode="left_to_right",
                ),
            ),
            custom_error_type="date_format",
            custom_error_message="must be a calendar date written YYYY-MM-DD",
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "format": "date"}


IsoDate = Annotated[date, _IsoDateSchema()]
"""A calendar date; only ``YYYY-MM-DD`` strings or ``date`` objects (never timestamps)."""
