"""Accept: the steps a training iteration learns from, with why and how much (the `accepted` table).

Each objective is one small function over the judged episodes and their steps, dispatched through
OBJECTIVES by `accept`:

- filtered_bc (WebGym section 5.1, eq. 1): successful, unblocked trajectories only, weight 1, from a
  replay buffer over the last k iterations with an optional recency-biased draw (appendix F);
- reinforce: every judged trajectory, advantage = reward - the task's mean reward (the baseline);
- grpo (WebAgent-R1 2.3, OpenWebRL 4.4): groups of one task, advantage = (r - mean) / (std + eps)
  on every turn (weight 0), zero-variance groups dropped (DAPO's dynamic sampling) and the shortfall
  reported; with grpo_demonstration_weight, the oracle demonstrations join every update as weighted,
  advantage-0 rows, the loss's supervised term that keeps what the warm start taught;
- sft (OpenWebRL 4.2): the shortest successful trajectory per task, capped per website; oracle
  demonstrations of train-split sites (AutoWebWorld), never of test-split ones;
- dagger (Ross et al. 2011, on the synthetic sites): every step of the replay buffer's training episodes
  that the oracle labelled (steps.expert_actions, which the trainer learns instead of the policy's
  calls), successful or not, plus the oracle's successful demonstrations.

WebGym's repetition penalty applies to every step that is reinforced (weight, or positive
advantage): a step whose next step shows the same screenshot is dropped (not a step dagger relabels:
its lesson is the oracle's call, not the repeated one). No objective ever learns
from a task of the test split, of a test website or of an external world's held-out family, from a
blocked episode, or from one without a verdict (status error / not_evaluable).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from schemas.accepted import SCHEMA as ACCEPTED
from schemas.values import EXTERNAL_SOURCES
from webgym.config import AcceptConfig, Objective
from webgym.held_out import test_lines

STEP_COLUMNS = ["trajectory_id", "t", "screenshot_sha256", "response", "parse_error", "expert_actions"]
"""The steps columns accept reads (read only these: steps also hold page text and elements)."""

GRPO_EPS = 1e-6
"""Added to the group's reward standard deviation (population std) before dividing."""

_VERDICT_COLUMNS = ["trajectory_id", "success", "reward", "status", "blocked"]
_TRAJECTORY_COLUMNS = ["trajectory_id", "task_id", "iteration", "group_id", "policy", "n_steps", "termination"]
ENDED_BY_POLICY = ("answered", "task_ended")
"""Terminations the policy's last action caused: it answered, or the page ended the task after it acted."""


@dataclass(frozen=True)
class Acceptance:
    """What `accept` selected: the accepted rows and the figures the train and nightly flows log."""

    accepted: pd.DataFrame
    """Rows of the accepted table (schemas/accepted.py)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Trajectories considered and kept, steps kept and dropped, by reason (e.g. steps_repeated)."""
    groups_total: int | None = None
    """grpo: groups of one task found in the iteration."""
    groups_effective: int | None = None
    """grpo: groups with enough members and reward variance > 0 (the ones that train)."""
    groups_missing: int | None = None
    """grpo: effective groups still wanted to reach accept.grpo_target_groups: roll out this many more."""
    problems: list[str] = field(default_factory=list)
    """Records that could not be used (named); the rest went on."""


def judged_episodes(verdicts: pd.DataFrame, trajectories: pd.DataFrame, tasks: pd.DataFrame,
                    steps: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per trajectory with its authoritative verdict and its task's split, website, source and family,
    plus `usable` (a real verdict, not blocked, not a test task nor held out with one (held_out_with_a_test_task),
    not a validation task, steps recorded) and `why` not;
    and one problem line per record that does not fit (verdict without trajectory, missing task or steps)."""
    problems = []
    verdicts = verdicts[_VERDICT_COLUMNS]
    known = verdicts["trajectory_id"].isin(trajectories["trajectory_id"])
    problems += [f"verdict for trajectory {t}: no trajectories row" for t in verdicts.loc[~known, "trajectory_id"]]
    episodes = trajectories[_TRAJECTORY_COLUMNS].merge(verdicts[known], on="trajectory_id", how="inner")
    task_info = tasks[["task_id", "split", "website", "source", "family"]]
    missing = ~episodes["task_id"].isin(task_info["task_id"])
    problems += [f"trajectory {t}: task {k} not in tasks" for t, k in
                 episodes.loc[missing, ["trajectory_id", "task_id"]].itertuples(index=False)]
    episodes = episodes[~missing].merge(task_info, on="task_id", how="left")
    stepless = ~episodes["trajectory_id"].isin(steps["trajectory_id"])
    problems += [f"trajectory {t}: judged, but no steps rows" for t in episodes.loc[stepless, "trajectory_id"]]
    why = pd.Series(None, index=episodes.index, dtype=object)
    why[episodes["status"].isin(["error", "not_evaluable"])] = "unjudged"
    why[why.isna() & episodes["blocked"].astype(bool)] = "blocked"
    why[why.isna() & ((episodes["split"] == "test") | held_out_with_a_test_task(episodes, tasks))] = "test_site"
    why[why.isna() & (episodes["split"] == "validation")] = "validation"  # what promotion is judged on
    why[why.isna() & stepless] = "no_steps"
    return episodes.assign(usable=why.isna(), why=why, reward=episodes["reward"].astype(float)), problems


def held_out_with_a_test_task(episodes: pd.DataFrame, tasks: pd.DataFrame) -> pd.Series:
    """True for each episode whose task shares what the split holds out with a test task (webgym.held_out):
    its website in the project's own worlds, its task family in an external world."""
    websites, families = test_lines(tasks)
    external = episodes["source"].isin(EXTERNAL_SOURCES)
    return (~external & episodes["website"].isin(websites)) | (external & episodes["family"].isin(families))


def repeated_steps(steps: pd.DataFrame) -> pd.Series:
    """True for each step whose next step (t + 1) shows the same screenshot (same blob hash): WebGym's
    repetition penalty. The final step is exempt: after an answer WebGym repeats the last screenshot by
    definition, and the steps table records no observation after the last step."""
    ordered = steps.sort_values(["trajectory_id", "t"])
    following = ordered.groupby("trajectory_id")[["t", "screenshot_sha256"]].shift(-1)
    same = (following["t"] == ordered["t"] + 1) & (following["screenshot_sha256"] == ordered["screenshot_sha256"])
    return same.reindex(steps.index).fillna(False).astype(bool)


def replay_sample(candidates: pd.DataFrame, n: int, power: float, seed: int | list[int]) -> pd.DataFrame:
    """`n` rows of `candidates` (all of them when there are fewer), drawn without replacement, each draw
    picking a row with probability proportional to (age + 1) ** -power among those left.

    WebGym (appendix F, Table 6) trains a fixed number of samples per iteration (1200 or 1800) from a
    replay buffer of the last 4 or 8 iterations with "recency bias power" 1 or 2 and gives no formula;
    this is the power-law reading: with power 1, a step one iteration old is half as likely as a new one.
    """
    if len(candidates) <= n:
        return candidates
    weights = (candidates["age"].to_numpy(dtype=float) + 1) ** -power
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(candidates), size=n, replace=False, p=weights / weights.sum())
    return candidates.iloc[np.sort(chosen)]


def _steps_of(steps: pd.DataFrame, episodes: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The steps of these episodes, with the named episode columns alongside."""
    return steps.merge(episodes[["trajectory_id", *columns]], on="trajectory_id", how="inner")


def _reinforced(rows: pd.DataFrame, reinforced: pd.Series, config: AcceptConfig,
                counts: dict[str, int]) -> pd.DataFrame:
    """Drop, among reinforced steps, repeated ones (repetition penalty) and unparseable ones; count both."""
    repeated = reinforced & repeated_steps(rows) & config.repetition_penalty
    malformed = reinforced & rows["parse_error"].notna() & ~repeated & (not config.keep_parse_errors)
    counts["steps_repeated"] = counts.get("steps_repeated", 0) + int(repeated.sum())
    counts["steps_parse_error"] = counts.get("steps_parse_error", 0) + int(malformed.sum())
    return rows[~(repeated | malformed)]


def _accepted(rows: pd.DataFrame, iteration: int, objective: str, reason: pd.Series | str,
              weight: pd.Series | float = 1.0, advantage: pd.Series | float | None = None) -> pd.DataFrame:
    frame = pd.DataFrame({"trajectory_id": rows["trajectory_id"], "t": rows["t"].astype("int64"),
                          "iteration": iteration, "objective": objective, "reason": reason,
                          "weight": weight, "advantage": advantage}, index=rows.index)
    frame = frame.astype({"iteration": "int64", "weight": "float64", "advantage": "float64"})
    return frame.sort_values(["trajectory_id", "t"]).reset_index(drop=True).reindex(columns=ACCEPTED.columns)


def _excluded(episodes: pd.DataFrame) -> dict[str, int]:
    return {f"trajectories_{why}": int(n) for why, n in episodes["why"].value_counts().items()}


def filtered_bc_steps(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int,
                      config: AcceptConfig) -> Acceptance:
    """One row per step of a successful, unblocked trajectory of the replay buffer (the last
    `replay_iterations` iterations up to `iteration`), weight 1 (WebGym eq. 1), repeated steps dropped;
    with `samples_per_iteration`, a recency-biased draw of that many. reason: success or replay, age a."""
    window = episodes[episodes["iteration"].between(iteration - config.replay_iterations + 1, iteration)]
    kept = window[window["usable"] & window["success"].astype(bool)]
    counts = {"trajectories": int(window["usable"].sum()), "trajectories_kept": len(kept), **_excluded(window)}
    rows = _steps_of(steps, kept.assign(age=iteration - kept["iteration"]), ["age"])
    rows = _reinforced(rows, pd.Series(True, index=rows.index), config, counts)
    if config.samples_per_iteration is not None:
        rows = replay_sample(rows, config.samples_per_iteration, config.recency_power, [config.seed, iteration])
    reason = np.where(rows["age"] == 0, "success", "replay, age " + rows["age"].astype(str))
    accepted = _accepted(rows, iteration, "filtered_bc", reason)
    counts["steps_kept"] = len(accepted)
    if config.failed_endings:
        endings = failed_endings(window, steps, iteration, config.failed_endings)
        accepted = pd.concat([accepted, endings]).sort_values(["trajectory_id", "t"]).reset_index(drop=True)
        counts["steps_failed_endings"] = len(endings)
    return Acceptance(accepted, counts)


def failed_endings(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int, weight: float) -> pd.DataFrame:
    """The last step of each usable failed episode that the policy ended itself (ENDED_BY_POLICY), weight
    `weight` and advantage -1: the loss learns away from it (accept.failed_endings). Failures the step limit,
    a timeout or an error ended are left out: no single action of theirs is known to be wrong."""
    failed = episodes[episodes["usable"] & ~episodes["success"].astype(bool)
                      & episodes["termination"].isin(ENDED_BY_POLICY)]
    rows = _steps_of(steps, failed.assign(age=iteration - failed["iteration"]), ["age", "n_steps"])
    rows = rows[rows["t"] == rows["n_steps"] - 1]
    return _accepted(rows, iteration, "filtered_bc", "failed ending, age " + rows["age"].astype(str), weight, -1.0)


def reinforce_steps(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int,
                    config: AcceptConfig) -> Acceptance:
    """One row per step of every judged, unblocked trajectory of `iteration` whose reward differs from
    its task's mean reward (the baseline), advantage = reward - baseline; on-policy, no replay."""
    current = episodes[episodes["iteration"] == iteration]
    pool = current[current["usable"]]
    advantage = pool["reward"] - pool.groupby("task_id")["reward"].transform("mean")
    informative = advantage.abs() > 1e-12
    counts = {"trajectories": len(pool), "trajectories_kept": int(informative.sum()),
              "trajectories_at_baseline": int((~informative).sum()), **_excluded(current)}
    rows = _steps_of(steps, pool[informative].assign(advantage=advantage), ["advantage"])
    rows = _reinforced(rows, rows["advantage"] > 0, config, counts)
    reason = np.where(rows["advantage"] > 0, "above task mean", "below task mean")
    accepted = _accepted(rows, iteration, "reinforce", reason, advantage=rows["advantage"])
    return Acceptance(accepted, {**counts, "steps_kept": len(accepted)})


def grpo_steps(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int, config: AcceptConfig) -> Acceptance:
    """One row per step of every trajectory in an effective group of `iteration`: a group is the
    episodes of one task rolled out together (group_id; the task when none), advantage
    (r - mean) / (std + eps) on every turn; groups smaller than grpo_min_group_size or with equal
    rewards are dropped (dynamic sampling) and groups_missing says how many more the update wants."""
    current = episodes[episodes["iteration"] == iteration]
    pool = current[current["usable"]]
    group = pool["task_id"] + "|" + pool["group_id"].fillna("").astype(str)
    rewards = pool["reward"].groupby(group)
    size, mean, std = rewards.transform("size"), rewards.transform("mean"), rewards.transform("std", ddof=0)
    varied = std > 1e-9  # rewards summed from floats: "equal" may differ in the last bit
    effective = (size >= config.grpo_min_group_size) & varied
    stats = pd.DataFrame({"group": group, "size": size, "varied": varied, "effective": effective})
    stats = stats.drop_duplicates("group")
    total, n_effective = len(stats), int(stats["effective"].sum())
    counts = {"trajectories": len(pool), "trajectories_kept": int(effective.sum()),
              "groups_too_small": int((stats["size"] < config.grpo_min_group_size).sum()),
              "groups_zero_variance": int(((stats["size"] >= config.grpo_min_group_size) & ~stats["varied"]).sum()),
              **_excluded(current)}
    advantage = (pool["reward"] - mean) / (std + GRPO_EPS)
    rows = _steps_of(steps, pool[effective].assign(advantage=advantage), ["advantage"])
    rows = _reinforced(rows, rows["advantage"] > 0, config, counts)
    accepted = _accepted(rows, iteration, "grpo", "group advantage", weight=0.0, advantage=rows["advantage"])
    if config.grpo_demonstration_weight > 0 and n_effective:
        shown = _demonstrations(episodes, steps, iteration, config, counts)
        counts["steps_demonstration"] = len(shown)
        accepted = pd.concat([accepted, shown], ignore_index=True)
    return Acceptance(accepted, {**counts, "steps_kept": len(accepted)}, groups_total=total,
                      groups_effective=n_effective, groups_missing=max(0, config.grpo_target_groups - n_effective))


def _demonstrations(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int, config: AcceptConfig,
                    counts: dict[str, int]) -> pd.DataFrame:
    """grpo's supervised rows: every step of a successful oracle demonstration of a train-split task up to
    `iteration`, weight grpo_demonstration_weight, advantage 0 (repeated steps dropped)."""
    history = episodes[episodes["iteration"] <= iteration]
    shown = history[history["usable"] & history["success"].astype(bool) & (history["policy"] == "oracle")
                    & (history["split"] == "train")]
    rows = _steps_of(steps, shown, [])
    rows = _reinforced(rows, pd.Series(True, index=rows.index), config, counts)
    return _accepted(rows, iteration, "grpo", "oracle demonstration", weight=config.grpo_demonstration_weight,
                     advantage=0.0)


def sft_steps(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int, config: AcceptConfig) -> Acceptance:
    """One row per step of the shortest successful trajectory of each task up to `iteration` (ties:
    the smaller total response length, then the trajectory id), at most sft_max_per_website tasks per
    website (in task id order: ids are hashes, so an arbitrary but reproducible pick). Oracle
    trajectories count only on tasks of the train split (never a test or unsplit site)."""
    history = episodes[episodes["iteration"] <= iteration]
    pool = history[history["usable"] & history["success"].astype(bool)]
    oracle = pool["policy"] == "oracle"
    allowed = ~oracle | ((pool["split"] == "train") if config.sft_oracle else False)
    counts = {"trajectories": len(pool), "trajectories_oracle_refused": int((~allowed).sum()), **_excluded(history)}
    pool = pool[allowed]
    chars = steps[steps["trajectory_id"].isin(pool["trajectory_id"])]
    chars = chars.assign(n=chars["response"].fillna("").str.len()).groupby("trajectory_id")["n"].sum()
    pool = pool.assign(response_chars=pool["trajectory_id"].map(chars).fillna(0))
    best = pool.sort_values(["task_id", "n_steps", "response_chars", "trajectory_id"]).drop_duplicates("task_id")
    if config.sft_max_per_website is not None:
        best = best.sort_values("task_id").groupby("website", dropna=False).head(config.sft_max_per_website)
    counts["trajectories_kept"] = len(best)
    rows = _steps_of(steps, best, ["policy"])
    rows = _reinforced(rows, pd.Series(True, index=rows.index), config, counts)
    reason = np.where(rows["policy"] == "oracle", "oracle demonstration", "shortest success")
    accepted = _accepted(rows, iteration, "sft", reason)
    return Acceptance(accepted, {**counts, "steps_kept": len(accepted)})


def dagger_steps(episodes: pd.DataFrame, steps: pd.DataFrame, iteration: int, config: AcceptConfig) -> Acceptance:
    """One row per step of the replay buffer (the last `replay_iterations` iterations up to `iteration`)
    that the oracle labelled in a usable episode of a learned policy, whatever the episode's outcome
    (the states a policy reaches by its own mistakes are the ones demonstrations never show), and per
    step of a successful oracle demonstration in the same window (the warm start's only while
    `replay_iterations` reaches back to it; repeated steps dropped), weight 1. steps_unlabelled counts
    the window's steps of learned policies that carry no label (no expert ran, no plan, no element); with
    `samples_per_iteration`, a recency-biased draw of that many. reason: oracle label or oracle
    demonstration, with the age when older than `iteration`."""
    window = episodes[episodes["iteration"].between(iteration - config.replay_iterations + 1, iteration)]
    usable = window[window["usable"]]
    usable = usable.assign(age=iteration - usable["iteration"])
    oracle = usable["policy"] == "oracle"
    demonstrations, rolled = usable[oracle & usable["success"].astype(bool)], usable[~oracle]
    counts = {"trajectories": len(usable), **_excluded(window)}
    shown = _steps_of(steps, demonstrations, ["age"])
    shown = _reinforced(shown, pd.Series(True, index=shown.index), config, counts)
    reached = _steps_of(steps, rolled, ["age"])
    labelled = reached["expert_actions"].notna()
    counts["steps_unlabelled"] = int((~labelled).sum())
    counts["trajectories_kept"] = shown["trajectory_id"].nunique() + reached.loc[labelled, "trajectory_id"].nunique()
    rows = pd.concat([shown.assign(lesson="oracle demonstration"),
                      reached[labelled].assign(lesson="oracle label")], ignore_index=True)
    if config.samples_per_iteration is not None:
        rows = replay_sample(rows, config.samples_per_iteration, config.recency_power, [config.seed, iteration])
    reason = np.where(rows["age"] == 0, rows["lesson"], rows["lesson"] + ", age " + rows["age"].astype(str))
    accepted = _accepted(rows, iteration, "dagger", reason)
    return Acceptance(accepted, {**counts, "steps_kept": len(accepted)})


ObjectiveFn = Callable[[pd.DataFrame, pd.DataFrame, int, AcceptConfig], Acceptance]
OBJECTIVES: dict[Objective, ObjectiveFn] = {"filtered_bc": filtered_bc_steps, "reinforce": reinforce_steps,
                                      "grpo": grpo_steps, "sft": sft_steps, "dagger": dagger_steps}
"""accept.objective -> its selection rule."""


def accept(verdicts: pd.DataFrame, trajectories: pd.DataFrame, steps: pd.DataFrame, tasks: pd.DataFrame,
           iteration: int, config: AcceptConfig) -> Acceptance:
    """One row per (trajectory_id, t) kept for training at `iteration` under config.objective, with the
    reason it was kept and its weight or advantage.

    verdicts: the warehouse's `verdicts` view (one authoritative judgment per trajectory);
    steps: at least STEP_COLUMNS; tasks: at least task_id, split, website, source, family.
    """
    steps = steps[STEP_COLUMNS]
    episodes, problems = judged_episodes(verdicts, trajectories, tasks, steps)
    result = OBJECTIVES[config.objective](episodes, steps, iteration, config)
    return dataclasses.replace(result, problems=problems)
