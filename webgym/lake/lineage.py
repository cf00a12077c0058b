"""Which flow run is writing: the id the lake puts in the `flow_run_id` column of every row it appends.

The lake knows nothing of Prefect: the flows package registers where the id comes from (flows/__init__.py,
Prefect's runtime), so any process that imports a flow (a worker of Dask or Ray too) stamps its rows, and
one that runs no flow (a CLI stage without Prefect, a test) writes null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from schemas import schema_for
from schemas.table import FLOW_RUN_ID

if TYPE_CHECKING:
    import pandas as pd

_source: Callable[[], str | None] | None = None


def set_flow_run_source(source: Callable[[], str | None] | None) -> None:
    """Where `current_flow_run_id` asks (None: nowhere, every row null)."""
    global _source
    _source = source


def current_flow_run_id() -> str | None:
    """The id of the flow run this code runs in, None outside one."""
    return _source() if _source else None


def stamped(table: str, frame: pd.DataFrame, flow_run_id: str | None) -> pd.DataFrame:
    """`frame` with its `flow_run_id` set to this writer's, for a table that records it (others unchanged)."""
    return frame.assign(**{FLOW_RUN_ID: flow_run_id}) if schema_for(table).stamped else frame
