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


def listening(port: int, host: str = HOST) -> bool:
    """Whether a server listens on host:port now. A port a stopped server left in TIME_WAIT is free: servers
    bind with SO_REUSEADDR (uvicorn does), so the check does too, and a restart within the minute works."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False
