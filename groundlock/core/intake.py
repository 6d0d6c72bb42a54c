"""Turn whatever the caller passed into a valid RetrievalBundle, or into a precise refusal.

Callers hand R2 a ``RetrievalBundle``, a parsed JSON dict, or something that is neither.
Input limits are checked on the raw value first, so a million-row or megabyte-chunk request
is refused before pydantic spends time on it. Validation errors become one reason code,
chosen by the spec's fail-fast order (V1 schema, V2 ranks, V3 similarity, V4 text), and a
message that names the offending field by its path (``results[3].similarity_score``).

Every row of every bundle is validated, whatever R2 will later admit; the cost is kept to
what pydantic-core does in Rust. Checks over all rows (input limits, rank and chunk_id
integrity) run as C passes (``map`` over ``operator`` getters, ``set``, ``max``) and walk the
rows in Python only to name the row that fails, so the messages are the row-by-row ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from groundlock.contracts._fields import Identifier
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.policies.model import InputLimits

__all__ = [
    "Rejection",
    "raw_limit_problem",
    "read_bundle",
    "salvage_identity",
]

# Lower number wins when one payload breaks several rules: the spec's V1..V4 order.
_ERROR_TYPE_REASON: dict[str, tuple[int, ReasonCode]] = {
    "rank_integrity": (2, ReasonCode.RANK_INTEGRITY),
    "duplicate_chunk_id": (2, ReasonCode.DUPLICATE_CHUNK_ID),
    "similarity_integrity": (3, ReasonCode.SIMILARITY_INTEGRITY),
    "text_integrity": (4, ReasonCode.TEXT_INTEGRITY),
    "retrieval_inconsistent": (5, ReasonCode.RETRIEVAL_INCONSISTENT),
}
_SCHEMA = (1, ReasonCode.INPUT_SCHEMA_INVALID)

_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)
_MAX_KEY = 64
_MAX_DETAIL = 240


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a payload is not a usable bundle, plus whatever identity could be salvaged."""

    reason: ReasonCode
    message: str
    request_id: str | None
    run_id: str | None


def read_bundle(payload: object, limits: InputLimits) -> RetrievalBundle | Rejection:
    """Validate ``payload`` into a bundle, or explain precisely why it is not one.

    A ``Rejection`` passes through: the retrieval front hands one to R2 when it refused a
    request before any bundle existed, so its reason and message reach the caller.
    """
    if isinstance(payload, Rejection):
        return payload
    if isinstance(payload, RetrievalBundle):
        problem = _limit_problem(
            len(payload.results),
            payload.user_question,
            list(map(_CHUNK_TEXT, payload.results)),
            limits,
        )
        if problem:
            return Rejection(
                ReasonCode.INPUT_LIMIT_EXCEEDED, problem, payload.request_id, payload.run_id
            )
        return payload
    if not isinstance(payload, Mapping):
        return Rejection(
            ReasonCode.INPUT_SCHEMA_INVALID,
            f"bundle: expected a JSON object (mapping), got {type(payload).__name__}",
            None,
            None,
        )
    try:
        return _read_mapping(dict(payload), limits)
    except Exception as exc:  # noqa: BLE001  (a caller's mapping or row type may fail any way)
        return Rejection(
            ReasonCode.INPUT_SCHEMA_INVALID,
            f"bundle: could not be read ({type(exc).__name__})",
            *salvage_identity(payload),
        )


def _read_mapping(data: dict[str, Any], limits: InputLimits) -> RetrievalBundle | Rejection:
    request_id, run_id = salvage_identity(data)
    problem = raw_limit_problem(data, limits)
    if problem:
        return Rejection(ReasonCode.INPUT_LIMIT_EXCEEDED, problem, request_id, run_id)
    try:
        return RetrievalBundle.model_validate(data)
    except ValidationError as exc:
        reason, message = _explain(exc)
        return Rejection(reason, message, request_id, run_id)


def salvage_identity(payload: object) -> tuple[str | None, str | None]:
    """The (request_id, run_id) of any payload, each None unless it is a valid identifier."""
    if isinstance(payload, RetrievalBundle | Rejection):
        return payload.request_id, payload.run_id
    if isinstance(payload, Mapping):
        try:
            return _salvage_id(payload.get("request_id")), _salvage_id(payload.get("run_id"))
        except Exception:  # noqa: BLE001  (salvage is best effort and must never raise)
            return None, None
    return None, None


def _salvage_id(value: object) -> str | None:
    try:
        return _IDENTIFIER.validate_python(value)
    except ValidationError:
        return None


def raw_limit_problem(payload: Mapping[str, Any], limits: InputLimits) -> str | None:
    """Which input limit a raw (still unvalidated) bundle exceeds, naming the field; or None.

    Cheap enough to run before parsing: the chain runs it first, and the HTTP gate runs it
    on the request body before the chain is called.
    """
    results = payload.get("results")
    rows: Sequence[Any] = results if isinstance(results, list | tuple) else ()
    question = payload.get("user_question")
    asked = question if isinstance(question, str) else ""
    # The row count and the question first, before any row is read (as before the texts).
    if problem := _limit_problem(len(rows), asked, (), limits):
        return problem
    if not rows or set(map(type, rows)) == _DICT_ONLY:  # JSON rows: no check per row
        return _limit_problem(len(rows), asked, [row.get("chunk_text") for row in rows], limits)
    # Other rows are read one by one, up to the first long text, as a caller's mapping may
    # fail when read (validation then says so). A row that is no mapping is skipped
    # (validation refuses it), so indexes count mappings only. ``type(row) is dict`` first:
    # the ABC check costs ~1 us a row.
    mappings = (row for row in rows if type(row) is dict or isinstance(row, Mapping))
    for index, row in enumerate(mappings):
        text = row.get("chunk_text")
        if isinstance(text, str) and len(text) > limits.max_chunk_chars:
            return _long_text(index, limits)
    return None


_CHUNK_TEXT = attrgetter("chunk_text")
_DICT_ONLY = {dict}
_STR_ONLY = {str}


def _limit_problem(
    row_count: int, question: str, texts: Sequence[object], limits: InputLimits
) -> str | None:
    if row_count > limits.max_results:
        return f"results: {row_count} rows exceed the limit of {limits.max_results}"
    if len(question) > limits.max_question_chars:
        return f"user_question: longer than the limit of {limits.max_question_chars} characters"
    # The usual case in C: every text a string, none too long. Anything else (a null or
    # non-string text, which validation refuses later, or a long one) is looked at row by
    # row, to name the first long text.
    if not texts or (
        set(map(type, texts)) == _STR_ONLY
        and max(map(len, cast("list[str]", texts))) <= limits.max_chunk_chars
    ):
        return None
    for index, text in enumerate(texts):
        if isinstance(text, str) and len(text) > limits.max_chunk_chars:
            return _long_text(index, limits)
    return None


def _long_text(index: int, limits: InputLimits) -> str:
    return (
        f"results[{index}].chunk_text: longer than the limit of {limits.max_chunk_chars} characters"
    )


def _explain(exc: ValidationError) -> tuple[ReasonCode, str]:
    errors = exc.errors(include_url=False, include_input=False)
    ranked = sorted(
        (_ERROR_TYPE_REASON.get(error["type"], _SCHEMA), position)
        for position, error in enumerate(errors)
    )
    (_, reason), first = ranked[0]
    error = errors[first]
    location = _format_location(error["loc"])
    detail = _clip(str(error["msg"]), _MAX_DETAIL)
    message = f"{location}: {detail}" if location else detail
    same_reason = sum(1 for (_, other), _ in ranked if other is reason)
    if same_reason > 1:
        message += f" (and {same_reason - 1} more problem(s) of this kind)"
    return reason, message


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_location(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in {"function-after", "function-before", "function-wrap"} or "[" in item:
            continue  # pydantic's internal validator steps, not user-facing fields
        else:
            name = _clip(item, _MAX_KEY)  # an unknown key is caller input: never echo it whole
            parts.append(f".{name}" if parts else name)
    return "".join(parts)
