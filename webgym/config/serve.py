"""The `serve` block: how the policy endpoint moves to a new checkpoint after training."""

from __future__ import annotations

import string
from pathlib import Path

from pydantic import Field, field_validator

from webgym.config.base import ConfigError, ProjectPath, Section


class ServeConfig(Section):
    """How the policy endpoint moves to a new checkpoint after training (the `serve` flow, flows/serve.py)."""

    command: str | None = Field(
        default=None,
        description="Command template that serves a checkpoint until stopped, with {checkpoint}, {name} (the served "
                    "model name), {port} and {python} (this interpreter) filled in, e.g. `vllm serve {checkpoint} "
                    "--served-model-name {name} --port {port}` or `{python} -m webgym.cli serve --checkpoint "
                    "{checkpoint} --served-model-name {name} --port {port}`. null: no server (the local profile's "
                    "policies load the checkpoint in-process); the serve flow says so and returns.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port filled into {port}.")
    base_url: str | None = Field(
        default=None,
        description="API root the server answers at, the same value as the llm `policy` endpoint's base_url "
                    "(e.g. http://gpu-1:8000/v1); null: http://127.0.0.1:{port}/v1.")
    startup_timeout_s: float = Field(
        default=900.0, gt=0,
        description="How long a new server may take until its /v1/models lists the served name (vLLM loads and "
                    "compiles a 7B model in minutes); past it the server is stopped and the flow fails with its log.")
    stop_grace_s: float = Field(
        default=30.0, ge=0,
        description="After SIGTERM, seconds the previous server gets to finish its requests before SIGKILL.")
    state_dir: ProjectPath = Field(
        default=".cache/serve",
        description="Directory (relative to the project) of the state file server.json (pid, start time, served "
                    "name, checkpoint) and the server's log server.log (the one before: server.previous.log); on the "
                    "serving machine's own disk.")

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return value
        fields = {field for _, field, _, _ in string.Formatter().parse(value) if field is not None}
        unknown = fields - {"checkpoint", "name", "port", "python"}
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {{checkpoint}}, {{name}}, {{port}}, "
                             "{python} (double braces for a literal brace)")
        if not {"checkpoint", "name"} <= fields:
            raise ValueError("must contain {checkpoint} and {name}: the server has to load the checkpoint and list "
                             "it under the served name the flow waits for")
        return value


def served_name(checkpoint: str) -> str:
    """The name a checkpoint is served under by default: its directory's name (e.g. `it-3` for
    models/it-3/), which the serve flow registers and a chat policy pointed at the checkpoint asks for."""
    name = Path(checkpoint.rstrip("/")).name
    if not name:
        raise ConfigError(f"checkpoint {checkpoint!r} has no directory name to serve it under: pass a served model name")
    return name
