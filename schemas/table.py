"""The one mechanism that turns a typed row model into a table definition.

Each module in schemas/ declares a pydantic row model and wraps it in a `TableSchema`; the Arrow
schema, column lists, column docs, write-time validation and the quality suites all derive from it,
so a column is written down exactly once.
"""

from __future__ import annotations

import datetime as dt
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, field_validator


def valid_text(value: Any) -> Any:
    """`value` with every string in it (also inside lists and dicts) made encodable as UTF-8: surrogate
    pairs joined, lone surrogates replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {valid_text(k): valid_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [valid_text(v) for v in value]
    return value


class Row(BaseModel):
    """Base of every row model: text is made storable once, here, whatever produced it (model output and
    page titles can hold lone surrogates, which neither UTF-8, Arrow nor pandas' string columns accept)."""

    model_config = ConfigDict(defer_build=True)
    """Validators are built on first use: `webgym sql` reads the column lists of every table and
    validates no row, so it does not pay for them."""

    @field_validator("*", mode="before")
    @classmethod
    def _valid_text(cls, value: Any) -> Any:
        return valid_text(value)

FLOW_RUN_ID = "flow_run_id"
"""The lineage column: the Prefect flow run that appended a row (runs.flow_run_id). The lake fills it on every
append (webgym/lake/lineage.py), so a stage never sets it."""


def flow_run_field() -> Any:
    """The `flow_run_id` column's field, declared by every table a flow run appends to."""
    return Field(default=None, description="The Prefect flow run that wrote the row (runs.flow_run_id; the id in the "
                                           "Prefect UI's URL); null: written outside a flow run (a CLI command without "
                                           "Prefect, a test) or before rows recorded it.")


if TYPE_CHECKING:  # frames come from callers; importing pandas here would slow every `webgym` start
    import pandas as pd
    import pyarrow as pa


class SchemaError(ValueError):
    """A frame does not fit its table's schema; the message names table, column and row."""


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
        raise TypeError(f"unions other than Optional are not storable: {annotation}")
    return annotation, False


def arrow_type(annotation: Any) -> pa.DataType:
    """Arrow type for a (non-optional) Python annotation used in a row model."""
    import pyarrow as pa  # here, not at import: `webgym --help` and `webgym sql` start without Arrow

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return arrow_type(typing.get_args(annotation)[0])
    if origin is Literal:
        return pa.string()
    if origin is list:
        (item,) = typing.get_args(annotation)
        item, _ = _unwrap_optional(item)
        return pa.list_(arrow_type(item))
    if origin is dict:
        key, value = typing.get_args(annotation)
        return pa.map_(arrow_type(key), arrow_type(value))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([arrow_field(name, info) for name, info in annotation.model_fields.items()])
    simple = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_(),
              bytes: pa.binary(), dt.datetime: pa.timestamp("us", tz="UTC")}
    if annotation in simple:
        return simple[annotation]
    raise TypeError(f"no Arrow type for annotation {annotation!r}")


def arrow_field(name: str, info: Any) -> pa.Field:
    import pyarrow as pa

    annotation, nullable = _unwrap_optional(info.annotation)
    metadata = {"doc": info.description} if info.description else None
    return pa.field(name, arrow_type(annotation), nullable=nullable, metadata=metadata)


@dataclass(frozen=True)
class TableSchema:
    """A lake table: its row model plus the keys and references the quality suite enforces."""

    name: str
    row: type[BaseModel]
    keys: tuple[str, ...]
    description: str
    references: dict[str, str] = field(default_factory=dict)
    """column -> "table.column" it must point to (referential integrity)."""

    @property
    def arrow(self) -> pa.Schema:
        import pyarrow as pa

        return pa.schema([arrow_field(n, i) for n, i in self.row.model_fields.items()],
                         metadata={"table": self.name, "doc": self.description})

    @property
    def columns(self) -> list[str]:
        return list(self.row.model_fields)

    @property
    def stamped(self) -> bool:
        """Whether appends record the flow run that wrote each row (the table declares `flow_run_field`)."""
        return FLOW_RUN_ID in self.row.model_fields and FLOW_RUN_ID not in self.keys

    def doc(self, column: str) -> str:
        return self.row.model_fields[column].description or ""

    def enum_values(self, column: str) -> list[str] | None:
        """Allowed values of a Literal column, None for free columns."""
        annotation, _ = _unwrap_optional(self.row.model_fields[column].annotation)
        if typing.get_origin(annotation) is Literal:
            return list(typing.get_args(annotation))
        return None

    def bounds(self, column: str) -> tuple[float | None, float | None]:
        """(min, max) declared with Field(ge=..., le=...) on a column."""
        low = high = None
        for constraint in self.row.model_fields[column].metadata:
            if isinstance(constraint, annotated_types.Ge):
                low = constraint.ge
            elif isinstance(constraint, annotated_types.Le):
                high = constraint.le
        return low, high

    def to_arrow(self, frame: pd.DataFrame) -> pa.Table:
        """Validate a frame against this schema and convert it; raise SchemaError naming the culprit.

        Missing nullable columns are filled with nulls; missing required columns, unknown
        columns, uncastable values and nulls in required columns are refused.
        """
        import pyarrow as pa

        schema = self.arrow
        unknown = [c for c in frame.columns if c not in schema.names]
        if unknown:
            raise SchemaError(f"table {self.name}: unknown column(s) {unknown}; "
                              f"the schema has {schema.names}")
        missing = [f.name for f in schema if f.name not in frame.columns and not f.nullable]
        if missing:
            raise SchemaError(f"table {self.name}: missing required column(s) {missing}")
        frame = frame.reset_index(drop=True)
        arrays = []
        for f in schema:
            if f.name not in frame.columns:
                arrays.append(pa.nulls(len(frame), type=f.type))
                continue
            array = self._column(frame, f)
            if not f.nullable and array.null_count:
                row = next(i for i, v in enumerate(array.is_null().to_pylist()) if v)
                raise SchemaError(f"table {self.name}, column {f.name!r}, row {row}"
                                  f"{self._row_key(frame, row)}: null in a required column")
            arrays.append(array)
        return pa.Table.from_arrays(arrays, schema=schema)

    def _column(self, frame: pd.DataFrame, f: pa.Field) -> pa.Array:
        import pyarrow as pa

        values = frame[f.name]
        if values.isna().all():  # e.g. a column a stage left out of its row dicts: NaN floats, whatever its type
            return pa.nulls(len(values), type=f.type)
        try:
            return pa.array(values, type=f.type, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        try:
            return pa.array(values, from_pandas=True).cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            pass
        for row, value in enumerate(values.tolist()):
            try:
                pa.array([value], type=f.type, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as error:
                raise SchemaError(
                    f"table {self.name}, column {f.name!r}, row {row}{self._row_key(frame, row)}: "
                    f"cannot store {value!r} as {f.type} ({error})") from None
        raise SchemaError(f"table {self.name}, column {f.name!r}: cannot convert "
                          f"{values.dtype} to {f.type}")

    def _row_key(self, frame: pd.DataFrame, row: int) -> str:
        parts = [f"{k}={frame.at[row, k]!r}" for k in self.keys if k in frame.columns]
        return f" ({', '.join(parts)})" if parts else ""

    def empty_frame(self) -> pd.DataFrame:
        return self.arrow.empty_table().to_pandas()
