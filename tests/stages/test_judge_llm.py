"""LLM judges through the judge stage, against the scripted OpenAI-compatible server: the rubric
judge's pass, failed fact, hallucinated answer and blocked page, fail-closed errors, the cache on
reruns, WebJudge, the task-only judge and reference answers."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from PIL import Image

from schemas.steps import Action, Step
from stages.judge.episode import Screenshot
from stages.judge.rubric import distinct, within_budget
from flows.judge import judge_iteration, list_blocked_websites
from stages.judge.run import plan_judges
from tests.conftest import rows, tasks_frame, trajectories_frame
from webgym import quality, warehouse
from webgym.config import Config, ConfigError, EndpointConfig, JudgeConfig, LakeConfig, LLMConfig, ModelPrice
from webgym.llm.images import data_url
from webgym.llm.scripted_server import Reply, ScriptedServer

COLORS = {"red": (200, 0, 0), "green": (0, 200, 0), "blue": (0, 0, 200), "grey": (90, 90, 90)}


def png(color: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 10), COLORS[color]).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def make_config(lake, tmp_path, server: ScriptedServer | None = None, **judge) -> Config:
    endpoints = [EndpointConfig(base_url=server.base_url, model="scripted", timeout_s=5.0)] if server else []
    llm = LLMConfig(default=endpoints, cache_dir=str(tmp_path / "cache"), backoff_s=0.01, max_attempts=2,
                    prices={"scripted": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)})
    return Config(lake=LakeConfig(data_dir=lake.root), llm=llm, judge=JudgeConfig(**judge))


def seed(lake, trajectories: pd.DataFrame | None = None, tasks: pd.DataFrame | None = None) -> dict[str, str]:
    """Tasks t1-t3, trajectories r0-r2 (answer "done"), each with screenshots red, green, green, blue."""
    shas = {color: lake.put_blob(png(color)) for color in COLORS}
    trajectories = trajectories_frame() if trajectories is None else trajectories
    lake.write_table("tasks", tasks_frame() if tasks is None else tasks)
    lake.write_table("trajectories", trajectories)
    lake.write_table("steps", rows(
        Step(trajectory_id=tid, t=t, screenshot_sha256=shas[color], url=f"http://shop-a.test/{color}",
             actions=[Action(name="click", x=1.0, y=2.0, ok=True, feedback=f"clicked on {color}")])
        for tid in trajectories["trajectory_id"] for t, color in enumerate(["red", "green", "green", "blue"])))
    return shas


def script(server: ScriptedServer, *, false_facts: tuple[str, ...] = (), grounded: bool = True,
           blocked: bool = False) -> None:
    verdict = lambda ok: Reply.json({"reasoning": "checked", "verdict": "SUCCESS" if ok else "NOT SUCCESS"})  # noqa: E731
    server.add(Reply.json({"reasoning": "shows the shop", "keep": True}), purpose="judge-keypoints")
    server.add(verdict(grounded), purpose="judge-hallucination")
    for fact in false_facts:
        server.add(verdict(False), purpose="judge-facts", contains=f"Fact to verify: {fact}\n")
    server.add(verdict(True), purpose="judge-facts")
    server.add(Reply.json({"reasoning": "a CAPTCHA" if blocked else "the agent erred", "blocked": blocked}),
               purpose="blocking")


def about(task: str):
    """Requests of a trajectory's judgment, retries included (their last user message is the retry prompt)."""
    return lambda request: any(f"Task: {task}" in text for text in request.texts)


def judgments(lake, judge: str = "rubric") -> dict[str, dict]:
    frame = lake.read_table("judgments")
    return {r["trajectory_id"]: r for r in frame[frame["judge"] == judge].to_dict("records")}


def purposes(server: ScriptedServer) -> list[str]:
    return [r.purpose for r in server.requests]


def test_rubric_judge_passes_when_every_fact_holds_and_records_model_prompts_and_cost(lake, tmp_path, server):
    seed(lake)
    script(server)
    summary = judge_iteration.fn(make_config(lake, tmp_path, server), iteration=0)
    assert summary.outcomes[("rubric", "success")] == 3
    row = judgments(lake)["r0"]
    assert row["success"] and row["reward"] == 1.0 and row["status"] == "judged" and not row["blocked"]
    assert [(g["description"], [f["success"] for f in g["facts"]]) for g in row["groups"]] == [
        ("group 0", [True]), ("group 1", [True, True])]
    assert row["model"] == "scripted" and row["cost_usd"] > 0
    assert row["prompt_version"] == "judge_keypoint@1+judge_hallucination@2+judge_fact@2"
    # per trajectory: its 3 distinct screenshots once each, criterion B once, one call per fact (3 + 2 + 7)
    assert [purposes(server).count(p) for p in ("judge-keypoints", "judge-hallucination", "judge-facts")] == [9, 3, 12]
    assert all(r.body["temperature"] == 0 for r in server.requests)
    assert "blocking" not in purposes(server)
    quality.assert_quality(lake, ["judgments"])


def test_one_false_fact_fails_the_trajectory_and_is_marked(lake, tmp_path, server):
    seed(lake)
    script(server, false_facts=("fact 1.1",))
    judge_iteration.fn(make_config(lake, tmp_path, server), iteration=0)
    row = judgments(lake)["r0"]
    assert not row["success"] and row["reward"] == 0.0 and row["status"] == "judged"
    assert [g["success"] for g in row["groups"]] == [True, False]
    assert [f["success"] for f in row["groups"][1]["facts"]] == [True, False]
    assert "fact 1.1" in row["rationale"] and not row["blocked"]
    assert purposes(server).count("blocking") == 2  # r0 and r2 (whose rubrics hold fact 1.1) failed
    assert lake.count("blocklist") == 0


def test_a_hallucinated_answer_fails_before_any_fact_is_asked(lake, tmp_path, server):
    seed(lake)
    script(server, grounded=False)
    judge_iteration.fn(make_config(lake, tmp_path, server, blocking=False), iteration=0)
    row = judgments(lake)["r2"]
    assert not row["success"] and row["rationale"].startswith("criterion B failed")
    assert {f["success"] for g in row["groups"] for f in g["facts"]} == {None}
    assert "judge-facts" not in purposes(server)


def test_a_blocked_page_is_flagged_and_lists_a_website_blocked_in_two_tasks(lake, tmp_path, server):
    seed(lake, tasks=tasks_frame().assign(source="webvoyager"))  # real websites: synthetic ones are never listed
    script(server, false_facts=("fact 0.0", "fact 1.0"), blocked=True)
    config = make_config(lake, tmp_path, server)
    summary = judge_iteration.fn(config, iteration=0)
    rows_ = judgments(lake)
    assert rows_["r0"]["blocked"] and rows_["r1"]["blocked"] and "CAPTCHA" in rows_["r0"]["rationale"]
    assert summary.blocked == 3
    assert list_blocked_websites.fn(config) == ["shop-a.test"]  # t1 and t2; mail-b.test was blocked in t3 only
    (listed,) = lake.read_table("blocklist").to_dict("records")
    assert listed["trajectory_ids"].tolist() == ["r0", "r1"] and listed["tasks"] == 2
    assert listed["evidence"].startswith("2 blocked episode(s) from 2 task(s): rubric judgment: ")
    assert list_blocked_websites.fn(config) == []  # listed once
    verdicts = warehouse.query(lake, "SELECT trajectory_id, blocked FROM verdicts ORDER BY 1")
    assert verdicts["blocked"].tolist() == [True, True, True]
    quality.assert_quality(lake, ["judgments", "blocklist"])


def test_malformed_output_is_retried_and_truncated_output_becomes_an_error_never_a_success(lake, tmp_path, server):
    seed(lake)
    truncated = Reply(text='{"reasoning": "the page shows the red mug and', finish_reason="length")
    server.add(truncated, purpose="judge-facts", when=about("Buy the red mug"))
    server.add(Reply(text="SUCCESS, clearly"), purpose="judge-facts", when=about("Archive the newsletter"),
               times=1)  # malformed once, then valid
    script(server)
    judge_iteration.fn(make_config(lake, tmp_path, server, blocking=False), iteration=0)
    rows_ = judgments(lake)
    assert rows_["r0"]["status"] == "error" and not rows_["r0"]["success"] and rows_["r0"]["reward"] == 0.0
    assert rows_["r0"]["rationale"].startswith("judge-facts: no valid Verdict after 3 answer(s)")
    assert rows_["r0"]["groups"] is None and rows_["r0"]["cost_usd"] > 0
    assert rows_["r2"]["status"] == "judged" and rows_["r2"]["success"]
    retried = [r for r in server.requests if r.purpose == "judge-facts" and about("Archive the newsletter")(r)]
    assert len(retried) == 7 + 1
    assert warehouse.query(lake, "SELECT count(*) AS n FROM verdicts WHERE success")["n"][0] == 2


def test_a_verdict_missing_or_an_endpoint_failing_is_an_error(lake, tmp_path, server):
    seed(lake)
    server.add(Reply.json({"reasoning": "looks fine"}), purpose="judge-hallucination", when=about("Buy the red mug"))
    server.add(Reply.http_error(500), purpose="judge-hallucination", when=about("Find the red mug"))
    script(server)
    judge_iteration.fn(make_config(lake, tmp_path, server), iteration=0)
    rows_ = judgments(lake)
    assert rows_["r0"]["status"] == "error" and "verdict" in rows_["r0"]["rationale"]
    assert rows_["r1"]["status"] == "error" and "500" in rows_["r1"]["rationale"]
    assert not rows_["r0"]["success"] and not rows_["r1"]["success"] and rows_["r2"]["success"]


def test_a_rerun_skips_judged_pairs_and_a_rejudge_adds_rows_from_the_cache(lake, tmp_path, server):
    seed(lake)
    script(server)
    config = make_config(lake, tmp_path, server)
    judge_iteration.fn(config, iteration=0)
    sent, first = len(server.requests), lake.read_table("judgments")
    again = judge_iteration.fn(config, iteration=0)
    assert len(server.requests) == sent and lake.count("judgments") == 3 and not again.outcomes
    judge_iteration.fn(config, iteration=0, rejudge=True)
    assert len(server.requests) == sent  # every answer came from the cache
    after = lake.read_table("judgments")
    assert len(after) == 6 and set(first["judgment_id"]) < set(after["judgment_id"])
    assert after.groupby("trajectory_id")["success"].all().all()
    assert (after.loc[~after["judgment_id"].isin(first["judgment_id"]), "cost_usd"] == 0).all()


def test_gated_trajectories_spend_no_llm_call(lake, tmp_path, server):
    trajectories = trajectories_frame()
    trajectories.loc[0, ["termination", "answer"]] = ["max_steps", None]
    trajectories.loc[1, ["termination", "answer"]] = ["blocked", None]
    seed(lake, trajectories, tasks_frame().assign(source="webvoyager"))
    script(server)
    judge_iteration.fn(make_config(lake, tmp_path, server, format_error_reward=-0.5), iteration=0)
    gates = judgments(lake, "gate")
    assert set(gates) == {"r0", "r1"} and gates["r1"]["blocked"] and not gates["r0"]["blocked"]
    assert set(judgments(lake)) == {"r2"}
    assert not any("Buy the red mug" in r.last_user_text or "Find the red mug" in r.last_user_text
                   for r in server.requests)
    config = make_config(lake, tmp_path, server)
    assert list_blocked_websites.fn(config) == []  # one blocked episode is no evidence enough
    env = config.env.model_copy(update={"block_after": 1})
    assert list_blocked_websites.fn(config.model_copy(update={"env": env})) == ["shop-a.test"]


def test_key_screenshots_keep_the_last_one_and_the_latest_chosen_within_the_budget(lake, tmp_path, server):
    shas = seed(lake, trajectories_frame().iloc[:1])
    server.add(Reply.json({"reasoning": "only the start page matters", "keep": True}), purpose="judge-keypoints",
               contains="step 1 of 4")
    server.add(Reply.json({"reasoning": "nothing here", "keep": False}), purpose="judge-keypoints")
    script(server)
    judge_iteration.fn(make_config(lake, tmp_path, server, image_budget=2), iteration=0)
    keypoint_shots = [r.images for r in server.requests if r.purpose == "judge-keypoints"]
    urls = {color: data_url(png(color)) for color in COLORS}
    assert sorted(map(tuple, keypoint_shots)) == sorted([(urls["red"],), (urls["green"],), (urls["blue"],)])
    (hallucination,) = [r for r in server.requests if r.purpose == "judge-hallucination"]
    assert hallucination.images == [urls["red"], urls["blue"]]
    shots = [Screenshot(t, sha, None, "") for t, sha in enumerate(["a", "b", "b", "c", "d"])]
    assert [s.t for s in distinct(tuple(shots))] == [0, 2, 3, 4]
    assert [s.sha256 for s in within_budget(shots[:4], shots[4], 3)] == ["b", "c", "d"]
    assert [s.sha256 for s in within_budget([], shots[4], 1)] == ["d"]
    assert shas["red"] != shas["blue"]


def test_webjudge_and_the_task_only_judge(lake, tmp_path, server):
    seed(lake, trajectories_frame().iloc[:1])
    server.add(Reply.json({"key_points": ["Buy the red mug", "Pay"]}), purpose="judge-keypoints",
               contains="Task: Buy")
    server.add(Reply.json({"reasoning": "the cart", "score": 5}), purpose="judge-keypoints",
               when=lambda r: data_url(png("blue")) in r.images)
    server.add(Reply.json({"reasoning": "a banner", "score": 2}), purpose="judge-keypoints")
    server.add(Reply.json({"reasoning": "all key points met", "verdict": "SUCCESS"}), purpose="judge-verdict",
               contains="Key points:")
    server.add(Reply.json({"reasoning": "nothing was bought", "verdict": "NOT SUCCESS"}), purpose="judge-verdict")
    server.add(Reply.json({"reasoning": "no", "blocked": False}), purpose="blocking")
    config = make_config(lake, tmp_path, server, image_budget=2)
    judge_iteration.fn(config, iteration=0, judges=["webjudge"])
    judge_iteration.fn(config, iteration=0, judges=["task_only"])
    web, task_only = judgments(lake, "webjudge")["r0"], judgments(lake, "task_only")["r0"]
    assert web["success"] and "Buy the red mug; Pay" in web["rationale"] and "kept 1 of 4" in web["rationale"]
    assert web["prompt_version"].startswith("judge_webjudge_keypoints@1")
    assert not task_only["success"] and task_only["rationale"].startswith("nothing was bought")
    verdict_calls = [r for r in server.requests if r.purpose == "judge-verdict"]
    assert [len(r.images) for r in verdict_calls] == [1, 2]
    assert "fact 0.0" not in "".join(verdict_calls[1].texts)  # task-only: no rubric
    assert judgments(lake).keys() == set()


def test_reference_answers_decide_without_llm_calls_unless_a_judge_is_named(lake, tmp_path, server):
    tasks = tasks_frame()
    tasks.loc[0, "reference_answer"] = "42"
    trajectories = trajectories_frame()
    trajectories.loc[0, "answer"] = "It weighs 42 kg"
    seed(lake, trajectories.iloc[:1], tasks)
    script(server)
    config = make_config(lake, tmp_path, server)
    judge_iteration.fn(config, iteration=0)
    reference = judgments(lake, "reference")["r0"]
    assert reference["success"] and reference["groups"][0]["facts"][0]["fact"] == "answer matches '42'"
    assert server.requests == [] and judgments(lake) == {}
    judge_iteration.fn(config, iteration=0, judges=["rubric"])
    assert judgments(lake)["r0"]["success"]
    verdict = warehouse.query(lake, "SELECT judge FROM verdicts")["judge"].tolist()
    assert verdict == ["reference"]
    rubric_first = warehouse.verdicts_sql(JudgeConfig(priority=["gate", "rubric", "reference"]))
    assert warehouse.query(lake, rubric_first)["judge"].tolist() == ["rubric"]


def test_reference_equivalence_asks_the_llm_only_when_text_does_not_match(lake, tmp_path, server):
    tasks = tasks_frame()
    tasks.loc[[0, 1], "reference_answer"] = ["42", "Paris"]
    tasks.loc[2, "evaluation"] = json.dumps({"eval_types": ["program_html"], "program_html": [{}]})
    trajectories = trajectories_frame()
    trajectories.loc[[0, 1], "answer"] = ["forty-two", "Paris"]
    seed(lake, trajectories, tasks)
    server.add(Reply.json({"reasoning": "same number", "equivalent": True}), purpose="judge-equivalence")
    script(server)
    judge_iteration.fn(make_config(lake, tmp_path, server, reference_equivalence=True), iteration=0)
    rows_ = judgments(lake, "reference")
    assert rows_["r0"]["success"] and rows_["r0"]["groups"][0]["facts"][0]["rationale"] == "LLM equivalence"
    assert rows_["r1"]["success"] and rows_["r1"]["groups"][0]["facts"][0]["rationale"] == "the answer states 'Paris'"
    assert rows_["r2"]["status"] == "not_evaluable" and not rows_["r2"]["success"]
    assert purposes(server).count("judge-equivalence") == 1
    assert set(judgments(lake)) == {"r2"}  # program_html decided nothing: the rubric judge took it


def test_plans_skip_llm_judges_without_endpoints_and_refuse_named_ones(lake, tmp_path):
    offline = make_config(lake, tmp_path)
    plan = plan_judges(offline)
    assert [j.name for j in plan.judges] == ["exact", "reference"] and "judge-keypoints" in plan.skipped["rubric"]
    assert not plan.blocking and plan.purposes == []
    with pytest.raises(ConfigError, match="llm.endpoints"):
        plan_judges(offline, ["webjudge"])
    with pytest.raises(ConfigError, match="unknown judge"):
        plan_judges(offline, ["oracle"])
