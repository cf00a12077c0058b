"""Versioned prompt templates: one YAML file per prompt under webgym/prompts/.

A file holds `version` (recorded in llm_calls and part of the cache key), a `description`,
and a `system` and/or a `user` template. Placeholders are `${name}` (string.Template), so
JSON examples with braces need no escaping:

    version: 2
    description: Writes a task's rubric as fact groups.
    system: You write grading rubrics for web tasks.
    user: |
      Task: ${task}
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
_FIELDS = {"version", "description", "system", "user"}


class PromptError(ValueError):
    """A prompt file is missing or malformed, or a render got the wrong variables; names the file."""


@dataclass(frozen=True)
class Prompt:
    """A loaded template; `render` turns it into chat messages."""

    name: str
    version: str
    description: str
    system: string.Template | None
    user: string.Template | None
    path: Path

    @property
    def variables(self) -> set[str]:
        return {name for t in (self.system, self.user) if t for name in t.get_identifiers()}

    def render(self, images: list[dict[str, Any]] | None = None, **values: Any) -> list[dict[str, Any]]:
        """Chat messages with every placeholder filled; `images` (see images.py) follow the user text."""
        missing = self.variables - set(values)
        unused = set(values) - self.variables
        if missing or unused:
            raise PromptError(f"prompt {self.path}: missing value(s) {sorted(missing)}, "
                              f"unknown value(s) {sorted(unused)}; it uses {sorted(self.variables)}")
        text = {k: str(v) for k, v in values.items()}
        messages: list[dict[str, Any]] = []
        if self.system:
            messages.append({"role": "system", "content": self.system.substitute(text)})
        if self.user:
            user = self.user.substitute(text)
            content: str | list[dict[str, Any]] = [{"type": "text", "text": user}, *images] if images else user
            messages.append({"role": "user", "content": content})
        elif images:
            raise PromptError(f"prompt {self.path} has no user message to attach images to")
        return messages


@functools.cache
def _load(path: Path) -> Prompt:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise PromptError(f"no prompt file {path}; prompts there: {known}") from None
    except yaml.YAMLError as error:
        raise PromptError(f"prompt {path} is not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise PromptError(f"prompt {path}: expected a mapping with {sorted(_FIELDS)}")
    unknown = set(raw) - _FIELDS
    if unknown:
        raise PromptError(f"prompt {path}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    if raw.get("version") in (None, ""):
        raise PromptError(f"prompt {path}: field 'version' is required")
    if not (raw.get("system") or raw.get("user")):
        raise PromptError(f"prompt {path}: needs a 'system' or a 'user' template")
    system, user = (string.Template(str(raw[k])) if raw.get(k) else None for k in ("system", "user"))
    prompt = Prompt(name=path.stem, version=str(raw["version"]), description=str(raw.get("description", "")),
                    system=system, user=user, path=path)
    for template in filter(None, (prompt.system, prompt.user)):
        if not template.is_valid():
            raise PromptError(f"prompt {path}: a '$' that is not a ${{placeholder}} (write $$ for a dollar sign)")
    return prompt


def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> Prompt:
    """The prompt `<directory>/<name>.yaml` (read once per process)."""
    return _load((directory / f"{name}.yaml").resolve())
