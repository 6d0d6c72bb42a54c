"""Access tags as columns of the embeddings table, and the scan condition that reads them.

The retrieval front used to ask the store for four times ``top_k`` rows and drop the ones a
principal may not see: a question whose nearest rows were mostly denied got fewer rows than
it could have, and every denied vector was read and scored. The indexer now writes each
access tag into the embeddings table, and :func:`access_condition` turns an
:class:`~groundlock.AccessPolicy` and a :class:`~groundlock.Principal` into the scan's
``WHERE``: delta-rs skips the data files whose column statistics rule every row out, and
DataFusion drops the other denied rows before a vector reaches the ranking.

The condition admits exactly the rows :meth:`AccessPolicy.admits` admits. Per tag ``k``:

* ``tag_k`` (text): the row's value when it is one string; ``''`` when it is a list of
  values (a string no grant can name: grants are identifiers); NULL when the row has no
  such tag. A string column keeps min/max statistics, so ``tag_k IN (...)`` skips files.
* ``tags_k`` (list of text): the values when the row's tag is a list, else NULL (a list is
  "any of them"; lists carry no statistics, so the ``''`` above lets a file of single
  values be skipped by ``tag_k`` alone).
* ``tagok_k`` (bool): the row has the tag and every value is one a grant could name (what
  the ``"*"`` grant asks).

``k`` is the tag's name when it is a plain lower-case name (``business_unit``), else
``_`` and 16 hex digits of its SHA-256, so a column name never carries a tag's text into
SQL. Every value in the condition is a quoted literal (:func:`quote`), never SQL.
The embeddings table's ``access_tags`` column (the row's tags as JSON, as in the chunks
table) marks an index written this way; an index written before it has no tag columns, and
the store leaves access to the front's check after the search, as before.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from arro3.core import Array, DataType, list_array

from groundlock.core.access import WILDCARD, AccessPolicy, Principal, is_tag

__all__ = [
    "TAGS_MARKER",
    "AccessScan",
    "access_condition",
    "missing_tags",
    "tag_arrays",
    "tag_column",
]

TAGS_MARKER = "access_tags"
"""The embeddings-table column whose presence says the index has its tags as columns."""

_PLAIN = re.compile(r"[a-z][a-z0-9_]{0,62}")
_STRING = DataType.string()


@dataclass(frozen=True)
class AccessScan:
    """Who is searching, under which access policy: what the scan's condition is made of.

    Passed to :class:`~groundlock.lakehouse.DeltaVectorStore`'s search as ``access=``; the
    retrieval front passes it for every request with a principal.
    """

    policy: AccessPolicy
    principal: Principal


def _suffix(tag: str) -> str:
    if _PLAIN.fullmatch(tag):
        return tag
    return "_" + hashlib.sha256(tag.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def tag_column(tag: str) -> str:
    """The text column of access tag ``tag``.

    >>> tag_column("business_unit"), tag_column("Unité d'affaires")
    ('tag_business_unit', 'tag__d11bdf8b7914c37f')
    """
    return "tag_" + _suffix(tag)


def _list_column(tag: str) -> str:
    return "tags_" + _suffix(tag)


def _ok_column(tag: str) -> str:
    return "tagok_" + _suffix(tag)


def tag_arrays(tags_of_rows: Sequence[Mapping[str, str | list[str]]]) -> dict[str, Array]:
    """The marker and the three columns of every tag any row has, one entry per row.

    A row without a tag gets NULL in its columns, as delta-rs gives the rows already in the
    table a tag column that a later write adds (a tag no row had: none of them has it).
    """
    columns: dict[str, Array] = {
        TAGS_MARKER: Array(
            [json.dumps(dict(t), sort_keys=True, ensure_ascii=False) for t in tags_of_rows],
            _STRING,
        )
    }
    for tag in sorted({tag for tags in tags_of_rows for tag in tags}):
        single: list[str | None] = []
        flat: list[str] = []
        offsets = [0]
        absent: list[bool] = []
        fit: list[bool | None] = []
        for tags in tags_of_rows:
            value = tags.get(tag)
            values = [value] if isinstance(value, str) else list(value or [])
            single.append(value if isinstance(value, str) else None if value is None else "")
            if isinstance(value, list):
                flat.extend(value)
            offsets.append(len(flat))
            absent.append(not isinstance(value, list))
            fit.append(None if value is None else bool(values) and all(map(is_tag, values)))
        columns[tag_column(tag)] = Array(single, _STRING)
        columns[_list_column(tag)] = list_array(
            Array(offsets, DataType.int32()),
            Array(flat, _STRING),
            mask=Array(absent, DataType.bool()),
        )
        columns[_ok_column(tag)] = Array(fit, DataType.bool())
    return columns


def quote(value: str) -> str:
    """A SQL string literal: quotes doubled (DataFusion reads no backslash escape in it).

    >>> quote("O'Brien")
    "'O''Brien'"
    """
    return "'" + value.replace("'", "''") + "'"


def _name(column: str) -> str:
    return f'"{column}"'  # made by tag_column & co.: [a-z0-9_] only


def missing_tags(policy: AccessPolicy, columns: Iterable[str]) -> list[str]:
    """The policy's tags that no row of the index carries (no column), in policy order."""
    have = set(columns)
    return [tag for tag in (*policy.attributes, *policy.levels) if tag_column(tag) not in have]


def access_condition(scan: AccessScan, columns: Iterable[str]) -> str:
    """The ``WHERE`` condition admitting exactly the rows ``scan.policy`` lets its principal see.

    ``columns`` are the table's column names: a tag without a column is one no row has, so
    the condition is ``FALSE`` (an untagged row is never shown), as the front would decide.

    >>> policy = AccessPolicy(attributes=("business_unit",),
    ...                       levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "SECRET")})
    >>> clerk = Principal(principal_id="u1", grants={"business_unit": "MARINE",
    ...                                              "sensitivity_level": "INTERNAL"})
    >>> cols = ["tag_business_unit", "tag_sensitivity_level"]
    >>> print(access_condition(AccessScan(policy, clerk), cols))  # doctest: +NORMALIZE_WHITESPACE
    ("tag_business_unit" IN ('MARINE', '') AND ("tag_business_unit" IN ('MARINE')
     OR array_has_any("tags_business_unit", make_array('MARINE'))))
     AND ("tag_sensitivity_level" IN ('PUBLIC', 'INTERNAL')
     AND "tags_sensitivity_level" IS NULL)
    """
    have = set(columns)
    policy, principal = scan.policy, scan.principal
    parts: list[str] = []
    for tag in policy.attributes:
        granted = _granted(principal, tag)
        single, many, fit = tag_column(tag), _list_column(tag), _ok_column(tag)
        if single not in have:
            return "FALSE"
        if WILDCARD in granted:
            parts.append(f"{_name(fit)} IS TRUE")
            continue
        # A grant that is not an identifier names no tag a row may carry; only a principal
        # built without validation holds one, and it must not match the list marker ''.
        values = sorted(g for g in set(granted) if is_tag(g))
        if not values:
            return "FALSE"
        listed = ", ".join(quote(v) for v in values)
        parts.append(
            f"({_name(single)} IN ({listed}, '') AND ({_name(single)} IN ({listed}) "
            f"OR array_has_any({_name(many)}, make_array({listed}))))"
        )
    for tag, order in policy.levels.items():
        rank = {level: index for index, level in enumerate(order)}
        known = [rank[level] for level in _granted(principal, tag) if level in rank]
        allowed = order[: max(known, default=-1) + 1]
        if not allowed or tag_column(tag) not in have:
            return "FALSE"
        listed = ", ".join(quote(level) for level in allowed)
        parts.append(
            f"({_name(tag_column(tag))} IN ({listed}) AND {_name(_list_column(tag))} IS NULL)"
        )
    return " AND ".join(parts) or "TRUE"


def _granted(principal: Principal, tag: str) -> tuple[str, ...]:
    # As the front reads grants: a bare string (a principal built without validation) is
    # one value, never its characters.
    values = principal.grants.get(tag, ())
    return (values,) if isinstance(values, str) else tuple(values)
