"""The reports folder over HTTP, read-only: `webgym server` serves it on a second port of 127.0.0.1 so that
the nightly's link artifact opens the report from the Prefect UI (a browser does not follow a file: link
from an http: page, so a file path there is text to copy, not a link).

The report is one self-contained HTML file (plots embedded, no script: webgym/report.py), so serving the
folder's files as they are is all a link needs. The server tells the flow runs it executes where it
serves what through two environment variables (SITE_ENV), which their child processes inherit.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

from webgym.ports import HOST

log = logging.getLogger(__name__)

URL_ENV, DIR_ENV = "WEBGYM_REPORTS_URL", "WEBGYM_REPORTS_DIR"
"""The served folder's base URL and its absolute path, as `webgym server` exports them to its flow runs."""
DEFAULT_PORT = 4201
"""`webgym server --reports-port`'s default: the Prefect UI's port (4200) plus one."""


@dataclass(frozen=True)
class ReportSite:
    """A folder served over HTTP: `url` (ending in /) shows `directory`'s files."""

    directory: Path
    url: str

    @classmethod
    def from_env(cls) -> ReportSite | None:
        """The site `webgym server` exported to this process (None: the run is not one it executes)."""
        url, directory = os.environ.get(URL_ENV), os.environ.get(DIR_ENV)
        return cls(Path(directory), url) if url and directory else None

    def env(self) -> dict[str, str]:
        """The variables that make `from_env` return this site in a child process."""
        return {URL_ENV: self.url, DIR_ENV: str(self.directory)}

    def url_of(self, path: Path) -> str | None:
        """The URL of `path`, or None when it lies outside the served folder."""
        path, root = path.resolve(), self.directory.resolve()
        if not path.is_relative_to(root):
            return None
        return self.url + quote(path.relative_to(root).as_posix())


class _ReadOnlyFiles(SimpleHTTPRequestHandler):
    """GET and HEAD of the folder's files and listings (the base handler answers other methods 501 and drops
    `..` from paths); files reached through a link pointing out of the folder are refused too, and nothing is
    cached, so a report rewritten by the next night is what a reload shows."""

    def send_head(self) -> Any:
        if not Path(self.translate_path(self.path)).resolve().is_relative_to(Path(self.directory).resolve()):
            self.send_error(404, "outside the reports folder")
            return None
        return super().send_head()

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s " + format, self.address_string(), *args)


@contextmanager
def report_server(directory: Path, port: int) -> Iterator[ReportSite]:
    """Serve `directory` (created if missing) on HOST:port (0: any free port) in a thread until the block
    exits. OSError when the port cannot be bound."""
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer((HOST, port), partial(_ReadOnlyFiles, directory=str(directory)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="report-server", daemon=True)
    thread.start()
    try:
        yield ReportSite(directory, f"http://{HOST}:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
