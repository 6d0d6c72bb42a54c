"""Annotated field types shared by the contracts.

Each type rejects bad values with a :class:`PydanticCustomError` whose *type* names the spec's
validation group (``similarity_integrity``, ``text_integrity``, ...), so a validation failure
can be turned into the right reason code without parsing messages. Messages name the rule,
never the offending value: a similarity score or chunk text must not leak into a log line.
"""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Strict, StrictStr
from pydantic_core import PydanticCustomError

from groundlock.text.sanitize import HIDDEN_CHARACTERS_PATTERN, WHITESPACE_CHARACTERS

__all__ = [
    "Identifier",
    "IsoDate",
    "NonNegativeFinite",
    "Similarity",
    "SourceReference",
]

# Characters that would let a metadata value break out of an evidence header
# "[C0 | chunk_id=... | knowledge_id=... | source=...]", spread over several lines, or hide.
_FORBIDDEN_IN_METADATA_RE = re.compile(
    "["
    + re.escape("[]|<>")
    + "".join(re.escape(c) for c in sorted(WHITESPACE_CHARACTERS - {" "}))
    + "]|"
    + HIDDEN_CHARACTERS_PATTERN
)


_BREAKOUT_ASCII_RE = re.compile(r"[\[\]|<>]")


def _check_metadata_text(value: str, max_length: int) -> str:
    # Fast path for the usual id: printable ASCII has no line break, tab, control or
    # invisible character, so only the five header characters and the ends need a look.
    if (
        0 < len(value) <= max_length
        and value.isascii()
        and value.isprintable()
        and value[0] != " "
        and value[-1] != " "
        and not _BREAKOUT_ASCII_RE.search(value)
    ):
        return value
    if not value or value != value.strip():
        raise PydanticCustomError(
            "identifier", "must be non-empty, without leading or trailing spaces"
        )
    if len(value) > max_length:
        raise PydanticCustomError(
            "identifier", "must be at most {max_length} characters", {"max_length": max_length}
        )
    if _FORBIDDEN_IN_METADATA_RE.search(value):
        raise PydanticCustomError(
            "identifier",
            "must not contain '[', ']', '|', '<', '>', line breaks, tabs, control or "
            "invisible characters",
        )
    return value


def _check_identifier(value: str) -> str:
    return _check_metadata_text(value, 256)


def _check_source_reference(value: str) -> str:
    return _check_metadata_text(value, 512)


Identifier = Annotated[StrictStr, AfterValidator(_check_identifier)]
"""An id that appears in evidence headers or audit rows: printable, single-line, no brackets."""

SourceReference = Annotated[StrictStr, AfterValidator(_check_source_reference)]
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
