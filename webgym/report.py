"""`webgym report`: one static HTML page of plots and tables, built only from the warehouse views.

Every figure is a query over the views of webgym/warehouse.py, so what the page shows is what
`webgym sql` answers. Plots are PNGs drawn with matplotlib's Agg canvas and embedded as base64:
the page works offline, has no script and can be mailed or archived as one file. A section whose
views are empty says "no data yet" instead of drawing an empty plot.

The figures are rows of one table, FIGURES (query, panels, caption, tables per figure), drawn by one
renderer (webgym/figures.py); only the held-out curve, whose points and intervals are computed here, and
the table-only sections are functions of their own.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Callable
from functools import partial
from pathlib import Path

import duckdb
import pandas as pd
from matplotlib.figure import Figure

from schemas import TABLES
from schemas.values import DIFFICULTY_BANDS
from webgym import warehouse
from webgym.config import project_path
from webgym.figures import FigureSpec, Panel, embedded, no_data, render_figure, table_html
from webgym.lake import Lake
from webgym.policies.scorer.agreement import labelled_decisions, made_by_kind
from webgym.stats import discordant, mcnemar_exact, wilson_interval

BAND_ORDER = [*DIFFICULTY_BANDS, "unknown"]

STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
section { border-top: 1px solid #ccc; margin-top: 2em; }
figure { margin: 1em 0; } img { max-width: 100%; }
figcaption, .meta { color: #555; font-size: 0.9em; }
.table { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; max-width: 24em; overflow-wrap: break-word; }
td.num { overflow-wrap: normal; white-space: nowrap; }
.no-data { color: #a60; font-style: italic; }
"""
"""Tables never widen the page: a long text cell (a path, an id) breaks only where it would overflow its column, words
and numbers size the columns first (break-word, not anywhere), numbers and times never split (td.num), and a
table still too wide scrolls in its box."""


def default_path(lake: Lake) -> Path:
    """reports/report.html beside a local lake (data/ -> reports/), under the project for a remote one."""
    base = Path(lake.root).parent if lake.is_local else project_path(".")
    return base / "reports" / "report.html"


# -- sections: each takes a connection to the warehouse views and returns its HTML body ------

HEADLINE_EVALUATION = """
    SELECT evaluation FROM evals WHERE evaluation IS NOT NULL AND split = 'test'
    GROUP BY evaluation ORDER BY count(DISTINCT (iteration, checkpoint)) DESC, max(evaluated_at) DESC LIMIT 1"""
"""The evaluation the curve shows: the held-out task sample evaluated at the most iterations (the
nightly's own, repeated every iteration); others, validation included, are listed apart, never mixed in."""


def _points(con: duckdb.DuckDBPyConnection, evaluation: str) -> pd.DataFrame:
    """One point per evaluated (iteration, checkpoint) of `evaluation`, in order, labelled: `untrained` for a
    policy no checkpoints row names (the starting policy), else `it<iteration>` (iteration 0: the warm
    start), with `kept it<j>` when the night's checkpoint was kept back and the one of iteration j stayed
    served, `no signal, it<j>` when the night trained none (accept kept no step of its rollouts)."""
    return con.execute("""
        SELECT e.iteration, e.checkpoint, min(e.evaluated_at) AS evaluated_at,
               CASE WHEN bool_or(c.checkpoint_id IS NULL) THEN 'untrained'
                    WHEN e.iteration = 0 THEN 'it0 warm start'
                    WHEN NOT EXISTS (SELECT 1 FROM checkpoints k WHERE k.iteration = e.iteration)
                         THEN 'it' || e.iteration || ' no signal, it' || any_value(c.iteration)
                    WHEN any_value(c.iteration) < e.iteration THEN 'it' || e.iteration || ' kept it' || any_value(c.iteration)
                    ELSE 'it' || e.iteration END AS point
        FROM evals e LEFT JOIN checkpoints c ON c.checkpoint_id = e.checkpoint
        WHERE e.evaluation = ? GROUP BY e.iteration, e.checkpoint ORDER BY min(e.evaluated_at)""",
                       [evaluation]).df()


def heldout_success(con: duckdb.DuckDBPyConnection) -> str:
    """The headline curve: not a FIGURES row, since its x axis is the labelled points of `_points` (not
    iterations), its kinds sit side by side, and the overall rate and its Wilson intervals are summed here
    from the per-kind counts."""
    found = con.execute(HEADLINE_EVALUATION).fetchall()
    if not found:
        return no_data("no evaluation on held-out tasks in the evals table")
    evaluation = found[0][0]
    points = _points(con, evaluation)
    order = {(i, c): x for x, (i, c) in enumerate(zip(points["iteration"], points["checkpoint"], strict=True))}
    kinds = con.execute("""
        SELECT iteration, checkpoint, coalesce(held_out, 'site') AS held_out, sum(episodes)::BIGINT AS episodes,
               sum(successes)::BIGINT AS successes
        FROM eval_success WHERE evaluation = ? GROUP BY ALL""", [evaluation]).df()
    overall = kinds.groupby(["iteration", "checkpoint"], as_index=False)[["episodes", "successes"]].sum()
    rows = pd.concat([overall.assign(held_out="all"), kinds], ignore_index=True)
    rows = rows.assign(success_rate=rows.successes / rows.episodes,
                       x=[order[key] for key in zip(rows.iteration, rows.checkpoint, strict=True)])
    bounds = [wilson_interval(int(k), int(n)) for k, n in zip(rows.successes, rows.episodes, strict=True)]
    rows = rows.assign(ci_low=[low for low, _ in bounds], ci_high=[high for _, high in bounds])
    bands = con.execute("""
        SELECT iteration, checkpoint, coalesce(difficulty_band, 'unknown') AS difficulty_band,
               sum(episodes)::BIGINT AS episodes, sum(successes)::BIGINT AS successes,
               sum(successes) / sum(episodes) AS success_rate
        FROM eval_success_by_band WHERE evaluation = ? GROUP BY ALL""", [evaluation]).df()
    bands = bands.assign(x=[order[key] for key in zip(bands.iteration, bands.checkpoint, strict=True)])
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    for offset, (kind, group) in enumerate(rows.sort_values("x").groupby("held_out", sort=True)):
        x = group.x + (offset - 1) * 0.06  # the kinds side by side, so their intervals do not overlap
        errors = [group.success_rate - group.ci_low, group.ci_high - group.success_rate]
        left.errorbar(x, group.success_rate, yerr=errors, marker="o", capsize=3, label=kind)
    left.set_title(f"held-out success, 95% Wilson intervals ({evaluation})")
    left.set_ylabel("success rate")
    left.set_ylim(0, min(1.0, max(0.05, float(rows.ci_high.max()) * 1.1)))
    left.legend(fontsize="small")
    for band in [name for name in BAND_ORDER if name in set(bands.difficulty_band)]:
        group = bands[bands.difficulty_band == band].sort_values("x")
        right.plot(group.x, group.success_rate, marker="o", label=band)
    right.set_title("by difficulty band (both held-out kinds)")
    right.legend(fontsize="small")
    for ax in (left, right):
        ax.set_xticks(range(len(points)), points["point"], rotation=20)
    caption = (f"Held-out success of every checkpoint evaluated on one task sample ({evaluation}: the same tasks "
               "and settings for every point), from the untrained policy and the warm start on: left overall and "
               "per held-out kind (family: sites of a family never trained on; site: unseen sites of training "
               "families; external: MiniWoB++ pages, a world no task of which is trained on) with 95% Wilson intervals, right per difficulty band (easy 1-3 facts, medium 4-6, hard "
               "7+). Views eval_success and eval_success_by_band.")
    table = rows.merge(points[["iteration", "checkpoint", "point"]], on=["iteration", "checkpoint"])
    table = table.sort_values(["x", "held_out"])
    others = con.execute("""
        SELECT evaluation, count(DISTINCT checkpoint) AS checkpoints, count(*) AS episodes,
               avg(success::INT) AS success_rate
        FROM evals WHERE evaluation IS DISTINCT FROM ? GROUP BY ALL ORDER BY ALL""", [evaluation]).df()
    listed = "" if others.empty else (
        "<p class=\"meta\">Other evaluations (other task samples or settings, not comparable with the curve):</p>"
        + table_html(others, "other-evaluations"))
    by_band = bands.merge(points[["iteration", "checkpoint", "point"]], on=["iteration", "checkpoint"])
    by_band = by_band.sort_values(["x", "difficulty_band"])
    return (embedded(fig, caption)
            + table_html(table[["point", "checkpoint", "held_out", "episodes", "successes", "success_rate", "ci_low",
                            "ci_high"]], "heldout-success-by-kind")
            + table_html(by_band[["point", "difficulty_band", "episodes", "successes", "success_rate"]],
                     "heldout-success-by-band")
            + listed)


def against_warm_start(con: duckdb.DuckDBPyConnection) -> str:
    """What the nights add over imitation: every point after the warm start of the headline evaluation,
    paired with the warm start task for task (the same sample every iteration), per held-out kind and all
    kinds together: tasks gained, tasks lost and the exact McNemar p of the difference. Counts side by side
    with overlapping intervals cannot say that; the pairs can."""
    found = con.execute(HEADLINE_EVALUATION).fetchall()
    if not found:
        return no_data("no evaluation on held-out tasks in the evals table")
    evaluation = found[0][0]
    points = _points(con, evaluation)
    warm = points[points["point"] == "it0 warm start"]
    if warm.empty:
        return no_data(f"{evaluation} has no warm-start point (iteration 0 with a checkpoint) to pair with")
    episodes = con.execute("""
        SELECT iteration, checkpoint, coalesce(held_out, 'site') AS held_out, task_id, success,
               row_number() OVER (PARTITION BY iteration, checkpoint, task_id ORDER BY evaluated_at, trajectory_id)
                   AS occurrence
        FROM evals WHERE evaluation = ?""", [evaluation]).df()
    key = ["held_out", "task_id", "occurrence"]
    base = episodes.merge(warm[["iteration", "checkpoint"]], on=["iteration", "checkpoint"])[[*key, "success"]]
    later = points[points["evaluated_at"] > warm["evaluated_at"].iloc[0]]
    rows = []
    for point in later.itertuples():
        mine = episodes[(episodes["iteration"] == point.iteration) & (episodes["checkpoint"] == point.checkpoint)]
        paired = mine[[*key, "success"]].merge(base, on=key, suffixes=("", "_warm"))
        for kind, group in [("all", paired), *paired.groupby("held_out", sort=True)]:
            gained, lost = discordant(group["success"], group["success_warm"])
            rows.append({"point": point.point, "held_out": kind, "paired": len(group),
                         "warm_start_successes": int(group["success_warm"].sum()),
                         "successes": int(group["success"].sum()), "gained": gained, "lost": lost,
                         "mcnemar_p": mcnemar_exact(gained, lost)})
    if not rows:
        return no_data(f"{evaluation} has no point after the warm start yet")
    table = pd.DataFrame(rows)
    overall = table[table["held_out"] == "all"]
    fig = Figure(figsize=(7, 3.2), layout="constrained")
    axis = fig.subplots()
    x = range(len(overall))
    axis.bar(x, overall["gained"], color="tab:green", label="gained (only this point solves)")
    axis.bar(x, -overall["lost"], color="tab:red", label="lost (only the warm start solves)")
    axis.axhline(0, color="#444", linewidth=0.8)
    axis.set_xticks(list(x), overall["point"], rotation=20)
    axis.set_ylabel("tasks")
    axis.set_title(f"paired with the warm start, all held-out kinds ({evaluation})")
    axis.legend(fontsize="small")
    caption = ("Each point after the warm start against the warm start on the same held-out tasks: tasks it solves "
               "that the warm start did not (up) and the reverse (down). The table gives them per held-out kind "
               "with the exact McNemar p of the difference (small: the nights changed what is solved; large: "
               "the difference is what chance would give). View eval_success's episodes, table evals.")
    return embedded(fig, caption) + table_html(table, "against-warm-start-by-kind")


def decisions_by_kind(con: duckdb.DuckDBPyConnection) -> str:
    """Decision accuracy per point of the headline evaluation, by the kind of decision the oracle made on
    the same page (its labels of the evaluation episodes, rollout.label_evaluations): which decisions the
    nights teach, where held-out success alone says only how many episodes end well."""
    found = con.execute(HEADLINE_EVALUATION).fetchall()
    if not found:
        return no_data("no evaluation on held-out tasks in the evals table")
    evaluation = found[0][0]
    steps = con.execute("""
        SELECT s.trajectory_id, s.t, s.elements, s.page_text, s.actions, s.expert_actions, e.iteration, e.checkpoint
        FROM steps s JOIN evals e USING (trajectory_id)
        WHERE e.evaluation = ? AND s.expert_actions IS NOT NULL""", [evaluation]).df()
    if steps.empty:
        return no_data(f"no step of {evaluation} is labelled by the oracle (rollout.label_evaluations is off, or "
                       "no held-out task is on a synthetic site)")
    decided = labelled_decisions(steps).merge(steps[["trajectory_id", "t", "iteration", "checkpoint"]],
                                              on=["trajectory_id", "t"])
    points = _points(con, evaluation)
    decided = decided.merge(points[["iteration", "checkpoint", "point"]], on=["iteration", "checkpoint"])
    order = {point: x for x, point in enumerate(points["point"])}
    table = made_by_kind(decided, "point")
    bounds = [wilson_interval(int(k), int(n)) for k, n in zip(table.matched, table.decisions, strict=True)]
    table = table.assign(share=table.matched / table.decisions, ci_low=[low for low, _ in bounds],
                         ci_high=[high for _, high in bounds], x=table["point"].map(order))
    table = table.sort_values(["x", "kind"])
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axis = fig.subplots()
    for kind, group in table.groupby("kind", sort=True):
        axis.plot(group.x, group.share, marker="o", linewidth=2.5 if kind == "all" else 1.2, label=kind)
    axis.set_xticks(range(len(points)), points["point"], rotation=20)
    axis.set_ylim(0, 1)
    axis.set_ylabel("share of the oracle's decisions made")
    axis.set_title(f"decisions by the oracle's kind ({evaluation})")
    axis.legend(fontsize="small", ncol=2)
    caption = ("At every step of the held-out evaluation episodes the oracle named its own next decision from the "
               "page the policy reached; a decision counts as made when the policy chose the same candidate (a "
               "toggle, \"Done.\", the line that answers, a scroll, a link, a fill with the same text). Shares by "
               "the oracle's kind, with 95% Wilson intervals in the table. Tables steps (expert_actions) and evals.")
    return embedded(fig, caption) + table_html(table.drop(columns="x"), "decisions-by-kind-table")


def _websites(splits: pd.DataFrame) -> list[str]:
    return [f"{n} website{'s' * (n != 1)}" for n in splits.websites]


FIGURES: list[FigureSpec] = [
    FigureSpec(
        "training-success", "Training-rollout success", "SELECT * FROM rollout_success WHERE purpose <> 'evaluation'",
        "no judged training or demonstration episode",
        (Panel("rate", group="purpose", ylabel="success rate", ylim=(0, 1.05)),),
        "Judged success of the episodes each iteration trained from, with 95% Wilson intervals: train is the "
        "policy's own rollouts (the learning curve), demonstration the oracle's warm-start episodes; held-out "
        "evaluations are never mixed in (see above). View rollout_success.",
        ((None, "rollout-success"),)),
    FigureSpec(
        "training", "Loss, accuracy and accepted steps",
        """SELECT checkpoint_id, iteration, objective, metrics['train/loss'] AS loss,
                  metrics['train/accuracy'] AS accuracy
           FROM checkpoints ORDER BY iteration, created_at""",
        "the checkpoints and accepted tables are empty",
        (Panel("line", "loss", title="train/loss per checkpoint"),
         Panel("line", "accuracy", title="train/accuracy per checkpoint", ylim=(0, 1.05)),
         Panel("bar", "steps", group="objective", query="SELECT * FROM accepted_by_iteration",
               title="accepted steps per iteration", alpha=0.7)),
        "Training per iteration: the final loss and decision accuracy (on its training samples) of each checkpoint, "
        "from its metrics, and the steps accept kept for it, per objective. Views checkpoints and "
        "accepted_by_iteration.",
        ((None, "training-metrics"), ("SELECT * FROM accepted_by_iteration", "accepted-steps")), size=(11, 3.5)),
    FigureSpec(
        "wall-time", "Wall time per stage", "SELECT * FROM stage_wall_time",
        "no stage runs in the runs table (flow runs record their start and end there)",
        (Panel("stacked", ylabel="seconds", stack={"rollout_s": "rollout", "judge_s": "judge", "train_s": "train",
                                                  "validation_s": "validation", "serve_s": "serve",
                                                  "evaluation_s": "held-out evaluation"}),),
        "Wall time per iteration and stage, from each stage's own flow run (its start to its end in the runs table): "
        "validation and held-out evaluations apart, each with its rollout and judge; a nightly run does "
        "nightly.iterations iterations, and `started` dates each one. View stage_wall_time.",
        ((None, "stage-wall-time"),)),
    FigureSpec(
        "same-screenshot", "Same-screenshot rate",
        "SELECT iteration, steps, same_screenshot_rate FROM same_screenshot_rate WHERE purpose = 'train'",
        "no training-rollout steps with a previous screenshot",
        (Panel("bar", "same_screenshot_rate", ylabel="share of steps", ylim=(0, None)),),
        "Share of steps whose screenshot equals the one before in the same episode, per iteration (training "
        "rollouts of the policy): the agent repeated an action that changed nothing. View same_screenshot_rate.",
        ((None, "same-screenshot-rate"),)),
    FigureSpec(
        "episode-length", "Steps per trajectory", "SELECT iteration, n_steps FROM trajectories ORDER BY iteration",
        "the trajectories table is empty",
        (Panel("box", "n_steps", ylabel="steps per episode"),),
        "Distribution of steps per episode per iteration (box: quartiles, line: median, triangle: mean, circles: "
        "outliers), training and evaluation episodes. Views trajectories and steps_per_trajectory.",
        (("SELECT * FROM steps_per_trajectory", "steps-per-trajectory"),)),
    FigureSpec(
        "task-set", "Task set",
        "SELECT coalesce(split, 'unsplit') AS split, tasks, websites FROM tasks_by_split", "the tasks table is empty",
        (*(Panel("barh", "tasks", x=column, group="split", title=f"tasks by {column.replace('_', ' ')}", order=order,
                 query=f"SELECT coalesce({column}, 'unknown') AS {column}, coalesce(split, 'unsplit') AS split, "
                       f"tasks FROM {view}")
           for view, column, order in [("tasks_by_source", "source", None), ("tasks_by_domain", "domain", None),
                                       ("tasks_by_band", "difficulty_band", BAND_ORDER)]),
         Panel("bar", "tasks", x="split", title="tasks by split", bar_labels=_websites)),
        "Task set composition: tasks per source, domain and difficulty band, stacked by split, and tasks per split "
        "with their distinct websites. Views tasks_by_source, tasks_by_domain, tasks_by_band and tasks_by_split.",
        ((None, "tasks-by-split"),), size=(11, 7.5), grid=(2, 2)),
    FigureSpec(
        "llm-calls", "LLM calls and cost", "SELECT * FROM llm_cost_by_purpose", "the llm_calls table is empty",
        (Panel("barh", "calls", x="purpose", group="model", title="calls (cache hits included)"),
         Panel("barh", "cost_usd", x="purpose", group="model", title="cost (USD)", fill=0.0)),
        "LLM requests and their estimated cost per purpose, stacked by model; models without a price in llm.prices "
        "count no cost. Views llm_cost_by_purpose and, below it, llm_cost_by_stage (per day).",
        ((None, "llm-cost-by-purpose"), ("SELECT * FROM llm_cost_by_stage", "llm-cost-by-stage")), size=(11, 3.8)),
    FigureSpec(
        "throughput", "Rollout throughput", "SELECT * FROM rollout_throughput", "the trajectories table is empty",
        (Panel("line", "episodes_per_s", group="purpose", ylabel="episodes / s", ylim=(0, None)),
         Panel("line", "steps_per_s", group="purpose", ylabel="steps / s", ylim=(0, None))),
        "Rollout throughput per iteration, training and evaluation episodes apart and each policy version apart "
        "(iteration 0 evaluates the untrained policy and the warm start: two points): episodes and steps per "
        "second of wall time, from the first episode's start to the last one's end (a rollout resumed later counts "
        "its pause). View rollout_throughput.",
        ((None, "rollout-throughput"),), size=(11, 3.8)),
]
"""The report's figures, in page order after the held-out curve: each a query over the warehouse views, its
panels, caption and tables (webgym/figures.py draws them all)."""


def checkpoints(con: duckdb.DuckDBPyConnection) -> str:
    frame = con.execute("""
        SELECT checkpoint_id, iteration, objective, base, path, created_at, metrics
        FROM checkpoints ORDER BY iteration, created_at""").df()
    if frame.empty:
        return no_data("the checkpoints table is empty")
    metrics = pd.DataFrame(frame.metrics.tolist(), index=frame.index)
    table = frame.drop(columns="metrics").join(metrics[sorted(metrics.columns)])
    return table_html(table, "checkpoints-table")


def promotions(con: duckdb.DuckDBPyConnection) -> str:
    frame = con.execute("""
        SELECT iteration, checkpoint_id, promoted, episodes, success_rate, served_checkpoint, served_success_rate,
               reason
        FROM promotions ORDER BY iteration""").df()
    if frame.empty:
        return no_data("no promotion decision in the promotions table (nightly.validation_tasks 0)")
    return ("<p class=\"meta\">Each new checkpoint's greedy success on the validation split (training families, "
            "never trained on) against the served checkpoint's on the same tasks: a checkpoint that validates "
            "worse is kept back and the served policy stays. Table promotions.</p>" + table_html(frame, "promotions-table"))


def table_rows(con: duckdb.DuckDBPyConnection) -> str:
    union = " UNION ALL ".join(f"SELECT '{name}' AS table_name, count(*) AS row_count FROM {name}" for name in TABLES)
    return table_html(con.execute(union).df(), "table-rows")


RUNS = """
    SELECT run_name, flow_run_id, profile, seed, commit, started_at, ended_at, outcome
    FROM runs WHERE parent_flow_run_id IS NULL OR parent_flow_run_id NOT IN (SELECT flow_run_id FROM runs)
    ORDER BY started_at"""
"""The outermost recorded runs: each run of its own (a nightly, or a stage run by hand), not its subflows; while a
nightly is still running (it records its row when it ends, after its report) its stages stand in for it."""


def runs(con: duckdb.DuckDBPyConnection) -> str:
    frame = con.execute(RUNS).df()
    if frame.empty:
        return no_data("no flow run in the runs table (a lake written before runs were recorded, or outside Prefect)")
    return ("<p class=\"meta\">Each run of its own (a nightly, or a stage run by hand) with its own profile, "
            "policy's acting seed (policy.scorer.seed for the scorer, else policy.seed) and commit; its stages are "
            "its subflows (view run_ancestors). Table runs.</p>"
            + table_html(frame, "runs-table"))


def provenance(con: duckdb.DuckDBPyConnection) -> str:
    """What made the lake's rows: each profile, seed and commit its flow runs ran with, and how many ran each."""
    made = con.execute("""
        SELECT profile, seed, commit, count(*) AS runs FROM runs GROUP BY ALL ORDER BY min(started_at)""").fetchall()
    if not made:
        return "flow runs: none recorded"
    return " · ".join(f"profile {profile} · seed {seed} · commit {commit} ({count} flow run{'s' * (count != 1)})"
                      for profile, seed, commit, count in made)


SECTIONS: list[tuple[str, str, Callable[[duckdb.DuckDBPyConnection], str]]] = [
    ("heldout-success", "Held-out success", heldout_success),
    ("against-warm-start", "What the nights add over the warm start", against_warm_start),
    ("decisions-by-kind", "Decisions by kind", decisions_by_kind),
    *((spec.anchor, spec.heading, partial(render_figure, spec)) for spec in FIGURES),
    ("checkpoints", "Checkpoints", checkpoints),
    ("promotions", "Promotions", promotions),
    ("runs", "Runs", runs),
    ("tables", "Rows per table", table_rows),
]
"""(anchor, heading, section function), in page order."""


def render(lake: Lake) -> str:
    """The whole page as one HTML string; its provenance is the runs' own (profile, seed, commit), not the
    report command's."""
    with warehouse.connect(lake) as con:
        sections = [(anchor, title, build(con)) for anchor, title, build in SECTIONS]
        made = provenance(con)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    provenance_line = f"{made} · lake {lake.root} · generated {generated}"
    contents = " · ".join(f'<a href="#{anchor}">{html.escape(title)}</a>' for anchor, title, _ in sections)
    body = "\n".join(f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{content}</section>'
                     for anchor, title, content in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>WebGym report</title>'
            f"<style>{STYLE}</style></head><body>\n<h1>WebGym report</h1>\n"
            f'<p class="meta" id="provenance">{html.escape(provenance_line)}</p>\n<nav>{contents}</nav>\n{body}\n'
            "</body></html>\n")


def write_report(lake: Lake, path: Path) -> Path:
    """Render the report and write it to `path` (folders created); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(lake), encoding="utf-8")
    return path
