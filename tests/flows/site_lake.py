"""A lake holding tasks of shipped synthetic sites, for the flow tests."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from schemas.tasks import Task
from tests.conftest import NOW, rows
from webgym.lake import Lake
from webgym.sites.site import load_sites
from webgym.sites.tasks import task_record


def lake_with_site_tasks(tmp_path: Path, sites: list[str], goals: int, test_sites: Collection[str] = (),
                         validation_sites: Collection[str] = ()) -> Lake:
    """The first `goals` goals of each site as tasks in `tmp_path/data`: test split for `test_sites`,
    validation for `validation_sites`, train for the others."""
    lake = Lake(tmp_path / "data")
    tasks = []
    for site in load_sites(names=sites).values():
        for goal in site.spec.goals[:goals]:
            r = task_record(site, goal)
            tasks.append(Task(task_id=r["source_id"], source="synthetic", source_id=r["source_id"], text=r["text"],
                              website=r["hostname"], start_url=r["start_url"], difficulty=r["difficulty"],
                              domain=site.spec.domain, split="test" if site.name in test_sites
                              else "validation" if site.name in validation_sites else "train",
                              rubric=r["rubric"], created_at=NOW))
    lake.write_table("tasks", rows(tasks))
    return lake
