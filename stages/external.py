"""External worlds: test tasks on pages this project did not write (MiniWoB++), held out as `external`.

The profile lists the tasks (taskset.miniwob); this stage adds the ones the tasks table lacks, each
(task, seed) a task whose text is the utterance the seeded page shows. The split stage makes every one
a test task (stages/split.py EXTERNAL_SOURCES), so evaluations measure them and no rollout trains on them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pandas as pd

from webgym.config import ConfigError, MiniwobConfig
from webgym.sites import miniwob

ReadUtterances = Callable[[list[tuple[str, int]]], dict[tuple[str, int], str]]
"""(task, seed) pairs -> the utterance each seeded page shows (read in a browser)."""


def missing_miniwob_pairs(config: MiniwobConfig, task_ids: set[str]) -> list[tuple[str, int]]:
    """The (task, seed) pairs the profile lists whose task is not in `task_ids`; ConfigError naming the tasks
    that are not MiniWoB++ tasks the project can do, or the missing extra."""
    if not config.tasks:
        return []
    try:
        unknown = miniwob.unknown_tasks(config.tasks)
    except LookupError as error:
        raise ConfigError(f"taskset.miniwob.tasks lists {len(config.tasks)} task(s), but {error}") from None
    if unknown:
        raise ConfigError(f"taskset.miniwob.tasks: not MiniWoB++ tasks the agent can do: {unknown} "
                          "(misspelt, or excluded in webgym.sites.miniwob.EXCLUDED)")
    seeds = range(config.first_seed, config.first_seed + config.seeds)
    pairs = [(task, seed) for task in dict.fromkeys(config.tasks) for seed in seeds]
    return [(task, seed) for task, seed in pairs if miniwob.task_id(task, seed) not in task_ids]


def miniwob_tasks(config: MiniwobConfig, tasks: pd.DataFrame, read: ReadUtterances) -> pd.DataFrame:
    """Rows of the tasks table for the listed MiniWoB++ tasks not in `tasks` yet (empty when none is missing)."""
    pairs = missing_miniwob_pairs(config, set(tasks["task_id"]) if len(tasks) else set())
    if not pairs:
        return pd.DataFrame()
    now = dt.datetime.now(dt.UTC)
    said = read(pairs)
    return pd.DataFrame([miniwob.task_row(task, seed, said[(task, seed)], now) for task, seed in pairs])
