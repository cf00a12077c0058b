"""Stages: plain functions from tables to tables, with no Prefect inside. They meet at tables."""
