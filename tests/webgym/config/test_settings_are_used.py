"""Every setting a profile can hold is read by the pipeline, and reading a profile stays cheap: the
configuration package imports no browser, model, orchestration or runtime module."""

from __future__ import annotations

import ast
import subprocess
import sys

from pydantic import BaseModel

from webgym import PROJECT_ROOT
from webgym.config import Config

RUNTIME = ("schemas", "webgym", "stages", "flows")


def _settings(model: type[BaseModel], prefix: str = "") -> dict[str, str]:
    """Every field of the config models, dotted path -> field name."""
    found = {}
    for name, field in model.model_fields.items():
        found[f"{prefix}{name}"] = name
        annotation = field.annotation
        for candidate in (annotation, *getattr(annotation, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                found.update(_settings(candidate, f"{prefix}{name}."))
    return found


def _validators(tree: ast.AST) -> set[ast.AST]:
    """The nodes of functions decorated as pydantic validators: reading a field to check it is no use."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("validator" in ast.unparse(d) for d in node.decorator_list):
            inside.update(ast.walk(node))
    return inside


def _attributes_read() -> set[str]:
    """Names read as attributes (x.name) anywhere in the pipeline's code, validators left out."""
    names = set()
    for package in RUNTIME:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            skipped = _validators(tree)
            names.update(node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                         and isinstance(node.ctx, ast.Load) and node not in skipped)
    return names


def test_every_setting_is_read_somewhere():
    read = _attributes_read()
    unread = sorted(path for path, name in _settings(Config).items() if name not in read)
    assert not unread, f"settings nothing reads (read them or remove them): {unread}"


def test_loading_a_profile_imports_no_browser_model_orchestration_or_runtime_module():
    probe = ("import sys, webgym.config; webgym.config.load_config(); "
             "print(' '.join(sorted(m for m in sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                cwd=PROJECT_ROOT).stdout.split())
    assert not {"playwright", "torch", "prefect", "transformers", "pandas", "pyarrow"} & loaded
    ours = {m for m in loaded if m.split(".")[0] in RUNTIME}
    assert ours - {"webgym", "schemas", "schemas.values"} == {m for m in ours if m.startswith("webgym.config")}
