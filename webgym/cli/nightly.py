"""`webgym nightly`: the main job, the nightly flow with a line per iteration and queries to try."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from webgym.cli.common import config_of, config_path_of, console, exit_on_sigterm, writes_lake
from webgym.prefect_env import api_starting

if TYPE_CHECKING:
    from stages.evaluate import EvaluateReport

NIGHTLY_QUERIES = (
    "SELECT iteration, checkpoint, held_out, episodes, success_rate, ci_low, ci_high FROM eval_success "
    "WHERE split = 'test'",
    "SELECT iteration, difficulty_band, trajectories, success_rate, ci_low, ci_high FROM success_by_band "
    "WHERE purpose = 'train'",
    "SELECT t.website, count(*) AS episodes, avg(v.success::INT) AS success FROM trajectories tr "
    "JOIN verdicts v USING (trajectory_id) JOIN tasks t USING (task_id) GROUP BY ALL ORDER BY success",
)


def held_out(report: EvaluateReport) -> str:
    """An evaluation's success with its 95% interval and episodes, overall and per held-out kind."""
    low, high = report.interval
    kinds = "; ".join(f"{row['held_out']} {row['success_rate']:.1%} of {row['episodes']}"
                      for row in report.by_held_out if row["held_out"] != "all")
    return f"{report.success_rate:.1%} [{low:.1%}, {high:.1%}] on {report.episodes} episodes ({kinds})"


@writes_lake
def nightly(
    ctx: typer.Context,
    iterations: Annotated[int | None, typer.Option(help="Iterations this run (default: the profile's).")] = None,
) -> None:
    """Run the nightly flow: task set, then rollout -> judge -> accept -> train -> serve -> evaluate, report."""
    exit_on_sigterm()
    with api_starting():
        from flows.nightly import nightly as nightly_flow

    summary = nightly_flow(iterations=iterations, config_path=config_path_of(ctx),
                           data_dir=config_of(ctx).lake.data_dir)
    console.print(f"[bold]nightly finished[/bold] on {summary.data_root}")
    if summary.recovered_rows:
        console.print(f"  recovered {summary.recovered_rows} journaled row(s) of an interrupted run")
    if summary.baseline is not None:
        console.print(f"  untrained policy: held-out success {held_out(summary.baseline)}")
    for it in summary.iterations:
        rollout = "-" if it.rollout_success is None else f"{it.rollout_success:.1%}"
        trained = f"{it.checkpoint_id} ({it.promotion['reason']})" if it.checkpoint_id else "no checkpoint"
        console.print(f"  iteration {it.iteration} ({it.kind}): {it.episodes} episodes, success {rollout}; "
                      f"{it.accepted_steps} accepted steps -> {trained}; held-out success {held_out(it.evaluation)}",
                      soft_wrap=True)
    console.print("  all data-quality suites passed; rows: " + ", ".join(f"{k}={v}" for k, v in summary.rows.items()))
    console.print(f"  warehouse: {summary.warehouse}")
    console.print(f"  report: {summary.report}")
    console.print("  try:")
    for sql in NIGHTLY_QUERIES:
        console.print(f'    .venv/bin/webgym sql "{sql}"', soft_wrap=True, highlight=False)
