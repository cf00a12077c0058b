"""Named reads of the lake that the flows make: each says which rows of which table it returns, so a flow
reads as a table of contents (`accepted_rows(lake, iteration, objective)`) and the filter expressions live
here, tested once (tests/webgym/test_lake_queries.py).

Each pushes its filter down to the Parquet scan (`Lake.read_table(filter=...)`), so only matching row
groups are decoded; ids are compared as strings, which also makes an empty list of ids a valid filter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.dataset as ds

    from webgym.lake import Lake

BLOCKED_ENDINGS = ("blocked", "navigation_failed")
"""Terminations that are evidence against a website (stages/blocklist.py counts them)."""


def _with_ids(column: str, ids: Iterable[str]) -> ds.Expression:
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.field(column).isin(pa.array(list(ids), pa.string()))


def _of_iteration(iteration: int, objective: str | None = None) -> ds.Expression:
    import pyarrow.dataset as ds

    expression = ds.field("iteration") == iteration
    return expression if objective is None else expression & (ds.field("objective") == objective)


def iteration_trajectories(lake: Lake, iteration: int, columns: list[str] | None = None) -> pd.DataFrame:
    """The trajectories rolled out in `iteration` (every purpose)."""
    return lake.read_table("trajectories", columns, filter=_of_iteration(iteration))


def trajectories_by_id(lake: Lake, trajectory_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The trajectories of these ids (those in the lake)."""
    return lake.read_table("trajectories", columns, filter=_with_ids("trajectory_id", trajectory_ids))


def tasks_by_id(lake: Lake, task_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The tasks of these ids (those in the lake)."""
    return lake.read_table("tasks", columns, filter=_with_ids("task_id", task_ids))


def steps_of(lake: Lake, trajectory_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The steps of these trajectories."""
    return lake.read_table("steps", columns, filter=_with_ids("trajectory_id", trajectory_ids))


def judgments_of(lake: Lake, trajectory_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The judgments of these trajectories, by every judge."""
    return lake.read_table("judgments", columns, filter=_with_ids("trajectory_id", trajectory_ids))


def evals_of(lake: Lake, trajectory_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The evals rows of these trajectories (those already recorded)."""
    return lake.read_table("evals", columns, filter=_with_ids("trajectory_id", trajectory_ids))


def accepted_rows(lake: Lake, iteration: int, objective: str, columns: list[str] | None = None) -> pd.DataFrame:
    """The steps accept kept for `iteration` under `objective` (what that iteration trains on)."""
    return lake.read_table("accepted", columns, filter=_of_iteration(iteration, objective))


def iteration_checkpoint(lake: Lake, iteration: int, objective: str) -> dict[str, Any] | None:
    """The checkpoints row trained in `iteration` with `objective` (the newest, should a resumed run have
    written another); None when the iteration has trained none yet."""
    found = lake.read_table("checkpoints", filter=_of_iteration(iteration, objective))
    return None if found.empty else found.sort_values("created_at").iloc[-1].to_dict()


def _row_of(lake: Lake, table: str, checkpoint_id: str) -> dict[str, Any] | None:
    """The row of `table` keyed by this checkpoint id; None when there is none."""
    import pyarrow.dataset as ds

    found = lake.read_table(table, filter=ds.field("checkpoint_id") == checkpoint_id)
    return None if found.empty else found.iloc[0].to_dict()


def checkpoint_of(lake: Lake, checkpoint_id: str) -> dict[str, Any] | None:
    """The checkpoints row of a checkpoint id; None when no checkpoint was recorded under it."""
    return _row_of(lake, "checkpoints", checkpoint_id)


def promotion_of(lake: Lake, checkpoint_id: str) -> dict[str, Any] | None:
    """The promotions row of a checkpoint; None when no decision was written yet."""
    return _row_of(lake, "promotions", checkpoint_id)


def blocking_judgments(lake: Lake, columns: list[str] | None = None) -> pd.DataFrame:
    """The judgments that found their episode blocked (a captcha, a login wall, an error page)."""
    import pyarrow.dataset as ds

    return lake.read_table("judgments", columns, filter=ds.field("blocked"))


def blocked_episodes(lake: Lake, flagged_ids: Iterable[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The trajectories that are evidence against their website: those that ended blocked or could not
    navigate (BLOCKED_ENDINGS), and those of `flagged_ids` (a judge found them blocked)."""
    import pyarrow.dataset as ds

    ended = ds.field("termination").isin(list(BLOCKED_ENDINGS))
    return lake.read_table("trajectories", columns, filter=ended | _with_ids("trajectory_id", flagged_ids))


def run_of(lake: Lake, flow_run_id: str) -> pd.DataFrame:
    """The runs row of one flow run (none yet: it has not ended, or ran outside Prefect)."""
    return lake.read_table("runs", filter=_with_ids("flow_run_id", [flow_run_id]))
