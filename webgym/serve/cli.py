"""`webgym serve --checkpoint PATH`: the OpenAI-compatible server around a local checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from webgym.serve.supervisor import served_name

err_console = Console(stderr=True, soft_wrap=True)


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
    from webgym.models.checkpoint import CheckpointError, load_vlm
    from webgym.serve.app import bind, build_app, http_server

    name = served_model_name or served_name(str(checkpoint))
    try:
        vlm = load_vlm(checkpoint, device, dtype)
    except CheckpointError as error:
        err_console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    try:
        sock = bind(host, port)
    except OSError as error:
        err_console.print(f"[red]cannot listen on {host}:{port}: {error}[/red]")
        raise typer.Exit(2) from None
    bound = sock.getsockname()[1]
    # Printed (and flushed) before serving: a caller that asked for port 0 reads the address from here.
    typer.echo(f"serving {name} ({vlm.source}) at http://{host}:{bound}/v1")
    http_server(build_app(vlm, name)).run(sockets=[sock])
