"""What every judge reads about one trajectory, and the judgments row every judge writes.

An `Episode` joins a trajectory with its task and its steps: the task text, rubric and reference,
the answer, the final URL and state, the screenshots in order and a one-line-per-step history of
what the agent did and what the environment answered.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from schemas.judgments import GroupVerdict, Judgment
from schemas.rubric import Rubric
from webgym.sites import miniwob


@dataclass(frozen=True)
class Screenshot:
    """A step's screenshot with where it was taken and what the agent did next."""

    t: int
    sha256: str
    url: str | None
    step: str
    """The step's history line."""


@dataclass(frozen=True)
class Episode:
    """One trajectory with its task, ready to be judged."""

    trajectory_id: str
    task_id: str
    task: str
    website: str | None
    rubric: Rubric | None
    reference_answer: str | None
    evaluation: str | None
    answer: str | None
    final_url: str | None
    final_state: str | None
    screenshots: tuple[Screenshot, ...]
    history: tuple[str, ...]
    """One line per step: its actions and their feedback."""

    @property
    def has_checks(self) -> bool:
        """Synthetic-site task: every fact has an exact check, so the exact verifier decides."""
        return bool(self.rubric and self.rubric.groups and all(g.checks for g in self.rubric.groups))

    @property
    def on_miniwob(self) -> bool:
        """MiniWoB++ task: its page's own reward, recorded as the final state, decides."""
        return self.website == miniwob.HOST

    def history_text(self) -> str:
        return "\n".join(self.history) or "(no steps recorded)"


def _step_line(t: int, actions: Any, url: str | None) -> str:
    done = []
    for action in actions if actions is not None else []:
        arguments = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in action.items()
                     if v is not None and k not in ("name", "ok", "feedback")}
        call = f"{action['name']}({json.dumps(arguments, ensure_ascii=False, default=str)[1:-1]})"
        done.append(f"{call} -> {action['feedback']}" if action.get("feedback") else call)
    return f"{t + 1}. on {url or 'an unknown page'}: {'; '.join(done) or 'no action (unparseable response)'}"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts with None for missing values (pandas reads null strings as NaN)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def episodes(trajectories: pd.DataFrame, tasks: pd.DataFrame, steps: pd.DataFrame) -> tuple[list[Episode], list[str]]:
    """The episodes of `trajectories`, and one problem line per trajectory that cannot be judged
    (its task is missing); the others go on."""
    by_task = {row["task_id"]: row for row in _records(tasks)}
    by_trajectory: dict[str, list[dict[str, Any]]] = {}
    for step in _records(steps.sort_values(["trajectory_id", "t"])):
        by_trajectory.setdefault(step["trajectory_id"], []).append(step)
    found, problems = [], []
    for row in _records(trajectories):
        task = by_task.get(row["task_id"])
        if task is None:
            problems.append(f"trajectory {row['trajectory_id']}: task {row['task_id']!r} is not in the tasks table")
            continue
        own = by_trajectory.get(row["trajectory_id"], [])
        lines = [_step_line(s["t"], s.get("actions"), s.get("url")) for s in own]
        found.append(Episode(
            trajectory_id=row["trajectory_id"], task_id=row["task_id"], task=task["text"],
            website=task.get("website") or (urlsplit(task["start_url"]).hostname if task.get("start_url") else None),
            rubric=Rubric.model_validate(task["rubric"]) if task.get("rubric") is not None else None,
            reference_answer=task.get("reference_answer"), evaluation=task.get("evaluation"),
            answer=row.get("answer"), final_url=own[-1]["url"] if own else None, final_state=row.get("final_state"),
            screenshots=tuple(Screenshot(s["t"], s["screenshot_sha256"], s["url"], line)
                              for s, line in zip(own, lines) if s.get("screenshot_sha256")),
            history=tuple(lines)))
    return found, problems


def judgment(episode: Episode, judge: str, *, status: str, success: bool, rationale: str,
             groups: list[GroupVerdict] | None = None) -> Judgment:
    """A judgments row; fail closed: only a `judged` verdict can be a success, worth reward 1."""
    success = success and status == "judged"
    return Judgment(judgment_id=uuid.uuid4().hex, trajectory_id=episode.trajectory_id, judge=judge, status=status,
                    success=success, reward=1.0 if success else 0.0, groups=groups, rationale=rationale,
                    judged_at=dt.datetime.now(dt.UTC))
