"""Free local ports, for the servers the pipeline starts (Prefect's API, a checkpoint's OpenAI server, a
single-process DeepSpeed rendezvous)."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A port on `host` that nothing listens on now. Another process may take it before the caller binds it:
    servers started on it must report a failed bind (uvicorn exits with status 3)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
