"""What the Spark runner's tasks share: reading a row's bundle, and the Arrow schemas."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["NOT_JSON", "Refused", "arrow_schema", "request_of"]

NOT_JSON = "bundle: not a JSON object (the row's text is not JSON)"


@dataclass(frozen=True, slots=True)
class Refused:
    """A row refused before the chain (not JSON): answered FAILED, never recorded."""

    message: str


def request_of(value: object, request_id: object, kind: str, job: str | None) -> object:
    """What the chain is given for one row: the question's request, or the parsed bundle.

    A bundle without a ``run_id`` takes ``job``'s (when given); text that is not JSON is
    :class:`Refused`. Any other JSON is the chain's to refuse, with its own reason.
    """
    if kind == "question":
        return {"user_question": value, "request_id": request_id, "run_id": job}
    if not isinstance(value, str):
        return Refused(NOT_JSON)
    try:
        bundle = json.loads(value)
    except (ValueError, RecursionError):
        return Refused(NOT_JSON)
    if job is not None and isinstance(bundle, dict) and bundle.get("run_id") is None:
        bundle["run_id"] = job
    return bundle


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL string of ours (string, double and boolean columns)."""
    import pyarrow as pa  # noqa: PLC0415

    types = {"string": pa.string(), "double": pa.float64(), "boolean": pa.bool_()}
    return pa.schema(
        [(name, types[kind]) for name, kind in (part.split() for part in ddl.split(","))]
    )
