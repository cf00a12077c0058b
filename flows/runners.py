"""Prefect task runners by name: threads on one machine, Dask or Ray across machines."""

from __future__ import annotations

from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from webgym.config import ConfigError


def task_runner(kind: str, workers: int, address: str | None = None) -> Any:
    """threads: `workers` threads here; dask: a local cluster of `workers` processes, or the
    scheduler at `address`; ray: the Ray cluster at `address` (prefect-ray must be installed)."""
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "processes": True, "threads_per_worker": 1})
    if kind == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError:
            raise ConfigError("rollout.task_runner is ray but prefect-ray is not installed: pip install prefect-ray") from None
        return RayTaskRunner(address=address)
    raise ConfigError(f"rollout.task_runner must be threads, dask or ray, not {kind!r}")
