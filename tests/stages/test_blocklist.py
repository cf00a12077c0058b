"""Blocklist by evidence: one blocked page lists nothing, blocked episodes of two tasks do, repeated
failed starts do, the evidence rows stay on the listing, and a cleared website needs new evidence."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from schemas.blocklist import SCHEMA
from schemas.judgments import Judgment
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from stages.blocklist import block_evidence, cleared_blocklist, listed_websites, updated_blocklist
from tests.conftest import NOW, rows

TASKS = rows([
    Task(task_id=f"t{i}", source="webvoyager", source_id=str(i), text="x", website=site, created_at=NOW)
    for i, site in enumerate(["guarded.com", "guarded.com", "guarded.com", "down.org"])] + [
    Task(task_id="t9", source="synthetic", source_id="9", text="x", website="shop-a.test", created_at=NOW)])


def episode(tid: str, task: str, termination: str = "answered", error: str | None = None,
            minutes: int = 0) -> Trajectory:
    return Trajectory(trajectory_id=tid, task_id=task, iteration=0, policy="chat", policy_version="v", horizon=10,
                      n_steps=1, termination=termination, error=error, started_at=NOW,
                      ended_at=NOW + dt.timedelta(minutes=minutes))


def flag(tid: str, judge: str = "rubric") -> Judgment:
    return Judgment(judgment_id=f"{tid}-{judge}", trajectory_id=tid, judge=judge, status="judged", success=False,
                    reward=0.0, blocked=True, rationale="a CAPTCHA wall", judged_at=NOW)


def listing(trajectories: list[Trajectory], judgments: list[Judgment] = (), blocklist: pd.DataFrame | None = None,
            block_after: int = 2, unreachable_after: int = 3) -> pd.DataFrame:
    judged = rows(judgments) if judgments else pd.DataFrame(columns=list(Judgment.model_fields))
    evidence = block_evidence(rows(trajectories), judged, TASKS)
    return updated_blocklist(SCHEMA.empty_frame() if blocklist is None else blocklist, evidence, block_after,
                             unreachable_after, NOW + dt.timedelta(hours=1))


def test_one_blocked_episode_or_one_task_blocked_twice_lists_nothing():
    assert listing([episode("r0", "t0", "blocked", "HTTP 403 Forbidden on https://guarded.com/")]).empty
    twice = [episode(f"r{i}", "t0", "blocked", "HTTP 429 Too Many Requests") for i in range(3)]
    assert listing(twice).empty


def test_blocked_episodes_from_two_tasks_list_the_website_with_their_evidence():
    blocked = listing([episode("r0", "t0", "blocked", "HTTP 403 Forbidden on https://guarded.com/"),
                       episode("r1", "t1"), episode("r2", "t2", "answered")], [flag("r1"), flag("r1", "gate")])
    SCHEMA.to_arrow(blocked)  # fits the table
    (row,) = blocked.to_dict("records")
    assert (row["website"], row["reason"], row["tasks"], row["trajectory_ids"]) == ("guarded.com", "blocked", 2,
                                                                                     ["r0", "r1"])
    assert row["evidence"] == ("2 blocked episode(s) from 2 task(s): HTTP 403 Forbidden on https://guarded.com/; "
                               "rubric judgment: a CAPTCHA wall")
    assert row["first_seen"] == NOW and pd.isna(row["cleared_at"]) and listed_websites(blocked) == {"guarded.com"}
    assert listing([episode("r0", "t0", "blocked", "403"), episode("r1", "t1", "blocked", "403")],
                   block_after=3).empty  # env.block_after


def test_repeated_failed_starts_list_an_unreachable_website_but_sandbox_refusals_do_not():
    failed = [episode(f"r{i}", "t3", "navigation_failed",
                      "could not open https://down.org/: net::ERR_NAME_NOT_RESOLVED") for i in range(3)]
    (row,) = listing(failed).to_dict("records")
    assert (row["website"], row["reason"], len(row["trajectory_ids"])) == ("down.org", "unreachable", 3)
    assert listing(failed[:2]).empty
    refused = [episode(f"r{i}", "t3", "navigation_failed", "start URL https://down.org/ refused: private address")
               for i in range(3)]
    assert listing(refused).empty


def test_synthetic_sites_are_never_listed():
    assert listing([episode(f"r{i}", "t9", "blocked", "HTTP 403") for i in range(3)], block_after=1).empty


def test_a_cleared_website_is_listed_again_only_on_evidence_seen_after_the_clearing():
    old = [episode("r0", "t0", "blocked", "403"), episode("r1", "t1", "blocked", "403")]
    cleared = cleared_blocklist(listing(old), ["guarded.com"], NOW + dt.timedelta(hours=2))
    assert listed_websites(cleared) == set() and cleared["cleared_at"].notna().all()
    assert listing(old, blocklist=cleared).equals(cleared)  # the old evidence no longer counts
    new = [episode("r5", "t0", "blocked", "CAPTCHA", minutes=180), episode("r6", "t2", "blocked", "CAPTCHA",
                                                                             minutes=181)]
    (row,) = listing(old + new, blocklist=cleared).to_dict("records")
    assert row["trajectory_ids"] == ["r5", "r6"] and pd.isna(row["cleared_at"])


def test_clearing_a_website_that_is_not_listed_says_so():
    try:
        cleared_blocklist(SCHEMA.empty_frame(), ["nowhere.com"], NOW)
    except KeyError as error:
        assert error.args[0] == "not on the blocklist: nowhere.com"
    else:
        raise AssertionError("no KeyError")
