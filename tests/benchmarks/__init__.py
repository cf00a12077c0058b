"""Tests of the benchmark scripts in benchmarks/, which are scripts, not a package."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from webgym import PROJECT_ROOT


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module (registered, so its dataclasses resolve their own module)."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", PROJECT_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
