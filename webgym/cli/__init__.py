"""The `webgym` command: one module per command group (below), what they share in `common`. Every
subcommand has --help; global options come before the subcommand.

The command line is the top of the import graph: it may call flows, their stage drivers and the
runtime; nothing below imports it.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape

from webgym.cli.common import err_console
from webgym.cli.evaluate import evaluate_command
from webgym.cli.judge import judge_app
from webgym.cli.lake import init, lake_app, quality
from webgym.cli.llm import llm_app
from webgym.cli.models import models_app
from webgym.cli.nightly import nightly
from webgym.cli.rollout import bench_app, rollout_command
from webgym.cli.serve import serve_command, server_command
from webgym.cli.sites import sites_app
from webgym.cli.taskset import ingest, taskset_app
from webgym.cli.train import export_samples_command, train_command
from webgym.cli.warehouse import report, sql, warehouse_app
from webgym.config import ConfigError, is_url, load_config, project_path
from webgym.config.profile import DEFAULT_PROFILE
from webgym.logs import set_levels, terminal_handler
from webgym.prefect_env import configure_prefect

# The first GC generation's threshold (Python's default 700): a command that loads the world's site specs and
# Prefect's models allocates millions of long-lived objects, and at 700 `nightly --iterations 0` spent 2.4 s in
# ten full collections; at 20,000, 0.6 s in none.
GC_YOUNG_THRESHOLD = 20_000

app = typer.Typer(help="WebGym pipeline: task sets, rollouts, judging and training of web agents.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(lake_app, name="lake")
app.add_typer(warehouse_app, name="warehouse")
app.add_typer(llm_app, name="llm")
app.add_typer(taskset_app, name="taskset")
app.add_typer(models_app, name="models")
app.add_typer(judge_app, name="judge")
app.add_typer(sites_app, name="sites")
app.command()(ingest)
app.command("rollout")(rollout_command)
app.command("evaluate")(evaluate_command)
app.command("export-samples")(export_samples_command)
app.command("train")(train_command)
app.add_typer(bench_app, name="bench")
app.command("serve")(serve_command)
app.command("server")(server_command)
app.command()(sql)
app.command()(quality)
app.command()(init)
app.command()(report)
app.command()(nightly)


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option(
        help="Profile YAML, relative to the current directory (default: the project's configs/local.yaml).")] = None,
    data_dir: Annotated[str | None, typer.Option(
        help="Lake root: a path (relative to the current directory) or an fsspec URL (default: env WEBGYM_DATA, "
             "else the profile's lake.data_dir).")] = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Debug lines of the pipeline, Prefect's run lines and full tracebacks.")] = False,
) -> None:
    handler = terminal_handler(verbose)
    if not verbose:
        handler.addFilter(_without_setting_errors)
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    set_levels(verbose)
    configure_prefect()
    if data_dir is not None and not is_url(data_dir):
        data_dir = os.path.abspath(data_dir)  # relative to where the command runs, not the project
    config_path = os.path.abspath(config) if config else None
    state = ctx.ensure_object(dict)
    state["profile"] = str(config) if config else str(project_path(DEFAULT_PROFILE))
    try:
        state.update(config=load_config(config_path, data_dir), config_path=config_path)
    except ConfigError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None


def _setting_errors(kind: type[Exception] = ConfigError) -> set[str]:
    """Names of ConfigError and its subclasses (NoEndpointError, ...), as Prefect's state messages show them."""
    return {kind.__name__}.union(*(_setting_errors(sub) for sub in kind.__subclasses__()))


def _without_setting_errors(record: logging.LogRecord) -> bool:
    """Log filter: drop what Prefect logs when a task or flow fails on a setting error (its traceback,
    its 'Finished in state Failed(... NoEndpointError: ...)'); `run` prints the error itself in one
    line. `-v` keeps them."""
    if record.exc_info and isinstance(record.exc_info[1], ConfigError):
        return False
    message = record.getMessage()
    return not (message.startswith("Finished in state Failed")
                and any(f"exception {name}: " in message for name in _setting_errors()))


def run() -> None:
    """Entry point that turns configuration and schema errors into clear one-line messages (an error in a
    setting names the profile the command ran on), and exits without freeing every object."""
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    try:
        _run_app()
    except SystemExit as done:
        _exit_without_teardown(done.code)
    _exit_without_teardown(0)


def _run_app() -> None:
    from schemas import SchemaError

    state: dict[str, Any] = {}
    try:
        app(obj=state)
    except ConfigError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]" + (f" (profile in use: {escape(state['profile'])})"
                                                                if "profile" in state else ""))
        sys.exit(2)
    except SchemaError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        sys.exit(2)


def _exit_without_teardown(code: int | str | None) -> NoReturn:
    """Exit as the interpreter does (threading's exit hooks, where Prefect's log and event workers drain, and the
    join of non-daemon threads; then the atexit handlers, where Prefect stops its temporary server), minus tearing
    down the heap: after a flow has loaded the world's sites and Prefect's models, freeing them object by object
    took 2-3 s of the command's wall time."""
    if isinstance(code, str):
        err_console.print(code, markup=False, highlight=False)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
