"""DuckDB over the lake: one view per table plus named statistics views.

Views read `<table>/*.parquet` with union_by_name, so parts appended later show up without a
rebuild. `connect` gives an in-memory database (never blocked by a writer, never blocking one);
`build` writes the same views into warehouse.duckdb for external SQL tools.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from schemas import TABLES, schema_for
from schemas.values import DIFFICULTY_BANDS
from webgym.config import JudgeConfig
from webgym.lake import Lake
from webgym.stats import WILSON_SQL

if TYPE_CHECKING:  # DuckDB loads pandas when a result becomes a frame
    import pandas as pd


def band_sql(column: str) -> str:
    """SQL CASE mapping a difficulty column to its band, from schemas.values.DIFFICULTY_BANDS."""
    arms = []
    for band, (low, high) in DIFFICULTY_BANDS.items():
        test = f"{column} >= {low}" + (f" AND {column} <= {high}" if high is not None else "")
        arms.append(f"WHEN {test} THEN '{band}'")
    return f"CASE {' '.join(arms)} END"


def verdicts_sql(judge: JudgeConfig | None = None) -> str:
    """The authoritative judgment per trajectory, with `verdict_reason` saying why it decides.

    Each judge counts with its newest real verdict (else its newest error). The highest-priority judge
    (judge.priority) that has a verdict or an error decides: fail closed, so its error is the verdict
    (never a success) unless judge.fallback_on_error lets the next real verdict stand in, which the
    reason names. A judge that found the trajectory not evaluable does not apply to it.
    """
    judge = judge or JudgeConfig()
    rank = " ".join(f"WHEN '{name}' THEN {i}" for i, name in enumerate(judge.priority))
    errors_last = "status = 'error', " if judge.fallback_on_error else ""
    on_error = ("'every judge that applies errored: ' || errored_" if judge.fallback_on_error else
                "judge || ' errored, so the trajectory is no success (fail closed: judge.fallback_on_error is off): '"
                " || coalesce(rationale, 'no reason given')")
    return f"""
        WITH per_judge AS (
            SELECT * EXCLUDE (newest_) FROM (
                SELECT j.*, CASE judge {rank} ELSE {len(judge.priority)} END AS priority_, row_number() OVER (
                    PARTITION BY trajectory_id, judge
                    ORDER BY CASE status WHEN 'error' THEN 1 WHEN 'not_evaluable' THEN 2 ELSE 0 END,
                             judged_at DESC) AS newest_
                FROM judgments j)
            WHERE newest_ = 1),
        errors AS (
            SELECT trajectory_id, min(priority_) AS first_error_,
                   string_agg(judge || ' (' || coalesce(rationale, 'no reason given') || ')', '; '
                              ORDER BY priority_) AS errored_
            FROM per_judge WHERE status = 'error' GROUP BY trajectory_id),
        ranked AS (
            SELECT p.*, e.first_error_, e.errored_, row_number() OVER (
                PARTITION BY p.trajectory_id
                ORDER BY p.status = 'not_evaluable', {errors_last}p.priority_, p.judged_at DESC) AS rank_
            FROM per_judge p LEFT JOIN errors e USING (trajectory_id))
        SELECT * EXCLUDE (priority_, first_error_, errored_, rank_),
               CASE WHEN status = 'error' THEN {on_error}
                    WHEN status = 'not_evaluable' THEN 'no judge could evaluate it: ' || judge || ' ('
                                                       || coalesce(rationale, 'no reason given') || ')'
                    WHEN first_error_ < priority_ THEN judge || ' decided after ' || errored_
                                                       || ' errored (judge.fallback_on_error)'
                    ELSE judge || ' decided: the highest-priority judge with a verdict' END AS verdict_reason
        FROM ranked WHERE rank_ = 1"""


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
    "tasks_by_domain": ("Tasks per domain, subdomain (the Mind2Web-2 taxonomy, schemas.tasks.TAXONOMY) and split.",
                        """
        SELECT domain, subdomain, split, count(*) AS tasks FROM tasks GROUP BY ALL ORDER BY ALL"""),
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
    "eval_success_by_band": ("Evaluation success per evaluation, split (test: held out; validation: promotion "
                             "checks), iteration, checkpoint, held-out kind "
                             "(family: unseen site family; site: unseen site; external: MiniWoB++) and band, with its 95% Wilson "
                             "interval.", """
        SELECT *, wilson_low(successes, episodes) AS ci_low, wilson_high(successes, episodes) AS ci_high
        FROM (SELECT evaluation, split, iteration, checkpoint, held_out, difficulty_band, count(*) AS episodes,
                     sum(success::INT)::BIGINT AS successes, avg(success::INT) AS success_rate
              FROM evals GROUP BY ALL)
        ORDER BY ALL"""),
    "eval_success": ("Evaluation success per evaluation (same tasks and settings: compare only within one), split, "
                     "iteration, checkpoint and held-out kind, all bands together, with its 95% Wilson "
                     "interval.", """
        SELECT *, wilson_low(successes, episodes) AS ci_low, wilson_high(successes, episodes) AS ci_high
        FROM (SELECT evaluation, split, iteration, checkpoint, held_out, count(*) AS episodes,
                     sum(success::INT)::BIGINT AS successes, avg(success::INT) AS success_rate
              FROM evals GROUP BY ALL)
        ORDER BY ALL"""),
    "rollout_success": ("Judged success per iteration and purpose (train: the policy's training rollouts; "
                        "demonstration: the oracle's warm start; evaluation: held-out episodes), all bands together, "
                        "with its 95% Wilson interval.", f"""
        SELECT *, wilson_low(successes, trajectories) AS ci_low, wilson_high(successes, trajectories) AS ci_high
        FROM (SELECT tr.iteration, {PURPOSE} AS purpose, count(*) AS trajectories,
                     sum(v.success::INT)::BIGINT AS successes, avg(v.success::INT) AS success_rate
              FROM trajectories tr JOIN verdicts v USING (trajectory_id) GROUP BY ALL)
        ORDER BY iteration, purpose"""),
    "accepted_by_iteration": ("Accepted training steps per iteration and objective, and the episodes they come "
                              "from.", """
        SELECT iteration, objective, count(*) AS steps, count(DISTINCT trajectory_id) AS trajectories
        FROM accepted GROUP BY ALL ORDER BY ALL"""),
    "stage_wall_time": ("Wall time per iteration and stage, from each stage's own flow run (runs table: its start "
                        "to its end): rollout (training and demonstration rollouts, GRPO's extra draws added), judge, "
                        "train, validation (each validation evaluation, its rollout and judge included), serve and "
                        "evaluation (held-out test evaluations, the untrained baseline's included). A stage of a nightly "
                        "run counts in the newest iteration that run has reached (the served checkpoint's validation, "
                        "of an earlier iteration, and serve, of none, in the iteration they serve); `started` is the "
                        "iteration's first stage. Empty for lakes whose runs were not recorded (before the runs "
                        "table).", """
        WITH spans AS (
            SELECT r.flow_run_id, r.parent_flow_run_id, r.flow_name, r.split, r.started_at,
                   epoch(r.ended_at - r.started_at) AS seconds, p.flow_name AS parent_flow,
                   coalesce(r.iteration, (SELECT max(c.iteration) FROM runs c
                                          WHERE c.parent_flow_run_id = r.flow_run_id)) AS own_iteration
            FROM runs r LEFT JOIN runs p ON p.flow_run_id = r.parent_flow_run_id),
        stages AS (
            SELECT seconds, started_at,
                   CASE WHEN flow_name = 'evaluate' AND split = 'validation' THEN 'validation'
                        WHEN flow_name = 'evaluate' THEN 'evaluation' ELSE flow_name END AS stage,
                   CASE WHEN parent_flow_run_id IS NULL THEN own_iteration
                        ELSE max(own_iteration) OVER (PARTITION BY parent_flow_run_id ORDER BY started_at
                                                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS iteration
            FROM spans WHERE parent_flow IS DISTINCT FROM 'evaluate')
        SELECT iteration, min(started_at) AS started,
               sum(seconds) FILTER (WHERE stage = 'rollout') AS rollout_s,
               sum(seconds) FILTER (WHERE stage = 'judge') AS judge_s,
               sum(seconds) FILTER (WHERE stage = 'train') AS train_s,
               sum(seconds) FILTER (WHERE stage = 'validation') AS validation_s,
               sum(seconds) FILTER (WHERE stage = 'serve') AS serve_s,
               sum(seconds) FILTER (WHERE stage = 'evaluation') AS evaluation_s
        FROM stages
        WHERE iteration IS NOT NULL AND stage IN ('rollout', 'judge', 'train', 'validation', 'serve', 'evaluation')
        GROUP BY iteration ORDER BY iteration"""),
    "run_ancestors": ("Each flow run with every run above it (itself at depth 0, its parent at 1, ...): join a "
                      "table's flow_run_id here to find the rows of a nightly run and its subflows from the id in "
                      "the Prefect UI's URL (ancestor_flow_run_id), or the runs above a row.", """
        WITH RECURSIVE up(flow_run_id, ancestor_flow_run_id, depth) AS (
            SELECT flow_run_id, flow_run_id, 0 FROM runs
            UNION ALL
            SELECT u.flow_run_id, r.parent_flow_run_id, u.depth + 1
            FROM up u JOIN runs r ON r.flow_run_id = u.ancestor_flow_run_id WHERE r.parent_flow_run_id IS NOT NULL)
        SELECT * FROM up ORDER BY flow_run_id, depth"""),
    "rollout_throughput": ("Episodes and steps per second of wall time per iteration, purpose and policy "
                           "version (wall time: first start to last end; iteration 0's untrained and warm-start "
                           "evaluations are two rows, not one spanning the training between them).", f"""
        SELECT *, episodes / nullif(wall_s, 0) AS episodes_per_s, steps / nullif(wall_s, 0) AS steps_per_s
        FROM (SELECT tr.iteration, {PURPOSE} AS purpose, tr.policy_version, min(tr.started_at) AS started_at,
                     count(*) AS episodes, sum(tr.n_steps)::BIGINT AS steps,
                     epoch(max(tr.ended_at) - min(tr.started_at)) AS wall_s
              FROM trajectories tr GROUP BY ALL)
        ORDER BY iteration, purpose, started_at"""),
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
    "llm_cost_by_stage": ("LLM calls, tokens and cost per day and stage: rollout (purpose policy), judge "
                          "(judge-*, blocking), task set (every other purpose: rubric, decompose, refresh, ...).",
                          """
        SELECT called_at::DATE AS day,
               CASE WHEN purpose = 'policy' THEN 'rollout'
                    WHEN purpose LIKE 'judge%' OR purpose = 'blocking' THEN 'judge' ELSE 'task set' END AS stage,
               count(*) AS calls, sum(cached::INT) AS cache_hits, sum(tokens_in) AS tokens_in,
               sum(tokens_out) AS tokens_out, sum(cost_usd) AS cost_usd
        FROM llm_calls GROUP BY ALL ORDER BY ALL"""),
}


STAND_IN = "_empty_"
"""Prefix of the empty tables a read-only connection registers for tables whose schema file is missing or stale."""


def view_statements(lake: Lake, judge: JudgeConfig | None = None, stand_ins: Collection[str] = ()) -> list[str]:
    """CREATE VIEW statements for every table, the verdicts view (by the profile's `judge` block: its
    priority and fallback_on_error) and the statistics views. A table of `stand_ins` also shows its empty
    stand-in (`_empty_<name>`, registered on the connection), so its view has every column although its
    files lack some or are not there."""
    statements = [f"CREATE OR REPLACE VIEW {name} AS {_table_sql(lake, name, name in stand_ins)}" for name in TABLES]
    statements += [macro.strip() for macro in WILSON_SQL.split(";")]
    statements.append(f"CREATE OR REPLACE VIEW verdicts AS {verdicts_sql(judge)}")
    statements += [f"CREATE OR REPLACE VIEW {name} AS {sql}" for name, (_, sql) in STATS_VIEWS.items()]
    return statements


def _table_sql(lake: Lake, name: str, stand_in: bool) -> str:
    files = f"SELECT * FROM read_parquet('{lake.url(name)}/*.parquet', union_by_name=true)"
    if not stand_in:
        return files
    empty = f"SELECT * FROM {STAND_IN}{name}"
    return f"{files} UNION ALL BY NAME {empty}" if lake.has_files(name) else empty


def connect(lake: Lake, judge: JudgeConfig | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with every view over the lake. Tables without a current schema file get one
    (`Lake.init`); `read_only` writes nothing and stands an empty table of the schema in for them instead."""
    con = lake.connect_duckdb()
    stand_ins = lake.stale_tables(con) if read_only else []
    if read_only:
        for name in stand_ins:
            con.register(f"{STAND_IN}{name}", schema_for(name).arrow.empty_table())
    else:
        lake.init(con)
    con.execute(";\n".join(view_statements(lake, judge, stand_ins)))  # one call: DuckDB binds them back to back
    return con


def query(lake: Lake, sql: str, judge: JudgeConfig | None = None) -> pd.DataFrame:
    """Run one SQL statement against the lake's views (the verdicts view by the profile's `judge` block)."""
    with connect(lake, judge) as con:
        return con.execute(sql).df()


class ReadOnlyError(ValueError):
    """A statement that read-only SQL refuses; the message names its kind and what runs instead."""


@dataclass(frozen=True)
class Rows:
    """A result as plain Python values, so printing it needs no pandas."""

    columns: list[str]
    rows: list[tuple]


def read_only_query(lake: Lake, sql: str, judge: JudgeConfig | None = None) -> Rows:
    """Run one SELECT (also WITH, FROM-first, DESCRIBE, SHOW, SUMMARIZE) against the lake's views, unable to
    change anything. Two walls: every other statement kind (COPY, ATTACH, INSTALL/LOAD, EXPORT, CREATE,
    INSERT, UPDATE, DELETE, SET, PRAGMA, CALL, ...) is refused by its parsed type before anything runs; and
    the connection runs it with file access limited to a local lake's folder (DuckDB's allowed_directories
    with enable_external_access off) and its configuration locked, so no setting can lift either."""
    statements = duckdb.extract_statements(sql)
    if len(statements) != 1:
        raise ReadOnlyError(f"give exactly one statement, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise ReadOnlyError(f"{kind.name} statements are refused: the lake is read-only here; run a SELECT "
                            "(writing commands such as `webgym lake compact` change the lake safely)")
    with connect(lake, judge, read_only=True) as con:
        if lake.is_local:
            folder = lake.url().rstrip("/") + "/"
            con.execute(f"SET allowed_directories = ['{folder.replace(chr(39), chr(39) * 2)}']")
            con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        result = con.execute(sql)
        return Rows([column[0] for column in result.description], result.fetchall())


STORAGE_VERSION = "v1.0.0"
"""The file format warehouse.duckdb is written in: the oldest that holds views, so DuckDB shells older than
the project's library (the `duckdb-cli` package's, DBeaver's driver) open it too."""


def build(lake: Lake, path: Path, judge: JudgeConfig | None = None) -> Path:
    """Write warehouse.duckdb with the views, swapping the file in whole so readers never see it half-built."""
    lake.init()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    with duckdb.connect(str(tmp), config={"storage_compatibility_version": STORAGE_VERSION}) as con:
        if not lake.is_local:  # views bind when created: DuckDB reads an object-store lake through fsspec
            con.register_filesystem(lake.fs)
        for statement in view_statements(lake, judge):
            con.execute(statement)
    os.replace(tmp, path)
    return path


def describe() -> pd.DataFrame:
    """Name, kind and description of every table and view, for `webgym sql --list`."""
    rows = [(name, "table", schema.description) for name, schema in TABLES.items()]
    rows.append(("verdicts", "view", "The authoritative judgment per trajectory, and verdict_reason: which judge "
                                     "decided and why (fail closed on a judge error)."))
    rows += [(name, "view", doc) for name, (doc, _) in STATS_VIEWS.items()]
    import pandas as pd

    return pd.DataFrame(rows, columns=["name", "kind", "description"])
