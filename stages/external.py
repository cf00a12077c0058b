"""External worlds: tasks on pages this project did not write (MiniWoB++), held out as `external` or trained on.

The profile lists the tasks (taskset.miniwob): held-out `tasks`, and `train_tasks` of other families; this
stage adds the ones the tasks table lacks, each (task, seed) a task whose text is the utterance the seeded page
shows. The split stage makes every one a test task held out as `external` except the train tasks
(stages/split.py), so evaluations measure pages of families no rollout trains on.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pandas as pd

from webgym.config import ConfigError, MiniwobConfig
from webgym.sites import miniwob

ReadUtterances = Callable[[list[tuple[str, int]]], dict[tuple[str, int], str]]
"""(task, seed) pairs -> the utterance each seeded page shows (read in a browser)."""


def _checked(config: MiniwobConfig) -> None:
    """ConfigError naming the listed tasks that are not MiniWoB++ tasks the project can do, the missing extra,
    or the train tasks of a held-out task's family."""
    listed = [*config.tasks, *config.train_tasks]
    try:
        unknown = miniwob.unknown_tasks(listed)
    except LookupError as error:
        raise ConfigError(f"taskset.miniwob lists {len(listed)} task(s), but {error}") from None
    if unknown:
        raise ConfigError(f"taskset.miniwob: not MiniWoB++ tasks the agent can do: {unknown} "
                          "(misspelt, or excluded in webgym.sites.miniwob.EXCLUDED)")
    held_out = {miniwob.family_of(task) for task in config.tasks}
    shared = [task for task in config.train_tasks if miniwob.family_of(task) in held_out]
    if shared:
        raise ConfigError(f"taskset.miniwob.train_tasks: {shared} share a family with the held-out tasks "
                          "(taskset.miniwob.tasks); the held-out kind must be families never trained on")


def miniwob_pairs(config: MiniwobConfig) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The held-out and the train (task, seed) pairs the profile lists, checked (`_checked`)."""
    if not config.tasks and not config.train_tasks:
        return [], []
    _checked(config)
    held_out = range(config.first_seed, config.first_seed + config.seeds)
    train = range(config.train_first_seed, config.train_first_seed + config.train_seeds)
    return ([(task, seed) for task in dict.fromkeys(config.tasks) for seed in held_out],
            [(task, seed) for task in dict.fromkeys(config.train_tasks) for seed in train])


def miniwob_train_ids(config: MiniwobConfig) -> set[str]:
    """The task ids of the MiniWoB++ train tasks the profile lists: the split makes these train tasks."""
    return {miniwob.task_id(task, seed) for task, seed in miniwob_pairs(config)[1]}


def missing_miniwob_pairs(config: MiniwobConfig, task_ids: set[str]) -> list[tuple[str, int]]:
    """The (task, seed) pairs the profile lists, held out and train, whose task is not in `task_ids`."""
    held_out, train = miniwob_pairs(config)
    return [(task, seed) for task, seed in [*held_out, *train] if miniwob.task_id(task, seed) not in task_ids]


def miniwob_tasks(config: MiniwobConfig, tasks: pd.DataFrame, read: ReadUtterances) -> pd.DataFrame:
    """Rows of the tasks table for the listed MiniWoB++ tasks not in `tasks` yet (empty when none is missing)."""
    pairs = missing_miniwob_pairs(config, set(tasks["task_id"]) if len(tasks) else set())
    if not pairs:
        return pd.DataFrame()
    now = dt.datetime.now(dt.UTC)
    said = read(pairs)
    return pd.DataFrame([miniwob.task_row(task, seed, said[(task, seed)], now) for task, seed in pairs])
