"""The judge stage: every unjudged trajectory of an iteration, judged concurrently, journaled as it goes.

Per trajectory: the rule gates first (no LLM; a gated trajectory gets nothing else), then the judges
in verdict order, each where it fits: exact (synthetic tasks with checks, MiniWoB++ tasks), reference (an
authoritative source answer), rubric (a rubric), webjudge and task_only. Unless told otherwise, no
LLM call is spent once a rule-based judge (exact, reference) has reached a verdict. A failed
verdict on a real website is checked for blocking (the flag is evidence for stages/blocklist.py).
Judge errors become `error` rows, never successes.

Resumable and append-only: each trajectory's rows are journaled when it is done; a rerun skips
(trajectory, judge) pairs that have a row, and `rejudge` adds new rows beside the old ones (the LLM
cache answers what was asked before, so a rejudge with unchanged prompts sends no request).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pandas as pd

from schemas.judgments import Judgment
from schemas.values import JUDGE_PRIORITY
from stages.judge.answers import reference_judgment
from stages.judge.blocking import blocked
from stages.judge.calls import JudgeCalls, JudgeError
from stages.judge.episode import Episode, episodes, judgment
from stages.judge.exact import exact_judgment
from stages.judge.gates import gate_judgments
from stages.judge.rubric import PURPOSES as RUBRIC_PURPOSES
from stages.judge.rubric import rubric_judgment
from stages.judge.task_only import PURPOSES as TASK_ONLY_PURPOSES
from stages.judge.task_only import task_only_judgment
from stages.judge.webjudge import PURPOSES as WEBJUDGE_PURPOSES
from stages.judge.webjudge import webjudge_judgment
from webgym.config import Config, ConfigError, JudgeConfig
from webgym.llm.client import LLM

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 10.0
"""Seconds between two progress lines of a judge run (and one at the end)."""

STEP_COLUMNS = ["trajectory_id", "t", "screenshot_sha256", "url", "actions"]
RULE_JUDGES = ("exact", "reference")
"""Judges that decide without an LLM; once one has a verdict, LLM judges are not asked (unless forced)."""


@dataclass(frozen=True)
class Judge:
    """A judge in the registry: what it needs, where it fits, how it runs."""

    name: str
    purposes: tuple[str, ...]
    """LLM purposes it calls; empty for judges that decide by rule."""
    fits: Callable[[Episode], bool]
    run: Callable[[Episode, JudgeCalls | None, JudgeConfig], Awaitable[Judgment | None]]


async def _exact(episode: Episode, calls: JudgeCalls | None, config: JudgeConfig) -> Judgment:
    return exact_judgment(episode)


JUDGES: dict[str, Judge] = {judge.name: judge for judge in (
    Judge("exact", (), lambda e: e.has_checks or e.on_miniwob, _exact),
    Judge("reference", (), lambda e: bool(e.reference_answer or e.evaluation),
          lambda e, calls, config: reference_judgment(e, calls if config.reference_equivalence else None)),
    Judge("rubric", RUBRIC_PURPOSES, lambda e: bool(e.rubric and e.rubric.n_facts),
          lambda e, calls, config: rubric_judgment(e, calls, config.image_budget)),
    Judge("webjudge", WEBJUDGE_PURPOSES, lambda e: True,
          lambda e, calls, config: webjudge_judgment(e, calls, config.webjudge_threshold, config.webjudge_max_images)),
    Judge("task_only", TASK_ONLY_PURPOSES, lambda e: True,
          lambda e, calls, config: task_only_judgment(e, calls, config.image_budget)),
)}


@dataclass(frozen=True)
class JudgePlan:
    """Which judges run (in verdict order), which were skipped and why, and what the LLM must serve."""

    judges: list[Judge]
    skipped: dict[str, str]
    purposes: list[str]
    blocking: bool


def plan_judges(config: Config, names: list[str] | None = None) -> JudgePlan:
    """The judges to run: `names` when given (each must be usable: ConfigError says what to set),
    else the profile's judge.judges, leaving out LLM judges that have no endpoint."""
    wanted = names or list(config.judge.judges)
    unknown = [n for n in wanted if n not in JUDGES]
    if unknown:
        raise ConfigError(f"unknown judge(s) {unknown}; judges are {list(JUDGES)}")

    judges, skipped = [], {}
    for name in (n for n in JUDGE_PRIORITY if n in wanted):
        missing = [p for p in JUDGES[name].purposes if not config.llm.served(p)]
        if name == "reference" and config.judge.reference_equivalence and not config.llm.served("judge-equivalence"):
            missing.append("judge-equivalence")
        if missing and names:
            raise ConfigError(f"judge {name!r} needs an LLM endpoint for {missing}: set llm.default or "
                              f"llm.endpoints.<purpose> in the profile")
        if missing:
            skipped[name] = f"no LLM endpoint for {', '.join(missing)}"
        else:
            judges.append(JUDGES[name])
    blocking = config.judge.blocking and config.llm.served("blocking")
    purposes = [p for j in judges for p in j.purposes] + (["blocking"] if blocking else [])
    if config.judge.reference_equivalence and any(j.name == "reference" for j in judges):
        purposes.append("judge-equivalence")
    return JudgePlan(judges, skipped, list(dict.fromkeys(purposes)), blocking)


@dataclass
class JudgeSummary:
    """What a judge run did, for the CLI and the flow's log."""

    iteration: int
    trajectories: int
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(judge, success | failure | error | not_evaluable | gated) -> rows written."""
    blocked: int = 0
    listed: list[str] = field(default_factory=list)
    """Websites the blocklist listed after this run (stages/blocklist.py, set by the flow)."""
    skipped: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    llm: str = "no LLM calls"

    def by_judge(self) -> dict[str, str]:
        """Rows written per judge as text: {'exact': '3 success, 1 failure', 'gate': '1 gated'}."""
        counts: dict[str, list[str]] = {}
        for (judge, outcome), count in sorted(self.outcomes.items()):
            counts.setdefault(judge, []).append(f"{count} {outcome}")
        return {judge: ", ".join(parts) for judge, parts in counts.items()}

    def add(self, rows: list[Judgment]) -> None:
        for row in rows:
            outcome = "success" if row.success else "failure" if row.status == "judged" else row.status
            self.outcomes[(row.judge, outcome)] += 1
            self.blocked += row.blocked


async def _check_blocking(row: Judgment, episode: Episode, calls: JudgeCalls, config: JudgeConfig) -> Judgment:
    try:
        found = await blocked(episode, calls, config.blocking_screenshots)
    except JudgeError as error:
        return row.model_copy(update={"rationale": f"{row.rationale}; blocking check failed: {error}"})
    if not found.blocked:
        return row
    return row.model_copy(update={"blocked": True, "rationale": f"{row.rationale}; blocked: {found.reasoning}"})


async def judge_episode(episode: Episode, plan: JudgePlan, llm: LLM | None, config: JudgeConfig,
                        done: dict[str, str], *, force_llm: bool = False, rejudge: bool = False) -> list[Judgment]:
    """New judgments of one (ungated) episode; `done` maps the judges that already judged it to their status."""
    rows: list[Judgment] = []
    decided = any(done.get(name) == "judged" for name in RULE_JUDGES)
    for judge in plan.judges:
        if (judge.name in done and not rejudge) or not judge.fits(episode):
            continue
        calls = JudgeCalls(llm, config.max_tokens) if llm and (force_llm or not decided) else None
        if judge.purposes and calls is None:
            continue
        try:
            row = await judge.run(episode, calls, config)
        except JudgeError as error:
            row = judgment(episode, judge.name, status="error", success=False, rationale=str(error))
        if row is None:
            continue
        if plan.blocking and calls and row.status == "judged" and not row.success and not episode.has_checks:
            row = await _check_blocking(row, episode, calls, config)
        rows.append(calls.stamp(row) if calls else row)
        decided = decided or (judge.name in RULE_JUDGES and row.status == "judged")
    return rows


def _frame(rows: list[Judgment]) -> pd.DataFrame:
    return pd.DataFrame([r.model_dump() for r in rows], columns=list(Judgment.model_fields))


def judge_episodes(iteration: int, trajectories: pd.DataFrame, tasks: pd.DataFrame, steps: pd.DataFrame,
                   judgments: pd.DataFrame, plan: JudgePlan, llm: LLM | None,
                   config: JudgeConfig, emit: Callable[[dict[str, pd.DataFrame]], None], *, force_llm: bool = False,
                   rejudge: bool = False) -> JudgeSummary:
    """Judge the episodes of `iteration`: `trajectories`, with their task rows, their steps rows
    (STEP_COLUMNS) and the judgments they already have. Rule gates first, then the plan's judges.

    Each trajectory's new judgments rows go to `emit` as frames by table the moment it is judged,
    so a driver can journal them one by one; a
    (trajectory, judge) pair that has a row is skipped unless `rejudge`. `force_llm` asks the LLM
    judges even where a rule already decided (also when judge.llm_when_decided is set)."""
    summary = JudgeSummary(iteration, len(trajectories), skipped=plan.skipped)
    done: dict[str, dict[str, str]] = {}
    for row in judgments[["trajectory_id", "judge", "status"]].itertuples(index=False):
        done.setdefault(row.trajectory_id, {})[row.judge] = row.status
    found, summary.problems = episodes(trajectories, tasks, steps)
    for problem in summary.problems:
        log.warning("not judged: %s", problem)

    def write(rows: list[Judgment]) -> None:
        if rows:
            emit({"judgments": _frame(rows)})
            summary.add(rows)

    gated = set()
    for row in gate_judgments(trajectories, config.format_error_reward).to_dict("records"):
        gated.add(row["trajectory_id"])
        if rejudge or "gate" not in done.get(row["trajectory_id"], {}):
            write([Judgment.model_validate(row)])
    asyncio.run(_judge_all([e for e in found if e.trajectory_id not in gated], plan, llm, config, done,
                           force_llm or config.llm_when_decided, rejudge, write))
    return summary


async def _judge_all(found: list[Episode], plan: JudgePlan, llm: LLM | None, config: JudgeConfig,
                     done: dict[str, dict[str, str]], force_llm: bool, rejudge: bool,
                     write: Callable[[list[Judgment]], None]) -> None:
    slots = asyncio.Semaphore(config.concurrency)
    finished, last = 0, time.monotonic()

    async def one(episode: Episode) -> None:
        nonlocal finished, last
        async with slots:
            rows = await judge_episode(episode, plan, llm, config, done.get(episode.trajectory_id, {}),
                                       force_llm=force_llm, rejudge=rejudge)
        write(rows)
        finished += 1
        if finished == len(found) or time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            log.info("judging: %d/%d trajectories past the gates judged", finished, len(found))

    async with asyncio.TaskGroup() as group:
        for episode in found:
            group.create_task(one(episode))
