"""Split: WebGym's out-of-distribution test set, drawn from distinct websites, with zero leakage.

Test websites are drawn at random (seeded) among the websites of original tasks; each gives
`tasks_per_test_website` original tasks to the test set, or all of them for sources listed in
`whole_site_sources` (the synthetic sites). With `held_out_websites`, those sources' test websites
are named instead (e.g. one site of each synthetic graph) and the draw covers the other websites.
Every other task on a test website is removed, tasks without a website stay in training, and
decomposed tasks follow their parent (those of a removed parent are removed). `leaks` proves no website and no task family is in both splits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schemas.values import WhichRevision
from stages.revisions import chosen_revisions
from webgym.config import SplitConfig


class LeakageError(AssertionError):
    """The split put a website or a task family on both sides; the message lists them."""


def _family(tasks: pd.DataFrame) -> pd.Series:
    """Each task's family: its parent's id for a decomposed task, else its own id."""
    return tasks["parent_task_id"].fillna(tasks["task_id"])


def leaks(tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per website or task family found in both splits (empty when the split is clean)."""
    split = tasks[tasks["split"].notna()].assign(family=lambda f: _family(f))
    rows = []
    for column in ("website", "family"):
        sides = split.dropna(subset=[column]).groupby(column)["split"].nunique()
        rows += [{"kind": column, "value": value} for value in sides[sides > 1].index]
    return pd.DataFrame(rows, columns=["kind", "value"])


def split_tasks(tasks: pd.DataFrame, config: SplitConfig) -> pd.DataFrame:
    """The tasks that remain, with `split` set to test or train; tasks removed because they share a
    test website (and their decomposed tasks) are left out. Raises LeakageError if the result leaks."""
    rng = np.random.default_rng(config.seed)
    originals = tasks[tasks["parent_task_id"].isna()]
    drawable, held_out = originals, set()
    if config.held_out_websites is not None:
        whole_site = originals["source"].isin(config.whole_site_sources)
        drawable = originals[~whole_site]
        held_out = set(config.held_out_websites) & set(originals.loc[whole_site, "website"].dropna())
    websites = np.sort(drawable["website"].dropna().unique())
    held_out |= set(rng.choice(websites, size=min(config.test_websites, len(websites)), replace=False))
    test_ids: set[str] = set()
    for website, group in originals[originals["website"].isin(held_out)].groupby("website", sort=True):
        whole = group[group["source"].isin(config.whole_site_sources)]
        if len(whole):
            test_ids.update(whole["task_id"])
        else:
            picked = rng.choice(group["task_id"].to_numpy(), size=min(config.tasks_per_test_website, len(group)),
                                replace=False)
            test_ids.update(picked)
    family = _family(tasks)
    on_test_site = tasks["website"].isin(held_out).to_numpy()
    in_test = family.isin(test_ids).to_numpy()
    parent_kept = ~family.isin(set(tasks.loc[on_test_site & ~in_test, "task_id"])).to_numpy()
    keep = in_test | (~on_test_site & parent_kept)
    result = tasks[keep].assign(split=np.where(in_test[keep], "test", "train")).reset_index(drop=True)
    found = leaks(result)
    if len(found):
        raise LeakageError(f"split leaks {len(found)} website(s)/family(ies): {found.head(10).to_dict('records')}")
    return result


def assigned_splits(tasks: pd.DataFrame, config: SplitConfig, revisions: WhichRevision = "newest") -> pd.DataFrame:
    """Every task of `tasks` with its split drawn afresh by `split_tasks` over the tasks of the chosen
    `revisions` (stages.revisions): test or train, or null for the tasks the split removes (on a test
    website but not drawn, decomposed from one of those, or of a revision the task set does not use).
    Removed tasks stay in the table so that a rebuild knows they were annotated."""
    kept = split_tasks(chosen_revisions(tasks, revisions).assign(split=None), config)
    removed = tasks[~tasks["task_id"].isin(kept["task_id"])].assign(split=None)
    return pd.concat([kept, removed], ignore_index=True)


def split_counts(tasks: pd.DataFrame) -> tuple[dict[str, int], int]:
    """Tasks per split (train, test, and `removed` for tasks on a test website not drawn) and the number
    of distinct test websites, as a build reports them."""
    counts = {str(k): int(v) for k, v in tasks["split"].fillna("removed").value_counts().items()}
    return counts, int(tasks.loc[tasks["split"] == "test", "website"].nunique())
