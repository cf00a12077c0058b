"""Split: WebGym's out-of-distribution test set, drawn from distinct websites, with zero leakage.

Test websites are drawn at random (seeded) among the websites of original tasks; each gives
`tasks_per_test_website` original tasks to the test set, or all of them for sources listed in
`whole_site_sources` (the synthetic sites). For those sources the test websites are named instead
(`held_out_sites`): every site of the `held_out_families` (held out whole: unseen structure), the
last `held_out_instances` generated sites of every other family and the `held_out_websites` (unseen
data on a structure training knows); the draw covers the other websites. Every test task records how
it is held out (`held_out`: family or site) and every task on a synthetic site its site family. Every
other task on a test website is removed, tasks without a website stay in training, and decomposed
tasks follow their parent (those of a removed parent are removed). The validation split (training
families, never trained on) is every task of the last `validation_instances` generated sites of each
training family before its held-out ones, plus a seeded `validation_fraction` of the other lineages.
Tasks of an external world (`EXTERNAL_SOURCES`: MiniWoB++) are test tasks held out as `external`, except
those the profile names to train on (taskset.miniwob.train_tasks, of other task families); the draw above
never sees them. Their family is the world's task family (`miniwob/click-tab` for click-tab-2-hard), and
the external world is split by family, not by website: its pages share one host. `leaks` proves no website
(outside the external worlds), no family held out whole or as external is on both sides of the test line
and no task lineage on two splits.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from schemas.values import EXTERNAL_SOURCES, WhichRevision
from stages.revisions import chosen_revisions
from webgym.config import SplitConfig
from webgym.sites import miniwob

HELD_OUT_KINDS = ("family", "site", "external")
"""How a test task is held out: with its whole site family, as one website (of a training family, or a
real website), or with a whole external world."""


class LeakageError(AssertionError):
    """The split put a website, a task lineage or a family held out whole on both sides; the message lists them."""


def _lineage(tasks: pd.DataFrame) -> pd.Series:
    """Each task's lineage: its parent's id for a decomposed task, else its own id."""
    return tasks["parent_task_id"].fillna(tasks["task_id"])


def leaks(tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per website, task lineage or site family held out whole found in both splits (empty when
    the split is clean)."""
    split = tasks[tasks["split"].notna()].assign(lineage=lambda f: _lineage(f),
                                                  side=lambda f: f["split"] == "test")
    own_world = split[~split["source"].isin(EXTERNAL_SOURCES)] if "source" in split else split
    rows = []
    for column, sides_of, rows_of in (("website", "side", own_world), ("lineage", "split", split)):
        sides = rows_of.dropna(subset=[column]).groupby(column)[sides_of].nunique()
        rows += [{"kind": column, "value": value} for value in sides[sides > 1].index]
    if "held_out" in split:
        whole = set(split.loc[split["held_out"].isin(["family", "external"]), "family"].dropna())
        trained = set(split.loc[~split["side"], "family"].dropna())
        rows += [{"kind": "family", "value": value} for value in sorted(whole & trained)]
    return pd.DataFrame(rows, columns=["kind", "value"])


def _generated_sites(sites: pd.DataFrame, config: SplitConfig) -> pd.DataFrame:
    """The generated sites of the families not held out whole, with `from_last`: 0 for each family's last
    seed, 1 for the one before, and so on (held-out sites come last, validation sites just before)."""
    generated = sites[~sites["family"].isin(config.held_out_families) & sites["seed"].notna()]
    return generated.assign(from_last=generated.sort_values("seed").groupby("family").cumcount(ascending=False))


def held_out_sites(sites: pd.DataFrame, config: SplitConfig) -> dict[str, str]:
    """website -> how it is held out: `family` for every site of held_out_families, `site` for the last
    held_out_instances generated sites of every other family and for the named held_out_websites.
    `sites` has website, family and seed (null for a hand-written site), as World.table() gives them."""
    unknown = sorted(set(config.held_out_families) - set(sites["family"]))
    if unknown:
        raise ValueError(f"taskset.split.held_out_families: unknown site famil{'y' if len(unknown) == 1 else 'ies'} "
                         f"{', '.join(unknown)} (families: {', '.join(sorted(set(sites['family'])))})")
    kinds = dict.fromkeys(sites.loc[sites["family"].isin(config.held_out_families), "website"], "family")
    generated = _generated_sites(sites, config)
    kinds.update(dict.fromkeys(generated.loc[generated["from_last"] < config.held_out_instances, "website"], "site"))
    for website in config.held_out_websites or []:
        kinds.setdefault(website, "site")
    return kinds


def validation_sites(sites: pd.DataFrame, config: SplitConfig) -> set[str]:
    """The validation websites: of every family not held out whole, the last `validation_instances` generated
    sites before its held-out ones (unseen data on a known structure, as the held-out sites are)."""
    generated = _generated_sites(sites, config)
    before_held_out = generated["from_last"] - config.held_out_instances
    return set(generated.loc[before_held_out.between(0, config.validation_instances - 1), "website"])


def _training_splits(lineage: pd.Series, in_test: np.ndarray, on_validation_site: np.ndarray,
                     validation_fraction: float, rng: np.random.Generator) -> np.ndarray:
    """test for test tasks; validation for the lineages with a task on a validation site and, of the other
    lineages, a drawn `validation_fraction`; the rest train."""
    lineages = np.sort(lineage[~in_test & ~on_validation_site].unique())
    chosen = rng.choice(lineages, size=int(round(validation_fraction * len(lineages))), replace=False)
    validation = lineage.isin(set(chosen) | set(lineage[on_validation_site])).to_numpy()
    return np.where(in_test, "test", np.where(validation, "validation", "train"))


def split_tasks(tasks: pd.DataFrame, config: SplitConfig, sites: pd.DataFrame | None = None) -> pd.DataFrame:
    """The tasks that remain, with `split` set to test, validation or train, `held_out` to how a test task is held
    out and `family` to the site family of a synthetic site's task (`sites`: the world's sites, see
    held_out_sites; None: held_out_websites name the whole-site sources' test websites). Tasks removed
    because they share a test website (and their decomposed tasks) are left out. Raises LeakageError
    if the result leaks."""
    rng = np.random.default_rng(config.seed)
    originals = tasks[tasks["parent_task_id"].isna()]
    drawable, named = originals, {}
    if sites is not None or config.held_out_websites is not None:
        whole_site = originals["source"].isin(config.whole_site_sources)
        drawable = originals[~whole_site]
        chosen = held_out_sites(sites, config) if sites is not None else dict.fromkeys(config.held_out_websites, "site")
        present = set(originals.loc[whole_site, "website"].dropna())
        named = {website: kind for website, kind in chosen.items() if website in present}
    websites = np.sort(drawable["website"].dropna().unique())
    drawn = dict.fromkeys(rng.choice(websites, size=min(config.test_websites, len(websites)), replace=False), "site")
    held_out = {**drawn, **named}
    test_ids: set[str] = set()
    for website, group in originals[originals["website"].isin(held_out)].groupby("website", sort=True):
        whole = group[group["source"].isin(config.whole_site_sources)]
        if len(whole):
            test_ids.update(whole["task_id"])
        else:
            picked = rng.choice(group["task_id"].to_numpy(), size=min(config.tasks_per_test_website, len(group)),
                                replace=False)
            test_ids.update(picked)
    lineage = _lineage(tasks)
    on_test_site = tasks["website"].isin(held_out).to_numpy()
    in_test = lineage.isin(test_ids).to_numpy()
    parent_kept = ~lineage.isin(set(tasks.loc[on_test_site & ~in_test, "task_id"])).to_numpy()
    keep = in_test | (~on_test_site & parent_kept)
    kept = tasks[keep]
    family_of = {} if sites is None else dict(zip(sites["website"], sites["family"], strict=True))
    validating = validation_sites(sites, config) if sites is not None else set()
    on_validation_site = kept["website"].isin(validating).to_numpy()
    result = kept.assign(
        split=_training_splits(_lineage(kept), in_test[keep], on_validation_site, config.validation_fraction, rng),
        held_out=[held_out[w] if test else None for w, test in zip(kept["website"], in_test[keep], strict=True)],
        family=kept["website"].map(family_of).astype(object).where(kept["website"].isin(family_of), None),
    ).reset_index(drop=True)
    found = leaks(result)
    if len(found):
        raise LeakageError(f"split leaks {len(found)} website(s)/lineage(s)/famil(ies): "
                           f"{found.head(10).to_dict('records')}")
    return result


def needs_site_table(tasks: pd.DataFrame, config: SplitConfig) -> bool:
    """Whether a task is of a source split by whole sites (`whole_site_sources`: the synthetic sites), whose
    split then needs the world's site table (families and generated instances)."""
    return bool(tasks["source"].isin(config.whole_site_sources).any())


def _external_splits(tasks: pd.DataFrame, train_ids: Collection[str]) -> pd.DataFrame:
    """The external world's tasks with their split (train for `train_ids`, else test held out as `external`)
    and their task family."""
    trained = tasks["task_id"].isin(set(train_ids))
    names = tasks["source_id"].map(lambda source_id: miniwob.seed_of(source_id)[0])
    return tasks.assign(split=np.where(trained, "train", "test"), held_out=np.where(trained, None, "external"),
                        family="miniwob/" + names.map(miniwob.family_of))


def assigned_splits(tasks: pd.DataFrame, config: SplitConfig, revisions: WhichRevision = "newest",
                    sites: pd.DataFrame | None = None, external_train: Collection[str] = ()) -> pd.DataFrame:
    """Every task of `tasks` with its split drawn afresh by `split_tasks` over the tasks of the chosen
    `revisions` (stages.revisions): test or train, or null for the tasks the split removes (on a test
    website but not drawn, decomposed from one of those, or of a revision the task set does not use).
    Removed tasks stay in the table so that a rebuild knows they were annotated. Tasks of EXTERNAL_SOURCES
    are test tasks held out as `external`, except the ids of `external_train` (stages.external.miniwob_train_ids),
    which are train tasks. Raises LeakageError if a family is on both sides."""
    external = tasks["source"].isin(EXTERNAL_SOURCES)
    own = tasks[~external]
    kept = split_tasks(chosen_revisions(own, revisions).assign(split=None, held_out=None), config, sites)
    removed = own[~own["task_id"].isin(kept["task_id"])].assign(split=None, held_out=None)
    result = pd.concat([kept, removed, _external_splits(tasks[external], external_train)], ignore_index=True)
    found = leaks(result)
    if len(found):
        raise LeakageError(f"the external world's split leaks {len(found)} famil(ies): {found.to_dict('records')}")
    return result


def same_splits(before: pd.DataFrame, after: pd.DataFrame) -> bool:
    """Whether `after` (a fresh `assigned_splits`) gives every task of `before` the split and held-out kind
    it had: a rebuild with nothing new then leaves the table as it is instead of rewriting it."""
    def assignment(tasks: pd.DataFrame) -> dict[str, tuple]:
        return dict(zip(tasks["task_id"], zip(tasks["split"].fillna(""), tasks["held_out"].fillna(""), strict=True),
                        strict=True))
    return len(before) == len(after) and assignment(before) == assignment(after)


def split_counts(tasks: pd.DataFrame) -> tuple[dict[str, int], int]:
    """Tasks per split (train, test, and `removed` for tasks on a test website not drawn), test tasks by
    how they are held out (`test held out by family` or `... by site`), and the number of distinct test
    websites, as a build reports them."""
    counts = {str(k): int(v) for k, v in tasks["split"].fillna("removed").value_counts().items()}
    counts.update({f"test held out by {k}": int(v) for k, v in tasks["held_out"].value_counts().items()})
    return counts, int(tasks.loc[tasks["split"] == "test", "website"].nunique())
