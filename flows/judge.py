"""The judge flow: judge every unjudged trajectory of an iteration, then gate on data quality.

Resumable: judgments are journaled per trajectory, and a rerun (or a retry of the task) skips
(trajectory, judge) pairs already judged; the LLM cache answers what was asked before.
"""

from __future__ import annotations

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.gates import quality_gate, recover_lake, retry_unless_misconfigured
from stages.judge.run import JudgeSummary, judge_iteration, plan_judges
from webgym.config import Config, load_config
from webgym.lake import Lake


@task(retries=2, retry_delay_seconds=[5, 30], retry_condition_fn=retry_unless_misconfigured, cache_policy=NO_CACHE)
def judge_trajectories(config: Config, iteration: int, judges: list[str] | None, rejudge: bool) -> JudgeSummary:
    """Judge the iteration's trajectories into the judgments table (LLM calls, resumable)."""
    return judge_iteration(Lake(config.data_root()), config, iteration, judges, rejudge)


@flow(name="judge")
def judge(iteration: int, judges: list[str] | None = None, rejudge: bool = False, config_path: str | None = None,
          data_dir: str | None = None) -> JudgeSummary:
    """Judge iteration `iteration` with the profile's judges, or only `judges`; `rejudge` adds new rows
    for pairs already judged."""
    config = load_config(config_path, {"lake.data_dir": data_dir} if data_dir else None)
    plan_judges(config, judges)  # a misconfigured judge fails here, before any work
    root = config.data_root()
    recover_lake(root)
    summary = judge_trajectories(config, iteration, judges, rejudge)
    quality_gate(root, ["judgments", "blocklist"])
    return summary
