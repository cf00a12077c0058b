"""Prefect flows: thin wiring of stages. Prefect's environment is set before Prefect is imported, and the lake
stamps every row a flow run appends with that run's id (webgym/lake/lineage.py)."""

from webgym.lake.lineage import set_flow_run_source
from webgym.prefect_env import configure_prefect

configure_prefect()


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run  # inside a flow or task run: its flow run; elsewhere None

    return flow_run.id


set_flow_run_source(_flow_run_id)
