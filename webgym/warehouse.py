"""DuckDB over the lake: one view per table plus named statistics views.

Views read `<table>/*.parquet` with union_by_name, so parts appended later show up without a
rebuild. `connect` gives an in-memory database (never blocked by a writer, never blocking one);
`build` writes the same views into warehouse.duckdb for external SQL tools.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd

from schemas import TABLES
from schemas.values import DIFFICULTY_BANDS, JUDGE_PRIORITY
from webgym.lake import Lake
from webgym.stats import WILSON_SQL


def band_sql(column: str) -> str:
    """SQL CASE mapping a difficulty column to its band, from schemas.values.DIFFICULTY_BANDS."""
    arms = []
    for band, (low, high) in DIFFICULTY_BANDS.items():
        test = f"{column} >= {low}" + (f" AND {column} <= {high}" if high is not None else "")
        arms.append(f"WHEN {test} THEN '{band}'")
    return f"CASE {' '.join(arms)} END"


def verdicts_sql(priority: tuple[str, ...] = JUDGE_PRIORITY) -> str:
    """The authoritative judgment per trajectory: a real verdict before an error, then judge priority, then newest."""
    rank = " ".join(f"WHEN '{judge}' THEN {i}" for i, judge in enumerate(priority))
    return f"""
        SELECT * EXCLUDE (rank_) FROM (
            SELECT j.*, row_number() OVER (
                PARTITION BY trajectory_id
                ORDER BY status IN ('error', 'not_evaluable'), CASE judge {rank} ELSE {len(priority)} END,
                         judged_at DESC) AS rank_
            FROM judgments j)
        WHERE rank_ = 1"""


PURPOSE = ("coalesce(tr.purpose, CASE WHEN tr.trajectory_id IN (SELECT trajectory_id FROM evals) "
           "THEN 'evaluation' WHEN tr.policy = 'oracle' THEN 'demonstration' ELSE 'train' END)")
"""Why an episode ran (trajectories.purpose; for episodes recorded before it was, what evals and the
policy tell)."""

STATS_VIEWS: dict[str, tuple[str, str]] = {
    "tasks_by_source": ("Tasks per source and split.", """
        SELECT source, split, count(*) AS tasks FROM tasks GROUP BY ALL ORDER BY ALL"""),
    "tasks_by_band": ("Tasks per difficulty band and split.", f"""
        SELECT {band_sql('difficulty')} AS difficulty_band, split, count(*) AS tasks
        FROM tasks GROUP BY ALL ORDER BY ALL"""),
    "tasks_by_domain": ("Tasks per domain and split.", """
        SELECT domain, split, count(*) AS tasks FROM tasks GROUP BY ALL ORDER BY ALL"""),
    "tasks_by_split": ("Tasks and distinct websites per split.", """
        SELECT split, count(*) AS tasks, count(DISTINCT website) AS websites
        FROM tasks GROUP BY ALL ORDER BY ALL"""),
    "success_by_band": ("Judged success rate per iteration, purpose (train, demonstration, evaluation: never "
                        "mixed) and difficulty band (authoritative verdicts), with its 95% Wilson interval.", f"""
        SELECT *, wilson_low(successes, trajectories) AS ci_low, wilson_high(successes, trajectories) AS ci_high
        FROM (SELECT tr.iteration, {PURPOSE} AS purpose, {band_sql('t.difficulty')} AS difficulty_band,
                     count(*) AS trajectories, sum(v.success::INT)::BIGINT AS successes,
                     avg(v.success::INT) AS success_rate
              FROM trajectories tr JOIN verdicts v USING (trajectory_id) LEFT JOIN tasks t USING (task_id)
              GROUP BY ALL)
        ORDER BY iteration, purpose, difficulty_band"""),
    "eval_success_by_band": ("Held-out evaluation success per evaluation, iteration, checkpoint, held-out kind "
                             "(family: unseen site family; site: unseen site) and band, with its 95% Wilson "
                             "interval.", """
        SELECT *, wilson_low(successes, episodes) AS ci_low, wilson_high(successes, episodes) AS ci_high
        FROM (SELECT evaluation, iteration, checkpoint, held_out, difficulty_band, count(*) AS episodes,
                     sum(success::INT)::BIGINT AS successes, avg(success::INT) AS success_rate
              FROM evals GROUP BY ALL)
        ORDER BY ALL"""),
    "eval_success": ("Evaluation success per evaluation (same tasks and settings: compare only within one), "
                     "iteration, checkpoint and held-out kind, all bands together, with its 95% Wilson "
                     "interval.", """
        SELECT *, wilson_low(successes, episodes) AS ci_low, wilson_high(successes, episodes) AS ci_high
        FROM (SELECT evaluation, iteration, checkpoint, held_out, count(*) AS episodes,
                     sum(success::INT)::BIGINT AS successes, avg(success::INT) AS success_rate
              FROM evals GROUP BY ALL)
        ORDER BY ALL"""),
    "rollout_throughput": ("Episodes and steps per second of wall time per iteration and purpose (wall "
                           "time: first start to last end).", f"""
        SELECT *, episodes / nullif(wall_s, 0) AS episodes_per_s, steps / nullif(wall_s, 0) AS steps_per_s
        FROM (SELECT tr.iteration, {PURPOSE} AS purpose, count(*) AS episodes, sum(tr.n_steps)::BIGINT AS steps,
                     epoch(max(tr.ended_at) - min(tr.started_at)) AS wall_s
              FROM trajectories tr GROUP BY ALL)
        ORDER BY iteration, purpose"""),
    "steps_per_trajectory": ("Episode length per iteration and purpose.", f"""
        SELECT tr.iteration, {PURPOSE} AS purpose, count(*) AS trajectories, avg(n_steps) AS mean_steps,
               median(n_steps) AS median_steps, max(n_steps) AS max_steps
        FROM trajectories tr GROUP BY ALL ORDER BY ALL"""),
    "same_screenshot_rate": ("Share of steps whose screenshot equals the previous one (repetition), per "
                             "iteration and purpose.", f"""
        SELECT tr.iteration, {PURPOSE} AS purpose, count(*) AS steps, avg(s.same::INT) AS same_screenshot_rate
        FROM (SELECT trajectory_id, screenshot_sha256 = lag(screenshot_sha256)
                     OVER (PARTITION BY trajectory_id ORDER BY t) AS same
              FROM steps) s
        JOIN trajectories tr USING (trajectory_id)
        WHERE s.same IS NOT NULL GROUP BY ALL ORDER BY ALL"""),
    "llm_cost_by_purpose": ("LLM calls, cache hits, errors, tokens and cost per purpose and model.", """
        SELECT purpose, model, count(*) AS calls, sum(cached::INT) AS cache_hits,
               count(error) AS errors, sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out,
               sum(cost_usd) AS cost_usd, avg(latency_s) FILTER (NOT cached) AS mean_latency_s
        FROM llm_calls GROUP BY ALL ORDER BY ALL"""),
}


def view_statements(lake: Lake, priority: tuple[str, ...] = JUDGE_PRIORITY) -> list[str]:
    """CREATE VIEW statements for every table, the verdicts view (judges ranked by `priority`,
    the profile's judge.priority) and the statistics views."""
    statements = [
        f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM "
        f"read_parquet('{lake.url(name)}/*.parquet', union_by_name=true)"
        for name in TABLES]
    statements += [macro.strip() for macro in WILSON_SQL.split(";")]
    statements.append(f"CREATE OR REPLACE VIEW verdicts AS {verdicts_sql(priority)}")
    statements += [f"CREATE OR REPLACE VIEW {name} AS {sql}" for name, (_, sql) in STATS_VIEWS.items()]
    return statements


def connect(lake: Lake, priority: tuple[str, ...] = JUDGE_PRIORITY) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with every view over the lake."""
    lake.init()
    con = lake.connect_duckdb()
    for statement in view_statements(lake, priority):
        con.execute(statement)
    return con


def query(lake: Lake, sql: str, priority: tuple[str, ...] = JUDGE_PRIORITY) -> pd.DataFrame:
    """Run one SQL statement against the lake's views."""
    with connect(lake, priority) as con:
        return con.execute(sql).df()


def build(lake: Lake, path: Path, priority: tuple[str, ...] = JUDGE_PRIORITY) -> Path:
    """Write warehouse.duckdb with the views, swapping the file in whole so readers never see it half-built."""
    lake.init()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    with duckdb.connect(str(tmp)) as con:
        if not lake.is_local:  # views bind when created: DuckDB reads an object-store lake through fsspec
            con.register_filesystem(lake.fs)
        for statement in view_statements(lake, priority):
            con.execute(statement)
    os.replace(tmp, path)
    return path


def describe() -> pd.DataFrame:
    """Name, kind and description of every table and view, for `webgym sql --list`."""
    rows = [(name, "table", schema.description) for name, schema in TABLES.items()]
    rows.append(("verdicts", "view", "The authoritative judgment per trajectory."))
    rows += [(name, "view", doc) for name, (doc, _) in STATS_VIEWS.items()]
    return pd.DataFrame(rows, columns=["name", "kind", "description"])
