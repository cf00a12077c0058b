"""Reading site spec files: our YAML/JSON specs (a graph they `extends`, goal templates expanded, see
spec.py for the format) and AutoWebWorld's fsm.json, into validated SiteSpecs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from webgym.sites.autowebworld import from_autowebworld, is_autowebworld
from webgym.sites.expr import SpecError
from webgym.sites.goals import expand_goals
from webgym.sites.spec import GRAPHS_DIR, SPECS_DIR, SiteSpec, validated_spec

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's safe loader and dumper where PyYAML was built with it (the wheels are): the world's 100
generated specs are read and written on every start, about ten times faster than in pure Python."""


def deep_merge(base: Any, override: Any) -> Any:
    """Objects merge key by key (override wins); anything else is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base[key], value) if key in base else value
        return merged
    return override


def read_spec_file(path: Path) -> Any:
    """Parsed YAML or JSON of a spec, graph, family or word file; errors name the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{path}: cannot read ({error})") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=YAML_LOADER)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise SpecError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {error}") from None


def parse_site(raw: Any, source: str) -> SiteSpec:
    """Build a SiteSpec from parsed YAML/JSON; structural errors name the file and location."""
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: a site spec must be a mapping, got {type(raw).__name__}")
    if "extends" in raw:
        graph_file = GRAPHS_DIR / f"{raw['extends']}.yaml"
        if not graph_file.exists():
            known = sorted(p.stem for p in GRAPHS_DIR.glob("*.yaml"))
            raise SpecError(f"{source}: extends: unknown graph {raw['extends']!r} (graphs: {', '.join(known)})")
        raw = deep_merge(read_spec_file(graph_file), {k: v for k, v in raw.items() if k != "extends"})
    if isinstance(raw.get("goals"), list):
        raw = {**raw, "goals": expand_goals(raw["goals"], raw.get("data"), source)}
    return validated_spec(raw, source)


def load_site(path: str | Path) -> SiteSpec:
    """Read one spec file: our YAML/JSON format, or AutoWebWorld's fsm.json (recognised by its meta block)."""
    path = Path(path)
    raw = read_spec_file(path)
    if is_autowebworld(raw):
        return from_autowebworld(raw, source=str(path))
    return parse_site(raw, str(path))


def spec_files(directory: str | Path = SPECS_DIR) -> list[Path]:
    directory = Path(directory)
    if not directory.is_dir():
        raise SpecError(f"{directory}: no such directory of site specs")
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
