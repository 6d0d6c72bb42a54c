"""Annotated field types shared by the contracts.

Each type rejects bad values with a :class:`PydanticCustomError` whose *type* names the spec's
validation group (``similarity_integrity``, ``text_integrity``, ...), so a validation failure
can be turned into the right reason code without parsing messages. Messages name the rule,
never the offending value: a similarity score or chunk text must not leak into a log line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Annotated

from pydantic import (
    AfterValidator,
    BeforeValidator,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from groundlock.text.sanitize import HIDDEN_RANGES, WHITESPACE_CHARACTERS

__all__ = [
    "Identifier",
    "IsoDate",
    "NonNegativeFinite",
    "Similarity",
    "SourceReference",
]


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


@dataclass(frozen=True, slots=True)
class _MetadataText:
    """A strict string of 1..max_length characters matching ``METADATA_TEXT_PATTERN``.

    A wrong type keeps pydantic's own error (``string_type``); a string that breaks the
    rules gets the ``identifier`` error, whatever rule it broke.
    """

    max_length: int

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.chain_schema(
            [
                core_schema.str_schema(strict=True),
                core_schema.custom_error_schema(
                    core_schema.str_schema(
                        max_length=self.max_length, pattern=METADATA_TEXT_PATTERN
                    ),
                    custom_error_type="identifier",
                    custom_error_message=(
                        "must be 1 to {max_length} characters on one line, with no space at "
                        "either end and no '[', ']', '|', '<', '>', tab, control or invisible "
                        "character"
                    ),
                    custom_error_context={"max_length": self.max_length},
                ),
            ]
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The pattern is in Rust regex syntax, which JSON Schema readers (ECMA-262) do not
        # share: publish the type and the length only, in both modes.
        return {"type": "string", "maxLength": self.max_length}


Identifier = Annotated[str, _MetadataText(256)]
"""An id that appears in evidence headers or audit rows: printable, single-line, no brackets."""

SourceReference = Annotated[str, _MetadataText(512)]
"""A human-readable source (document title, page); same character rules, up to 512 chars."""


def _check_similarity(value: float) -> float:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise PydanticCustomError(
            "similarity_integrity", "must be a finite number between 0.0 and 1.0"
        )
    return value


Similarity = Annotated[float, Strict(), AfterValidator(_check_similarity)]
"""A retrieval score normalised to [0, 1]; strings and booleans are type errors."""


def _check_non_negative_finite(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise PydanticCustomError("value_error", "must be a finite, non-negative number")
    return value


NonNegativeFinite = Annotated[float, Strict(), AfterValidator(_check_non_negative_finite)]

_ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _parse_iso_date(value: object) -> object:
    if isinstance(value, date) and not hasattr(value, "hour"):
        return value
    if isinstance(value, str) and _ISO_DATE_RE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise PydanticCustomError("date_format", "must be a calendar date written YYYY-MM-DD")


IsoDate = Annotated[date, BeforeValidator(_parse_iso_date)]
"""A calendar date; only ``YYYY-MM-DD`` strings or ``date`` objects (never timestamps)."""
