"""Audit rows as Arrow tables: the schema derived from a row model, and the conversion.

The only part of the audit contract that is Delta's business: a row model's fields, in
order, are the table's columns, and their annotations give the column types.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import itemgetter
from typing import Annotated, Union, get_args, get_origin

from arro3.core import Array, DataType, Field, Schema, Table, list_array

from groundlock.contracts.audit_rows import TableRow

__all__ = ["arrow_schema", "to_arrow"]


def _arrow_type(annotation: object) -> tuple[DataType, bool]:
    """The Arrow type of a field annotation, and whether it is nullable."""
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        nullable = len(members) < len(get_args(annotation))
        (annotation,) = members
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is tuple:
        return DataType.list(Field("element", DataType.string(), nullable=False)), nullable
    scalar: dict[object, DataType] = {
        str: DataType.string(),
        int: DataType.int64(),
        float: DataType.float64(),
        bool: DataType.bool(),
        datetime: DataType.timestamp("us", tz="UTC"),
    }
    return scalar[annotation], nullable


def arrow_schema(row_type: type[TableRow]) -> Schema:
    """The table's Arrow schema: one column per field, in field order."""
    fields = []
    for name, info in row_type.model_fields.items():
        data_type, nullable = _arrow_type(info.annotation)
        fields.append(Field(name, data_type, nullable=nullable))
    return Schema(fields)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(value: datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def to_arrow(row_type: type[TableRow], rows: Sequence[TableRow]) -> Table:
    """``rows`` (already validated ``row_type`` instances) as an Arrow table of its schema."""
    schema = arrow_schema(row_type)
    fields = [schema.field(i) for i in range(len(schema))]
    # One C-level pass: each row's values in column order, then transposed to columns.
    values_of = itemgetter(*(field.name for field in fields))
    transposed = list(zip(*(values_of(row.__dict__) for row in rows), strict=True)) or [
        () for _ in fields
    ]
    columns = []
    for field, values in zip(fields, transposed, strict=True):
        data_type = field.type
        if data_type.is_timestamp(data_type):
            micros = Array([None if v is None else _micros(v) for v in values], DataType.int64())
            columns.append(micros.cast(data_type))
        elif data_type.is_list(data_type):
            offsets = [0]
            flat: list[str] = []
            for items in values:
                flat.extend(items or ())
                offsets.append(len(flat))
            nulls = [items is None for items in values]
            columns.append(
                list_array(
                    Array(offsets, DataType.int32()),
                    Array(flat, DataType.string()),
                    type=data_type,
                    mask=Array(nulls, DataType.bool()) if any(nulls) else None,
                )
            )
        else:
            columns.append(Array(list(values), data_type))
    return Table.from_arrays(columns, schema=schema)
