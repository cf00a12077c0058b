"""The judge flow: judge every unjudged trajectory of an iteration, list the websites the evidence shows
blocking agents, then gate on data quality.

Resumable: judgments are journaled per trajectory, and a rerun (or a retry of the task) skips
(trajectory, judge) pairs already judged; the LLM cache answers what was asked before.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import publish_judge
from flows.gates import MissingInputError, quality_gate, recover_lake, retry_unless_misconfigured
from flows.lineage import RUN_HOOKS, judge_run_name
from stages.blocklist import (TRAJECTORY_COLUMNS, block_evidence, cleared_blocklist, listed_websites,
                              updated_blocklist)
from stages.judge.run import STEP_COLUMNS, JudgeSummary, judge_episodes, plan_judges
from webgym.config import Config, load_config
from webgym.lake import Lake
from webgym.lake.queries import (blocked_episodes, blocking_judgments, iteration_trajectories, judgments_of,
                                  steps_of, tasks_by_id)
from webgym.llm.client import LLM

log = logging.getLogger(__name__)


@task(retries=2, retry_delay_seconds=[5, 30], retry_condition_fn=retry_unless_misconfigured, cache_policy=NO_CACHE)
def judge_iteration(config: Config, iteration: int, judges: list[str] | None = None,
                    rejudge: bool = False) -> JudgeSummary:
    """Judge the iteration's trajectories into the judgments table, journaled trajectory by trajectory;
    `judges` runs only those, LLM judges even where a rule already decided. LLM calls, resumable."""
    lake = Lake(config.lake.data_dir)
    plan = plan_judges(config, judges)
    trajectories = iteration_trajectories(lake, iteration)
    if trajectories.empty:
        raise MissingInputError(f"no trajectories of iteration {iteration} in the lake at {lake.root}: roll out "
                                f"first (`webgym rollout --iteration {iteration}`, or the rollout flow)")
    log.info("judging iteration %d: %d trajectories, judges %s", iteration, len(trajectories),
             ", ".join(j.name for j in plan.judges))
    tasks = tasks_by_id(lake, trajectories["task_id"].unique())
    steps = steps_of(lake, trajectories["trajectory_id"], STEP_COLUMNS)
    judgments = judgments_of(lake, trajectories["trajectory_id"], ["trajectory_id", "judge", "status"])
    llm = LLM(config.llm, lake, run_id=f"judge-{iteration}") if plan.purposes else None
    try:
        if llm:
            llm.require(*plan.purposes)
        with lake.stream(f"judge-{iteration}", batch_rows=config.lake.journal_batch_rows) as writer:
            summary = judge_episodes(iteration, trajectories, tasks, steps, judgments, plan, llm, config.judge,
                                     writer.append, force_llm=bool(judges), rejudge=rejudge)
    finally:
        if llm:
            llm.close()
    if llm:
        summary.llm = str(llm.ledger.totals)
    outcomes = "; ".join(f"{name}: {counts}" for name, counts in summary.by_judge().items())
    log.info("judged iteration %d: %s; %d blocked; %s", iteration, outcomes or "no new judgments", summary.blocked,
             summary.llm)
    return summary


@task(cache_policy=NO_CACHE)
def list_blocked_websites(config: Config) -> list[str]:
    """List the websites whose evidence (blocked episodes from env.block_after tasks, env.unreachable_after
    failed starts; stages/blocklist.py) now suffices; the websites newly listed."""
    lake = Lake(config.lake.data_dir)
    flagged = blocking_judgments(lake, ["trajectory_id", "judge", "rationale", "blocked"])
    episodes = blocked_episodes(lake, flagged["trajectory_id"], TRAJECTORY_COLUMNS)
    tasks = tasks_by_id(lake, episodes["task_id"].unique(), ["task_id", "source", "website", "start_url"])
    blocklist = lake.read_table("blocklist")
    updated = updated_blocklist(blocklist, block_evidence(episodes, flagged, tasks), config.env.block_after,
                                config.env.unreachable_after, dt.datetime.now(dt.UTC))
    listed = sorted(listed_websites(updated) - listed_websites(blocklist))
    if updated is not blocklist:
        lake.replace_table("blocklist", updated, run_id="blocklist", changed=updated["website"].isin(listed))
    return listed


@task(cache_policy=NO_CACHE)
def unblock_websites(config: Config, websites: list[str]) -> None:
    """Clear listed websites (KeyError names one that is not listed); their earlier evidence no longer counts."""
    lake = Lake(config.lake.data_dir)
    cleared = cleared_blocklist(lake.read_table("blocklist"), websites, dt.datetime.now(dt.UTC))
    lake.replace_table("blocklist", cleared, run_id="unblock", changed=cleared["website"].isin(websites))


@flow(name="judge", flow_run_name=judge_run_name, **RUN_HOOKS)
def judge(iteration: int, judges: list[str] | None = None, rejudge: bool = False, config_path: str | None = None,
          data_dir: str | None = None) -> JudgeSummary:
    """Judge iteration `iteration` with the profile's judges, or only `judges`; `rejudge` adds new rows
    for pairs already judged."""
    config = load_config(config_path, data_dir)
    plan_judges(config, judges)  # a misconfigured judge fails here, before any work
    recover_lake(config.lake.data_dir)
    summary = judge_iteration(config, iteration, judges, rejudge)
    listed = list_blocked_websites(config)
    quality_gate(config.lake.data_dir, ["judgments", "blocklist"])
    summary = dataclasses.replace(summary, listed=listed)
    publish_judge(summary)
    return summary
