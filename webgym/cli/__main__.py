"""`python -m webgym.cli ...`: the `webgym` command (serve.command templates and tests start it so)."""

from webgym.cli import run

run()
