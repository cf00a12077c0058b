"""The flows' deployments as prefect.yaml declares them, turned into served deployments.

prefect.yaml is the one definition: `prefect deploy --all` reads it on a cluster, and `webgym server`
reads it here to serve the same deployments (same names, parameters, descriptions, schedules) from one
local process, without work pools.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from webgym.config import ConfigError, project_path

PREFECT_YAML = project_path("prefect.yaml")


@dataclass(frozen=True)
class DeploymentSpec:
    """One entry of prefect.yaml's `deployments:` list (YAML anchors already resolved)."""

    name: str
    entrypoint: str
    """`flows.<module>:<flow function>`, a module of the checkout (`flows/<module>.py:<flow function>`, relative
    to prefect.yaml, names the same module)."""
    work_pool: str
    description: str = ""
    tags: tuple[str, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    schedules: tuple[dict[str, Any], ...] = ()
    """Each `{cron, timezone, active}`."""

    def load_flow(self) -> Any:
        """Import the entrypoint's flow as a module of the checkout (flows.<module>), not a loose file."""
        module, _, function = self.entrypoint.partition(":")
        if module.endswith(".py"):
            module = Path(module).with_suffix("").as_posix().replace("/", ".")
        return getattr(importlib.import_module(module), function)


def load_specs(path: Path = PREFECT_YAML) -> list[DeploymentSpec]:
    """The deployments of prefect.yaml at `path`; a malformed entry is named by its position and field."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the deployments: {error}") from None
    specs = []
    for i, entry in enumerate(document.get("deployments") or []):
        where = f"{path}: deployments[{i}] ({entry.get('name', 'unnamed')})"
        missing = [key for key in ("name", "entrypoint", "work_pool") if not entry.get(key)]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        if ":" not in entry["entrypoint"]:
            raise ConfigError(f"{where}: entrypoint must be package.module:flow_function")
        for schedule in entry.get("schedules") or []:
            if "cron" not in schedule:
                raise ConfigError(f"{where}: each schedule needs a cron expression (e.g. cron: '0 2 * * *')")
        specs.append(DeploymentSpec(
            name=entry["name"], entrypoint=entry["entrypoint"], work_pool=entry["work_pool"]["name"],
            description=entry.get("description") or "", tags=tuple(entry.get("tags") or ()),
            parameters=dict(entry.get("parameters") or {}), schedules=tuple(entry.get("schedules") or ())))
    return specs


def served_deployments(specs: list[DeploymentSpec], defaults: dict[str, Any]) -> list[Any]:
    """RunnerDeployments for `prefect.serve`; `defaults` (e.g. the profile and lake in force) fill the
    parameters a flow has and prefect.yaml leaves unset."""
    from prefect.types.entrypoint import EntrypointType
    from prefect.schedules import Cron

    deployments = []
    for spec in specs:
        flow = spec.load_flow()
        accepted = flow.parameters.properties
        parameters = {**{k: v for k, v in defaults.items() if k in accepted}, **spec.parameters}
        unknown = sorted(set(parameters) - set(accepted))
        if unknown:
            raise ConfigError(f"deployment {spec.name}: flow {flow.name} has no parameter(s) {', '.join(unknown)}")
        schedules = [Cron(s["cron"], timezone=s.get("timezone"), active=s.get("active", True))
                     for s in spec.schedules]
        # Runs import the flow's module by name, as prefect.yaml's entrypoints do: a loose file would be
        # module `judge`, and results pickling its classes unreadable where `flows.judge` is imported.
        deployments.append(flow.to_deployment(name=spec.name, description=spec.description, tags=list(spec.tags),
                                              parameters=parameters, schedules=schedules or None,
                                              entrypoint_type=EntrypointType.MODULE_PATH))
    return deployments
