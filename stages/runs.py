"""Flow runs as the runs table records them: a run's row replacing an earlier one of the same run, and the
profile the lake's nightly runs used (the guard against a scheduled run on another profile's lake)."""

from __future__ import annotations

import pandas as pd


def with_run(runs: pd.DataFrame, row: dict) -> pd.DataFrame:
    """One row per flow run: `runs` with `row` in place of any earlier row of its flow run (a run Prefect
    retried, or restarted from the UI, ends again under the same id)."""
    kept = runs[runs["flow_run_id"] != row["flow_run_id"]]
    return pd.concat([kept, pd.DataFrame([row])], ignore_index=True) if len(kept) else pd.DataFrame([row])


def lake_profile(runs: pd.DataFrame) -> str | None:
    """The profile of the lake's latest nightly run that completed or ran a stage (None: none recorded). A run
    that failed before any stage, such as one this guard refused, wrote nothing and does not count."""
    ran_a_stage = runs["flow_run_id"].isin(set(runs["parent_flow_run_id"].dropna()))
    nightly = runs[(runs["flow_name"] == "nightly") & runs["profile"].notna()
                   & ((runs["outcome"] == "completed") | ran_a_stage)]
    return None if nightly.empty else str(nightly.sort_values("started_at")["profile"].iloc[-1])


def profile_change(runs: pd.DataFrame, profile: str, lake: str) -> str | None:
    """Why a nightly run on `profile` must not continue this lake (None: it may): the lake's earlier nightly
    runs used another profile, so this run would mix another world, policy or schedule into their series."""
    earlier = lake_profile(runs)
    if earlier is None or earlier == profile:
        return None
    return (f"the lake at {lake} was built by nightly runs of profile {earlier!r}, this run uses {profile!r}: "
            f"give the run its own lake (lake.data_dir or --data-dir), or set nightly.allow_profile_change: true "
            f"in profile {profile!r} to continue this lake with it")
