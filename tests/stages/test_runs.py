"""The runs table's stages: one row per flow run, and the profile a lake's nightly runs used (the guard)."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from stages.runs import lake_profile, profile_change, with_run
from tests.conftest import NOW, night_runs


def test_a_run_that_ends_again_replaces_its_row():
    runs = night_runs()
    again = {**runs.iloc[5].to_dict(), "outcome": "failed", "message": "boom"}
    updated = with_run(runs, again)
    assert len(updated) == len(runs) and updated["flow_run_id"].is_unique
    assert updated.set_index("flow_run_id").loc["r0", "outcome"] == "failed"
    assert with_run(runs.iloc[:0], again)["flow_run_id"].tolist() == ["r0"]


def _nightly(run_id: str, profile: str, outcome: str, minutes: int) -> dict:
    return {"flow_run_id": run_id, "flow_name": "nightly", "parent_flow_run_id": None, "profile": profile,
            "outcome": outcome, "started_at": NOW + dt.timedelta(minutes=minutes)}


def test_the_lake_profile_is_the_latest_nightly_that_completed_or_ran_a_stage():
    assert lake_profile(night_runs().iloc[:0]) is None
    runs = night_runs(profile="ci")
    assert lake_profile(runs) == "ci"
    refused = pd.concat([runs, pd.DataFrame([_nightly("x", "local", "failed", 60)])], ignore_index=True)
    assert lake_profile(refused) == "ci"  # a run stopped before any stage (the guard's refusal) wrote nothing
    stage = {"flow_run_id": "xs", "flow_name": "rollout", "parent_flow_run_id": "x", "profile": "local",
             "outcome": "completed", "started_at": NOW + dt.timedelta(minutes=61)}
    assert lake_profile(pd.concat([refused, pd.DataFrame([stage])], ignore_index=True)) == "local"


def test_a_nightly_on_another_profiles_lake_is_refused_naming_both_and_the_way_out():
    runs = night_runs(profile="ci")
    assert profile_change(runs, "ci", "/lake") is None
    assert profile_change(runs.iloc[:0], "local", "/lake") is None  # a fresh lake takes any profile
    problem = profile_change(runs, "local", "/lake")
    assert "'ci'" in problem and "'local'" in problem and "/lake" in problem and "\n" not in problem
    assert "nightly.allow_profile_change: true" in problem
