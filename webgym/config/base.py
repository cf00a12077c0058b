"""What every config model shares: the error type, the strict base class and path resolution.

Paths in a profile are relative to the project (the checkout holding pyproject.toml); they are
resolved once, when the profile is validated, by the annotated types below, so every reader gets an
absolute path (or a URL for the lake) and never joins paths itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from webgym import PROJECT_ROOT


class ConfigError(ValueError):
    """A profile is missing, unreadable or has a bad value; the message says how to fix it."""


class Section(BaseModel):
    """A block of a profile: unknown keys are refused (a typo is named, not ignored), and defaults
    are validated like given values (so default paths are resolved too)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


def is_url(location: str) -> bool:
    """Whether a location is an fsspec URL (s3://..., memory://...) rather than a local path."""
    return "://" in location


def project_path(path: str | Path) -> Path:
    """An absolute path: `path` as it is when absolute, else relative to the project."""
    path = Path(path).expanduser()
    return (path if path.is_absolute() else PROJECT_ROOT / path).resolve()


def _resolved(path: str) -> str:
    return str(project_path(path))


def _resolved_location(location: str) -> str:
    return location if is_url(location) else _resolved(location)


ProjectPath = Annotated[str, AfterValidator(_resolved)]
"""A path setting: relative to the project in the profile, absolute once loaded."""

EmbeddingPrecision = Literal["float32", "bfloat16", "auto"]
"""MiniLM arithmetic (webgym.embeddings): the task set's and the scorer's settings take the same values."""

Location = Annotated[str, AfterValidator(_resolved_location)]
"""A path or an fsspec URL: a path is resolved like ProjectPath, a URL is kept."""
