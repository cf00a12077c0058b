"""What every checkpoint writer and loader shares: the error that names a bad checkpoint directory,
and the atomic write (a temporary sibling, then a rename), so a crash mid-save never leaves a
half-written checkpoint where a policy would load it, and an existing one is never overwritten."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class CheckpointError(ValueError):
    """A checkpoint directory is missing, incomplete, unreadable or of an unsupported kind; the
    message names the path."""


@contextmanager
def new_checkpoint_dir(path: str | Path) -> Iterator[Path]:
    """A staging directory beside `path` to write into; it becomes `path` when the block ends without
    an error and is removed otherwise. CheckpointError if `path` exists."""
    path = Path(path).expanduser().resolve()
    if path.exists():
        raise CheckpointError(f"checkpoint {path} already exists; checkpoints are never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield staging
        staging.rename(path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
