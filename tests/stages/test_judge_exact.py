"""The exact verifier as a judge: synthetic-site episodes played in Chromium against the site server,
the server stopped, then judged from the recorded final states with the right facts marked."""

from __future__ import annotations

import datetime as dt
import json
import socket

from schemas.tasks import Task
from schemas.trajectories import Trajectory
from flows.judge import judge_iteration
from tests.conftest import NOW, rows
from tests.webgym.sites.conftest import in_chromium, mini  # noqa: F401 (fixture)
from webgym import quality
from webgym.browser import VIEWPORT
from webgym.config import Config, LakeConfig
from webgym.env.actions import Browsing
from webgym.sites.machine import ANSWER, Step
from webgym.sites.harness import StateClient
from webgym.sites.replay import run_step, settle
from webgym.sites.tasks import start_url, task_text


def play(site, runs: dict[str, tuple[str, list[Step]]]) -> tuple[dict[str, tuple[str, str | None]], int]:
    """Play each run (goal, steps) in its own context; (final state JSON, answer) per run, and the server's port."""
    played: dict[str, tuple[str, str | None]] = {}
    port = {}

    async def scenario(browser, server) -> None:
        port["value"] = server.port
        states = StateClient(server)
        for name, (_, steps) in runs.items():
            context = await browser.new_context(viewport=VIEWPORT)
            page = await context.new_page()
            browsing = Browsing(context, page, (VIEWPORT["width"], VIEWPORT["height"]))
            await page.goto(start_url(site))
            await settle(page)
            for step in steps:
                assert await run_step(browsing, step) is None, f"{name}: {step}"
                if step.action != ANSWER:
                    await settle(page)
            played[name] = (json.dumps(await states.snapshot(context, site.spec.hostname), sort_keys=True),
                            browsing.answer)
            await context.close()
        await states.aclose()

    in_chromium([site], scenario)
    return played, port["value"]


def test_oracle_and_noisy_episodes_get_exact_verdicts_after_the_server_stopped(lake, mini):
    buy, price = mini.oracle_path("buy-cheap-mug").steps, mini.oracle_path("kettle-price").steps
    runs = {
        "oracle-buy": ("buy-cheap-mug", buy),
        "noisy-buy": ("buy-cheap-mug", [Step.of("set_qty", {"n": 1}) if s.action == "set_qty" else s for s in buy]),
        "oracle-price": ("kettle-price", price),
        "noisy-price": ("kettle-price", [*price[:-1], Step.of(ANSWER, {"text": "It costs $12.50"})]),
    }
    played, port = play(mini, runs)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # the site server is gone

    goals = {goal.id: goal for goal in mini.spec.goals}
    lake.write_table("tasks", rows(
        Task(task_id=goal_id, source="synthetic", source_id=f"mini/{goal_id}", text=task_text(mini, goals[goal_id]),
             website=mini.spec.hostname, start_url=start_url(mini), rubric=mini.rubric(goal_id),
             difficulty=mini.rubric(goal_id).n_facts, created_at=NOW) for goal_id in goals))
    lake.write_table("trajectories", rows(
        Trajectory(trajectory_id=name, task_id=goal_id, iteration=3, policy="oracle", policy_version="bfs",
                   horizon=20, n_steps=len(steps), termination="answered", answer=played[name][1],
                   final_state=played[name][0], started_at=NOW, ended_at=NOW + dt.timedelta(seconds=5))
        for name, (goal_id, steps) in runs.items()))
    summary = judge_iteration.fn(Config(lake=LakeConfig(data_dir=lake.root)), iteration=3)

    assert summary.outcomes == {("exact", "success"): 2, ("exact", "failure"): 2}
    assert summary.skipped == {"rubric": "no LLM endpoint for judge-keypoints, judge-hallucination, judge-facts"}
    exact = {r["trajectory_id"]: r for r in lake.read_table("judgments").to_dict("records")}
    marks = {name: {f["fact"]: f["success"] for g in row["groups"] for f in g["facts"]} for name, row in exact.items()}
    assert exact["oracle-buy"]["success"] and exact["oracle-buy"]["reward"] == 1.0 and all(marks["oracle-buy"].values())
    assert not exact["noisy-buy"]["success"]
    assert [fact for fact, ok in marks["noisy-buy"].items() if not ok] == ["The cart includes Blue Mug (qty 2)"]
    assert exact["oracle-price"]["success"] and not exact["noisy-price"]["success"]
    assert marks["noisy-price"] == {"The answer gives 30": False}
    assert {r["judge"] for r in exact.values()} == {"exact"} and lake.read_table("judgments")["model"].isna().all()
    quality.assert_quality(lake, ["judgments"])


def test_a_missing_final_state_is_not_evaluable_never_a_success(lake, mini):
    lake.write_table("tasks", rows([Task(
        task_id="g", source="synthetic", source_id="mini/g", text="buy", website="mini.test",
        rubric=mini.rubric("buy-cheap-mug"), difficulty=4, created_at=NOW)]))
    lake.write_table("trajectories", rows([Trajectory(
        trajectory_id="lost", task_id="g", iteration=0, policy="oracle", policy_version="bfs", horizon=20, n_steps=7,
        termination="answered", answer="Done.", final_state=None, started_at=NOW, ended_at=NOW)]))
    judge_iteration.fn(Config(lake=LakeConfig(data_dir=lake.root)), iteration=0)
    (row,) = lake.read_table("judgments").to_dict("records")
    assert (row["judge"], row["status"], row["success"], row["reward"]) == ("exact", "not_evaluable", False, 0.0)
    assert "no final state" in row["groups"][0]["facts"][0]["rationale"]
