"""The lake's tables: rows validated against their schema (schemas/) on the way in, redacted of known
secrets, appended as new parts and read back typed by the current schema.

Each table is `<table>/part-<stamp>-<id>.parquet` files, one per write (appends never rewrite earlier
data), and `<table>/_schema.parquet`: zero rows, the current schema, so SQL views always type-check.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import duckdb

from schemas import TABLES, TableSchema, schema_for
from webgym.lake.files import ROW_GROUP_ROWS, parquet_bytes, safe_id, stamp, try_lock
from webgym.lake.lineage import current_flow_run_id, stamped
from webgym.lake.parts import Parts
from webgym.llm.secrets import known_secrets, redact_known

if TYPE_CHECKING:  # Arrow is imported where rows are read or written: `webgym sql` starts without it
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as ds

log = logging.getLogger(__name__)

SCHEMA_FILE = "_schema.parquet"


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema`: columns in its order, and a column the schema gained since the rows were
    written (a journal a killed writer of an older release left) null, so upgrading never strands rows."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    missing = [f.name for f in schema if f.name not in table.column_names]
    required = [name for name in missing if not schema.field(name).nullable]
    if required:
        table_name = (schema.metadata or {}).get(b"table", b"?").decode()
        raise ValueError(f"rows for table {table_name} lack its required column(s) {', '.join(required)}")
    columns = [table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, names=schema.names).cast(schema)


class Tables(Parts):
    """Schema files, validated appends and typed reads of every table of the data model."""

    def to_arrow(self, name: str, frame: pd.DataFrame) -> pa.Table:
        """`frame` as the table's Arrow rows, validated, with every secret the process knows redacted from its
        text: the one place every write passes (a model response or page can echo an API key)."""
        schema = self.ensure_table(name)
        secrets = known_secrets()
        if secrets:
            from pandas.api.types import is_string_dtype

            text = [c for c in frame.columns if frame[c].dtype == object or is_string_dtype(frame[c])]
            frame = frame.assign(**{c: frame[c].map(lambda v: redact_known(v, secrets)) for c in text})
        return schema.to_arrow(frame)

    def ensure_table(self, name: str) -> TableSchema:
        """Create the table's folder and schema file, refreshing the file when the schema changed."""
        import pyarrow.parquet as pq

        schema = schema_for(name)
        path = self._path(name, SCHEMA_FILE)
        if self.fs.exists(path):
            with self.fs.open(path, "rb") as handle:
                if pq.read_schema(handle).equals(schema.arrow, check_metadata=False):
                    return schema
        self._put(path, parquet_bytes(schema.arrow.empty_table()))
        return schema

    def init(self, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Give every table of the data model a schema file, so views over the lake bind (idempotent).

        A file that is missing or lacks a column of the current schema is rewritten (`ensure_table`).
        """
        for name in self.stale_tables(con):
            self.ensure_table(name)

    def stale_tables(self, con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
        """Tables whose schema file is missing or lacks a column of the current schema. The check reads the
        footers with DuckDB (`con`, one of `connect_duckdb`'s, or a new one), so a command that only reads
        (`webgym sql`) imports no Arrow on a current lake; writers still refresh a changed column type when
        they write."""
        files = {self._as_url(self._path(name, SCHEMA_FILE)): name for name in TABLES}
        found = [url for url in files if self.fs.exists(url)]
        columns: dict[str, set[str]] = {name: set() for name in TABLES}
        if found:
            with contextlib.nullcontext(con) if con is not None else self.connect_duckdb() as reader:
                for url, column in reader.execute("SELECT file_name, name FROM parquet_schema(?)", [found]).fetchall():
                    columns[files[url]].add(column)
        return [name for name, present in columns.items() if not set(schema_for(name).columns) <= present]

    def has_files(self, name: str) -> bool:
        """Whether the table's folder holds any Parquet file (its schema file or a part)."""
        return bool(self.fs.glob(self._path(name, "*.parquet")))

    def write_table(self, name: str, frame: pd.DataFrame, run_id: str = "run") -> str | None:
        """Validate `frame` and append it as a new part, each row recording the flow run writing it (lineage.py);
        return the part's path (None if empty)."""
        return self.write_arrow(name, self.to_arrow(name, stamped(name, frame, current_flow_run_id())), run_id)

    def write_arrow(self, name: str, table: pa.Table, run_id: str = "run") -> str | None:
        """Append an Arrow table already in the table's schema (as `write_table` makes it) as a new part."""
        table = conformed(table, self.ensure_table(name).arrow)
        if table.num_rows == 0:
            return None
        path = self._path(name, f"part-{stamp()}-{safe_id(run_id)}-{uuid.uuid4().hex[:6]}.parquet")
        self._put(path, parquet_bytes(table))
        log.debug("wrote %d rows to %s", table.num_rows, path)
        self.merge(name)
        return path

    def read_arrow(self, name: str, columns: list[str] | None = None,
                   filter: ds.Expression | None = None) -> pa.Table:
        """All committed rows of a table as Arrow, typed by the current schema."""
        import pyarrow.dataset as ds

        schema = schema_for(name)

        def read(parts: list[str]) -> pa.Table:
            if not parts:
                empty = schema.arrow.empty_table()
                return empty.select(columns) if columns else empty
            dataset = ds.dataset(parts, schema=schema.arrow, format="parquet", filesystem=self.fs)
            return dataset.to_table(columns=columns, filter=filter)

        return self._read_parts(name, read)

    def read_table(self, name: str, columns: list[str] | None = None,
                   filter: ds.Expression | None = None) -> pd.DataFrame:
        """All committed rows of a table as a DataFrame (nested columns as dicts and lists)."""
        return self.read_arrow(name, columns, filter).to_pandas(maps_as_pydicts="strict")

    def read_batches(self, name: str, columns: list[str] | None = None,
                     filter: ds.Expression | None = None) -> Iterator[pd.DataFrame]:
        """The committed rows of a table as frames of at most ROW_GROUP_ROWS rows, read as they are consumed,
        for tables too big to hold (ingest's index of known tasks): memory is a row group or two whatever the
        table's size. The table's lock is held until the last frame is read, so no merge, compaction or
        replace removes a part under the reader (writers skip their merge meanwhile): consume it whole
        before writing the table."""
        import pyarrow.dataset as ds

        with try_lock(self._lock_path(name), wait=True):
            self._finish_intent(name)
            parts = self.parts(name)
            if not parts:
                return
            dataset = ds.dataset(parts, schema=schema_for(name).arrow, format="parquet", filesystem=self.fs)
            for batch in dataset.to_batches(columns=columns, filter=filter, batch_size=ROW_GROUP_ROWS,
                                            use_threads=False, batch_readahead=0, fragment_readahead=0):
                if batch.num_rows:
                    yield batch.to_pandas(maps_as_pydicts="strict")

    def count(self, name: str) -> int:
        """Committed rows of a table (read from the parts' footers)."""
        import pyarrow.dataset as ds

        def count(parts: list[str]) -> int:
            if not parts:
                return 0
            return ds.dataset(parts, schema=schema_for(name).arrow, format="parquet",
                              filesystem=self.fs).count_rows()

        return self._read_parts(name, count)

    def counts(self) -> dict[str, int]:
        """Rows per table, for every table of the data model."""
        return {name: self.count(name) for name in TABLES}
