"""A table's part files: listing the ones that hold each row once, and the merges that keep them few.

Every write keeps the parts few (`merge`): once MERGE_FANOUT parts of one size tier exist they become
one part of the next tier, so a table of N bytes has at most about MERGE_FANOUT * log_MERGE_FANOUT(N)
parts and each row is rewritten about log_MERGE_FANOUT(N) times. Thousands of tiny parts would make
every DuckDB view bind slowly (it reads each file's footer).

A rewrite (merge, compaction, replace) first puts its intent, `_compaction/<table>.json` (inputs and
output), so one killed half-way is finished later instead of leaving rows twice or not at all.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Callable
from typing import TypeVar

from schemas import schema_for
from webgym.lake.files import ROW_GROUP_ROWS, Storage, stamp, try_lock

log = logging.getLogger(__name__)

MERGE_FANOUT = 8
"""Parts of one size tier (size within a factor MERGE_FANOUT) that the writer merges into one."""
READ_ATTEMPTS = 5
"""Listings a reader tries when writers' merges keep removing parts it listed before it opened them."""
T = TypeVar("T")


def full_tier(sizes: dict[str, int]) -> list[str]:
    """Parts of the smallest size tier (bytes within a factor MERGE_FANOUT) that holds
    MERGE_FANOUT parts, oldest first; empty when no tier is full."""
    tiers: dict[int, list[str]] = {}
    for path, size in sizes.items():
        tiers.setdefault(int(math.log(max(size, 1), MERGE_FANOUT)), []).append(path)
    full = [sorted(paths) for _, paths in sorted(tiers.items()) if len(paths) >= MERGE_FANOUT]
    return full[0] if full else []


class Parts(Storage):
    """The part files of each table and the rewrites that replace some by one."""

    def parts(self, name: str) -> list[str]:
        """Committed part files of a table, oldest first."""
        pattern = self._path(name, "part-*.parquet")
        return sorted(self.fs.glob(pattern))

    def _consistent_parts(self, name: str) -> list[str]:
        """The parts that hold each committed row once: while a merge has put its output but not yet
        removed its inputs (or was killed there), the listing holds both, so its inputs are left out."""
        parts = self.parts(name)
        try:
            plan = json.loads(self.fs.cat_file(self._intent_path(name)))
        except FileNotFoundError:
            return parts
        names = {path.rsplit("/", 1)[-1] for path in parts}
        if plan["output"].rsplit("/", 1)[-1] not in names:
            return parts
        inputs = {path.rsplit("/", 1)[-1] for path in plan["inputs"]}
        return [path for path in parts if path.rsplit("/", 1)[-1] not in inputs]

    def _read_parts(self, name: str, read: Callable[[list[str]], T]) -> T:
        """`read` over the table's consistent parts. Readers take no lock, so a writer's merge may remove a
        listed part before it is opened: then the rows are in the merge's output, and a fresh listing
        finds them."""
        for _ in range(READ_ATTEMPTS - 1):
            try:
                return read(self._consistent_parts(name))
            except FileNotFoundError:
                log.debug("a part of %s went while it was read (a merge); reading a fresh listing", name)
        return read(self._consistent_parts(name))

    def _part_sizes(self, name: str) -> dict[str, int]:
        found = self.fs.glob(self._path(name, "part-*.parquet"), detail=True)
        return {path: int(info["size"]) for path, info in found.items()}

    def merge(self, name: str) -> int:
        """Merge parts of the same size tier while a tier holds MERGE_FANOUT of them (the writers'
        policy that keeps parts few); return parts removed. Skips when another writer is merging."""
        removed = 0
        with try_lock(self._lock_path(name)) as locked:
            if not locked:
                return 0
            self._finish_intent(name)
            while group := full_tier(self._part_sizes(name)):
                self._rewrite(name, group, "merged")
                removed += len(group) - 1
        return removed

    def _rewrite(self, name: str, inputs: list[str], label: str) -> str:
        """Replace parts `inputs` by one part with their rows (caller holds the table's lock)."""
        import pyarrow.dataset as ds

        schema = schema_for(name).arrow
        output = self._path(name, f"part-{stamp()}-{label}-{uuid.uuid4().hex[:6]}.parquet")
        intent = self._intent_path(name)
        self._put(intent, json.dumps({"output": output, "inputs": inputs}).encode())
        scan = ds.dataset(inputs, schema=schema, format="parquet", filesystem=self.fs).to_batches(
            batch_size=ROW_GROUP_ROWS, use_threads=False, batch_readahead=0, fragment_readahead=0)  # bounded memory
        self._put_batches(output, schema, scan)
        self._finish_compaction(intent)
        log.debug("merged %d parts of %s into %s", len(inputs), name, output)
        return output

    def _intent_path(self, name: str) -> str:
        return self._path("_compaction", f"{name}.json")

    def _finish_intent(self, name: str) -> None:
        """Finish what a killed merge, compaction or replace of `name` left (caller holds the lock)."""
        intent = self._intent_path(name)
        if self.fs.exists(intent):
            self._finish_compaction(intent)

    def _finish_compaction(self, intent: str) -> None:
        plan = json.loads(self.fs.cat_file(intent))
        if self.fs.exists(plan["output"]):
            for path in plan["inputs"]:
                if self.fs.exists(path):
                    self.fs.rm(path)
        self.fs.rm(intent)
