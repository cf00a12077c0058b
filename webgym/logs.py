"""Where log records go: the project's loggers at INFO (inside a flow or task run Prefect also sends
them to its API, so the UI's Logs tab shows them: PREFECT_LOGGING_EXTRA_LOGGERS in prefect_env),
libraries at WARNING, and at the terminal one plain line per record.

The terminal handler never wraps or cuts a line (rich's handler wraps at 80 columns when output is
not a terminal), so a log written to a file can be searched line by line.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

PROJECT_LOGGERS = ("webgym", "stages", "flows")
"""The packages whose loggers report the pipeline's work: stage counts, progress, warnings."""

LIBRARY_LOGGERS = ("faiss", "sentence_transformers", "transformers", "huggingface_hub", "torch", "httpx", "httpcore",
                   "openai", "great_expectations", "filelock", "fsspec", "urllib3", "asyncio", "PIL", "matplotlib",
                   "numexpr", "deepspeed", "accelerate")
"""Third-party loggers whose INFO chatter (model loading, every HTTP request) drowns the pipeline's lines."""

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def set_levels(verbose: bool = False) -> None:
    """The project's loggers at INFO (DEBUG when verbose), the libraries' at WARNING."""
    for name in PROJECT_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _quiet_prefect(record: logging.LogRecord) -> bool:
    """Terminal filter: Prefect's own INFO lines (task run created, finished in state Completed) stay in
    the API and the UI; its warnings and errors still show."""
    return record.levelno >= logging.WARNING or not record.name.startswith("prefect")


class StderrHandler(logging.StreamHandler):
    """Writes to sys.stderr as it is when a record comes, not as it was when the handler was made: a
    caller that swaps stderr for a while (click's test runner) may close the one it lent.

    Its name must not start with "_": Prefect's logging set-up (at its import, after the CLI has set
    this handler) keeps the root's handlers only when it takes them for the user's, by that name."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """The stream is always the current sys.stderr."""


def terminal_handler(verbose: bool = False) -> logging.Handler:
    """One plain line per record on stderr (time, level, logger, message); Prefect's INFO lines only
    when verbose."""
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT, datefmt="%H:%M:%S"))
    if not verbose:
        handler.addFilter(_quiet_prefect)
    return handler
