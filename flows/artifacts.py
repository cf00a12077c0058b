"""What a run shows in the Prefect UI beside its logs: a table of held-out success per evaluation, a
short markdown summary per rollout, judge and night, a link to the night's report, where a night's and a
training's scalars are tracked (TensorBoard, MLflow), and the progress of each rollout shard (Prefect
artifacts, on the run page's Artifacts tab; keyed ones also on the Artifacts page, one version per run).

Flows call these with the reports their stages returned; nothing here reads the lake.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from flows.reports import NightlySummary, RolloutReport
from stages.evaluate import EvaluateReport, EvaluationKind
from stages.judge.run import JudgeSummary
from webgym.ports import HOST
from webgym.report_server import DEFAULT_PORT, ReportSite
from webgym.rollout.runner import Progress
from webgym.tracking import TrackingLinks


def _markdown(title: str, lines: Iterable[str]) -> str:
    return f"## {title}\n\n" + "\n".join(f"- {line}" for line in lines) + "\n"


def publish_rollout(report: RolloutReport, split: str, policy: str) -> None:
    """Markdown: episodes, steps, rate and endings of one rollout."""
    rate = report.steps / report.wall_s if report.wall_s else 0.0
    endings = ", ".join(f"{name} {count}" for name, count in sorted(report.terminations.items())) or "none"
    create_markdown_artifact(_markdown(f"Rollout {report.run_key}", [
        f"split **{split}**, policy **{policy}**, {len(report.trajectory_ids)} episodes planned",
        f"**{report.episodes}** episodes run now, {report.skipped} already done by an earlier try",
        f"{report.steps} steps in {report.wall_s:.1f} s ({rate:.2f} steps/s)",
        f"endings: {endings}"]), key="rollout-summary", description=f"rollout {report.run_key}")


def publish_judge(summary: JudgeSummary) -> None:
    """Markdown: outcomes per judge of one judge run, blocked episodes, listed websites, LLM use."""
    lines = [f"{summary.trajectories} trajectories of iteration {summary.iteration}"]
    lines += [f"**{judge}**: {counts}" for judge, counts in summary.by_judge().items()] or ["no new judgments"]
    lines += [f"blocked: {summary.blocked}; websites newly listed: {', '.join(summary.listed) or 'none'}",
              f"LLM: {summary.llm}"]
    lines += [f"skipped judge {name}: {why}" for name, why in summary.skipped.items()]
    lines += [f"not judged: {problem}" for problem in summary.problems[:20]]
    create_markdown_artifact(_markdown(f"Judge, iteration {summary.iteration}", lines), key="judge-summary",
                             description=f"judge iteration {summary.iteration}")


EVALUATION_ARTIFACTS: dict[EvaluationKind, tuple[str, str]] = {
    "baseline": ("baseline-success", "Baseline held-out success (the profile's policy, no checkpoint)"),
    "test": ("heldout-success", "Held-out success"),
    "validation": ("validation-success", "Validation success"),
}
"""(artifact key, label) per kind of evaluation: each kind is its own series of versions on the Artifacts page."""


def evaluation_rows(report: EvaluateReport, kind: EvaluationKind) -> list[dict]:
    """One row for all episodes, then one per held-out kind (test and baseline only: validation tasks are
    not held out) and per difficulty band: episodes, successes, rate and 95% Wilson interval."""
    def row(by: str, group: dict, column: str) -> dict:
        return {"by": by, "group": str(group[column]), "episodes": int(group["episodes"]),
                "successes": int(group["successes"]), "success_rate": round(float(group["success_rate"]), 4),
                "ci_low": round(float(group["ci_low"]), 4), "ci_high": round(float(group["ci_high"]), 4)}

    overall = [row("all", group, "difficulty_band") for group in report.by_band if group["difficulty_band"] == "all"]
    splits = [] if kind == "validation" else [("held_out", report.by_held_out)]
    return overall + [row(by, group, by) for by, groups in [*splits, ("difficulty_band", report.by_band)]
                      for group in groups if group[by] != "all"]


def publish_evaluation(report: EvaluateReport, kind: EvaluationKind) -> None:
    """Table under the kind's own key: success with 95% Wilson intervals overall, by held-out kind and by band."""
    key, label = EVALUATION_ARTIFACTS[kind]
    create_table_artifact(evaluation_rows(report, kind), key=key,
                          description=f"{label} of evaluation {report.evaluation} (iteration {report.iteration}; "
                                      f"checkpoints {', '.join(report.policy_versions)}) with 95% Wilson intervals")


def report_link(summary: NightlySummary, site: ReportSite | None) -> dict[str, str]:
    """The night's report link: its http: URL when `webgym server` (`site`) serves the folder it lies in;
    else its file: URL, which a browser will not open from the UI, with a description saying so and how to
    serve it (the run ran elsewhere, or on another lake than the server's)."""
    report = Path(summary.report)
    url = site.url_of(report) if site else None
    if url:
        return {"link": url, "link_text": report.name,
                "description": f"HTML report of the lake at {summary.data_root}, served by `webgym server` "
                               f"from {site.directory}"}
    why = (f"it lies outside the folder `webgym server` serves ({site.directory}): this run's lake is not the "
           "server's" if site else "this run did not run under `webgym server`")
    return {"link": report.as_uri(), "link_text": str(report),
            "description": f"HTML report of the lake at {summary.data_root}. **Not served over HTTP**: {why}, "
                           "and a browser does not follow a file: link from the UI. Open "
                           f"`{report}` on the machine that wrote it, or serve it: `webgym --data-dir "
                           f"{summary.data_root} server` serves `{report.parent}` at http://{HOST}:{DEFAULT_PORT}/."}


def publish_night(summary: NightlySummary) -> None:
    """A link to the night's HTML report and a markdown summary of its iterations."""
    create_link_artifact(key="nightly-report", **report_link(summary, ReportSite.from_env()))
    lines = [f"lake `{summary.data_root}`, warehouse `{summary.warehouse}`",
             f"rows: {', '.join(f'{table} {count}' for table, count in summary.rows.items())}"]
    if summary.baseline:
        lines.append(f"untrained policy: held-out success {_rate(summary.baseline)}")
    for done in summary.iterations:
        success = "not judged" if done.rollout_success is None else f"{done.rollout_success:.3f}"
        lines.append(f"iteration {done.iteration} ({done.kind}): {done.episodes} episodes, training-rollout success "
                     f"{success}, {done.accepted_steps} accepted steps, checkpoint {done.checkpoint_id or 'none'}, "
                     f"held-out success {_rate(done.evaluation)}")
    if not summary.iterations:
        lines.append("no iteration run (checks, warehouse and report only)")
    create_markdown_artifact(_markdown("Night", lines), key="nightly-summary", description="what the night did")


def publish_tracking(links: TrackingLinks, key: str, what: str) -> None:
    """Markdown: where `what` (a night, a training) tracks its scalars: the TensorBoard folder and the command that
    opens it, the MLflow run when one is configured."""
    lines = []
    if links.logdir is not None:
        lines += [f"TensorBoard event files: `{links.logdir}`",
                  f"open them with `tensorboard --logdir {links.tensorboard_root}` (every run) or "
                  f"`tensorboard --logdir {links.logdir}` (this one), then http://localhost:6006"]
    if links.mlflow_run_id is not None:
        lines += [f"MLflow run `{links.mlflow_run_id}` (experiment {links.mlflow_experiment_id}) at "
                  f"`{links.mlflow_uri}`",
                  f"open it with `mlflow ui --backend-store-uri {links.mlflow_uri}` (the full `mlflow` package), "
                  f"or at #/experiments/{links.mlflow_experiment_id}/runs/{links.mlflow_run_id} on its server"]
    create_markdown_artifact(_markdown(f"Tracking of {what}", lines or ["tracking is off (profile's tracking block)"]),
                             key=key, description=f"where the scalars of {what} are tracked")


def _rate(report: EvaluateReport) -> str:
    low, high = report.interval
    return f"{report.success_rate:.3f} (95% interval {low:.3f}-{high:.3f}, {report.episodes} episodes)"


def progress_publisher(description: str) -> Callable[[Progress], None]:
    """A progress artifact at 0%, and the callback that moves it to a rollout shard's share of episodes done.

    The callback runs inside the shard's event loop, so it calls Prefect's synchronous client (`_sync`)
    rather than returning a coroutine nobody awaits."""
    artifact = create_progress_artifact(0.0, description=description)

    def publish(progress: Progress) -> None:
        update_progress_artifact(artifact, 100.0 * progress.done / max(progress.total, 1),
                                 description=f"{description}: {progress}", _sync=True)

    return publish
