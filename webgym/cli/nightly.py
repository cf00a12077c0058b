"""`webgym nightly`: the main job, the nightly flow with a line per iteration and queries to try."""

from __future__ import annotations

from typing import Annotated

import typer

from webgym.cli.common import config_of, config_path_of, console

NIGHTLY_QUERIES = (
    "SELECT iteration, checkpoint, split, difficulty_band, episodes, success_rate FROM eval_success_by_band",
    "SELECT iteration, difficulty_band, trajectories, success_rate FROM success_by_band",
    "SELECT t.website, count(*) AS episodes, avg(v.success::INT) AS success FROM trajectories tr "
    "JOIN verdicts v USING (trajectory_id) JOIN tasks t USING (task_id) GROUP BY ALL ORDER BY success",
)


def nightly(
    ctx: typer.Context,
    iterations: Annotated[int | None, typer.Option(help="Iterations this run (default: the profile's).")] = None,
) -> None:
    """Run the nightly flow: task set, then rollout -> judge -> accept -> train -> serve -> evaluate, report."""
    from flows.nightly import nightly as nightly_flow

    summary = nightly_flow(iterations=iterations, config_path=config_path_of(ctx),
                           data_dir=config_of(ctx).lake.data_dir)
    console.print(f"[bold]nightly finished[/bold] on {summary.data_root}")
    if summary.recovered_rows:
        console.print(f"  recovered {summary.recovered_rows} journaled row(s) of an interrupted run")
    if summary.baseline_success is not None:
        console.print(f"  untrained policy: held-out success {summary.baseline_success:.1%}")
    for it in summary.iterations:
        rollout = "-" if it.rollout_success is None else f"{it.rollout_success:.1%}"
        console.print(f"  iteration {it.iteration} ({it.kind}): {it.episodes} episodes, success {rollout}; "
                      f"{it.accepted_steps} accepted steps -> {it.checkpoint_id}; held-out success "
                      f"{it.eval_success:.1%} on {it.eval_episodes} episodes")
    console.print("  all data-quality suites passed; rows: " + ", ".join(f"{k}={v}" for k, v in summary.rows.items()))
    console.print(f"  warehouse: {summary.warehouse}")
    console.print(f"  report: {summary.report}")
    console.print("  try:")
    for sql in NIGHTLY_QUERIES:
        console.print(f'    .venv/bin/webgym sql "{sql}"', soft_wrap=True, highlight=False)
