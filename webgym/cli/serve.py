"""`webgym serve --checkpoint PATH` (the OpenAI-compatible server around a local checkpoint) and
`webgym server` (the Prefect server and UI on 127.0.0.1, serving prefect.yaml's deployments locally, and the
lake's reports folder over HTTP beside them)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from webgym.cli.common import config_of, config_path_of, console, err_console, exit_on_sigterm
from webgym.config import ConfigError, served_name
from webgym.deployments import PREFECT_YAML, DeploymentSpec, load_specs, served_deployments
from webgym.ports import HOST, free_port, listening
from webgym.report_server import DEFAULT_PORT, ReportSite, report_server


def serve_command(
    checkpoint: Annotated[Path, typer.Option(help="Checkpoint directory in Hugging Face layout (a trainer output).")],
    host: Annotated[str, typer.Option(help="Address to listen on; keep loopback unless others must reach it.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one (printed).")] = 8000,
    served_model_name: Annotated[str | None, typer.Option(
        help="Model id clients send and /v1/models lists (default: the checkpoint directory's name).")] = None,
    device: Annotated[str, typer.Option(help="torch device: auto (cuda when present, else cpu), cpu, cuda:0.")]
    = "auto",
    dtype: Annotated[str, typer.Option(help="Weights' dtype: auto, float32, bfloat16, float16.")] = "auto",
) -> None:
    """Serve a checkpoint at /v1/chat/completions and /v1/models, one generation at a time, until stopped."""
    from webgym.checkpoints import CheckpointError
    from webgym.models.checkpoint import load_vlm
    from webgym.serve.app import bind, build_app, http_server

    name = served_model_name or served_name(str(checkpoint))
    try:
        vlm = load_vlm(checkpoint, device, dtype)
    except CheckpointError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    try:
        sock = bind(host, port)
    except OSError as error:
        err_console.print(f"[red]cannot listen on {host}:{port}: {escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    bound = sock.getsockname()[1]
    # Printed (and flushed) before serving: a caller that asked for port 0 reads the address from here.
    typer.echo(f"serving {name} ({vlm.source}) at http://{host}:{bound}/v1")
    http_server(build_app(vlm, name)).run(sockets=[sock])


class ServerStartError(RuntimeError):
    """`prefect server start` exited or stayed unhealthy; the message ends with its log."""


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _stop(process: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM the server's process group (prefect runs uvicorn in a child), SIGKILL what outlives grace_s."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def prefect_server(port: int, log: Path, startup_timeout_s: float = 120.0) -> Iterator[str]:
    """Run `prefect server start` on HOST:port until the block exits; yield its API URL once healthy."""
    import httpx

    if listening(port):  # else another server's health answer could pass for this one's
        raise ServerStartError(f"port {port} on {HOST} is in use: pass another --port (0: any free one)")
    api_url = f"http://{HOST}:{port}/api"
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_UI_API_URL": api_url,
           "PREFECT_SERVER_API_HOST": HOST, "PREFECT_SERVER_API_PORT": str(port)}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", HOST,
                                    "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if process.poll() is not None:
                raise ServerStartError(f"prefect server exited with {process.returncode}; end of {log}:\n{_tail(log)}")
            try:
                if httpx.get(f"{api_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ServerStartError(f"prefect server not healthy after {startup_timeout_s:.0f} s; end of {log}:\n"
                                   f"{_tail(log)}")
            time.sleep(0.5)
        yield api_url
    finally:
        _stop(process)


def server_command(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port of the API and UI on 127.0.0.1 (0: any free port).")] = 4200,
    deployments: Annotated[Path, typer.Option(help="prefect.yaml whose deployments are served.")] = PREFECT_YAML,
    poll_seconds: Annotated[float, typer.Option(help="How often the local runner looks for runs to start.")] = 5.0,
    reports_port: Annotated[int, typer.Option(
        help="Port on 127.0.0.1 where the lake's reports folder is served read-only, so the nightly's report "
             "link opens from the UI (0: any free port).")] = DEFAULT_PORT,
) -> None:
    """Start the Prefect server and UI on 127.0.0.1 and serve prefect.yaml's deployments from this process,
    so a run triggered from the UI, the API or its schedule executes here; serve the lake's reports folder
    over HTTP beside it. Ctrl-C stops all three."""
    try:
        specs = load_specs(deployments)
    except ConfigError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    config_path = config_path_of(ctx)
    defaults = {"data_dir": config_of(ctx).lake.data_dir,
                **({"config_path": str(Path(config_path).resolve())} if config_path else {})}
    port = port or free_port()
    reports = _reports_dir(defaults["data_dir"])
    exit_on_sigterm()
    home = Path(os.environ["PREFECT_HOME"])
    # Served runs execute in child processes that read Prefect's settings from the environment: point
    # them (and this process, below) at the server instead of the ephemeral one flows/__init__ would use.
    os.environ["PREFECT_API_URL"] = f"http://{HOST}:{port}/api"
    os.environ.pop("PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", None)
    # A nightly run with dispatch: deployments reads each stage's return value back (flows/nightly.py
    # stage): flow results persist (under PREFECT_HOME/storage here), task results stay in memory.
    os.environ.setdefault("PREFECT_RESULTS_PERSIST_BY_DEFAULT", "true")
    os.environ.setdefault("PREFECT_TASKS_DEFAULT_PERSIST_RESULT", "false")
    os.chdir(deployments.resolve().parent)  # entrypoints are modules of the checkout beside prefect.yaml
    try:
        _serve(specs, defaults, port, home, poll_seconds, reports, reports_port)
    except ServerStartError as error:  # its log says why, e.g. the port is taken
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(1) from None


def _reports_dir(data_dir: str) -> Path:
    """The folder where the nightly writes the report of the lake at `data_dir` (webgym/report.py)."""
    from webgym.lake import Lake
    from webgym.report import default_path

    return default_path(Lake(data_dir)).parent


@contextmanager
def _report_site(directory: Path, port: int) -> Iterator[ReportSite]:
    """The reports folder served on `port` and exported to the flow runs this process starts."""
    with contextlib.ExitStack() as stack:
        try:
            site = stack.enter_context(report_server(directory, port))
        except OSError as error:
            raise ServerStartError(f"cannot serve the reports on {HOST}:{port} ({error.strerror}): pass another "
                                   "--reports-port (0: any free one)") from None
        os.environ.update(site.env())
        yield site


def _runner_class() -> type:
    """Prefect's Runner, stopped on SIGTERM from inside its event loop. Prefect's own handler calls the
    async `stop` from the loop's thread, so the coroutine is never awaited (a RuntimeWarning) and the
    flow runs it started are not cancelled; here `astop` runs as a task of the loop, cancels them and
    ends `start`, and the server is stopped after it."""
    import asyncio

    from prefect.runner import Runner

    class SigtermStoppedRunner(Runner):
        def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
            self._sigterm_stop = asyncio.get_running_loop().create_task(self.astop())

    return SigtermStoppedRunner


def _serve(specs: list[DeploymentSpec], defaults: dict[str, Any], port: int, home: Path, poll_seconds: float,
           reports: Path, reports_port: int) -> None:
    """Run the servers, register the deployments and execute their runs here until stopped."""
    import asyncio  # here, not at import: every other `webgym` command starts without it

    with prefect_server(port, home / "server.log") as api_url, _report_site(reports, reports_port) as site:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            try:
                served = served_deployments(specs, defaults)
            except ConfigError as error:
                err_console.print(f"[red]{escape(str(error))}[/red]")
                raise typer.Exit(2) from None
            console.print(f"Prefect UI: http://{HOST}:{port}   API: {api_url}   log: {home / 'server.log'}",
                          soft_wrap=True, highlight=False)
            console.print(f"Reports: {site.url} (the folder {site.directory}, where a nightly run's report link "
                          "points)", soft_wrap=True, highlight=False)
            for spec, deployment in zip(specs, served):
                when = ", ".join(f"cron {s['cron']} {s.get('timezone') or ''}".rstrip() for s in spec.schedules)
                console.print(f"  deployment {deployment.flow_name}/{deployment.name}" + (f" ({when})" if when else ""),
                              highlight=False)
            console.print(f"Trigger a run from the UI (Deployments -> Run) or: PREFECT_API_URL={api_url} "
                          ".venv/bin/prefect deployment run 'nightly/nightly' -p iterations=1", soft_wrap=True,
                          highlight=False)
            runner = _runner_class()(pause_on_shutdown=False, query_seconds=poll_seconds)
            for deployment in served:
                runner.add_deployment(deployment)
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: asyncio cancels the runner, which cleans up
                asyncio.run(runner.start())
