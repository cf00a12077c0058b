"""Tasks every flow shares: open the lake, run the quality suites, rebuild the warehouse; the retry
condition of LLM tasks; the error of a stage started before the one that writes its input."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from webgym import quality, warehouse
from webgym.config import ConfigError, JudgeConfig
from webgym.lake import Lake


class MissingInputError(ConfigError):
    """The lake lacks the rows a stage reads; the message names the command that writes them. A
    ConfigError: retrying cannot fix it, and the CLI prints it in one line and exits 2."""


def retry_unless_misconfigured(task, task_run, state) -> bool:  # noqa: ANN001 (Prefect's hook signature)
    """Prefect retry condition of LLM tasks: retry failures, except a profile error (retrying cannot fix it)."""
    return not isinstance(state.result(raise_on_failure=False), ConfigError)


@task
def recover_lake(data_root: str) -> int:
    """Finish interrupted compactions and commit journals of dead writers."""
    return Lake(data_root).recover()


@task
def quality_gate(data_root: str, tables: list[str] | None = None) -> None:
    """Fail the flow when any table (all by default) breaks its data-quality suite."""
    quality.assert_quality(Lake(data_root), tables)


@task
def build_warehouse(data_root: str, path: str, judge: JudgeConfig) -> str:
    """Rewrite warehouse.duckdb so external SQL tools see the lake (verdicts by the profile's judge block)."""
    return str(warehouse.build(Lake(data_root), Path(path), judge))
