"""The nightly iteration.

Today it runs the parts that exist: recover the lake, run every quality suite, rebuild the
warehouse and report table sizes. The stages (sample -> rollout -> judge -> accept -> train ->
serve -> evaluate) join here as their issues land; the summary names the ones still missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefect import flow

from flows.gates import build_warehouse, quality_gate, recover_lake
from webgym.config import load_config
from webgym.lake import Lake

PENDING_STAGES = ("build_taskset", "rollout", "judge", "accept", "train", "serve", "evaluate")


@dataclass(frozen=True)
class NightlySummary:
    data_root: str
    warehouse: str
    rows: dict[str, int]
    recovered_rows: int
    pending_stages: tuple[str, ...]


@flow(name="nightly")
def nightly(config_path: str | None = None, data_dir: str | None = None) -> NightlySummary:
    """One nightly iteration on the profile at `config_path` (default configs/local.yaml)."""
    config = load_config(config_path, {"lake.data_dir": data_dir} if data_dir else None)
    root = config.data_root()
    recovered = recover_lake(root)
    quality_gate(root)
    path = build_warehouse(root, str(config.warehouse_path()), config.judge.priority)
    return NightlySummary(root, path, Lake(root).counts(), recovered, PENDING_STAGES)
