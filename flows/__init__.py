"""Prefect flows: thin wiring of stages. Prefect's environment is set before Prefect is imported."""

from webgym.prefect_env import configure_prefect

configure_prefect()
