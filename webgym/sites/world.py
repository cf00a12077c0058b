"""The world the pipeline trains and evaluates in: hand-written sites plus sites generated from families.

`load_world(config.sites)` loads the hand-written specs (specs/), makes `instances` sites of
every family (families/) from consecutive seeds, runs the checks of checks.py on all of them, and
returns the usable sites with the problems of the others. Generated specs live in memory; with
`generated_dir` they are also written there (one self-contained YAML each, what `load_sites` and
`webgym sites serve` read). Hand-written and generated sites go through the same checks (the
hand-written ones' replays are remembered too, so they cost the browser once). `World.table()` is
what the split stage reads to hold families and sites out (taskset.split).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from webgym.config import SitesConfig
from webgym.sites.checks import HAND_WRITTEN, ReplayLog, SiteProblem, build_site, checked_sites, problem
from webgym.sites.family import Family, load_families
from webgym.sites.generate import describe_instance, generate_raw, generated_name
from webgym.sites.site import Site
from webgym.sites.spec import SiteSpec
from webgym.sites.specfiles import YAML_DUMPER, load_site, parse_site, spec_files


@dataclass
class World:
    """The usable sites by name and the problems of those left out."""

    sites: dict[str, Site]
    problems: list[SiteProblem] = field(default_factory=list)
    seeds: dict[str, int] = field(default_factory=dict)
    """The seed of each generated site (hand-written sites have none)."""

    def family(self, site: str) -> str:
        return str(self.sites[site].spec.family)

    def families(self) -> dict[str, list[str]]:
        """Family -> its sites' names."""
        out: dict[str, list[str]] = {}
        for name in self.sites:
            out.setdefault(self.family(name), []).append(name)
        return out

    def table(self) -> pd.DataFrame:
        """One row per site: website (its host name), site, family, and the seed of a generated site
        (null for a hand-written one): what the split needs to hold sites and families out."""
        return pd.DataFrame([{"website": site.spec.hostname, "site": name, "family": self.family(name),
                              "seed": self.seeds.get(name)}
                             for name, site in self.sites.items()], columns=["website", "site", "family", "seed"])

    @property
    def goals(self) -> int:
        return sum(len(site.spec.goals) for site in self.sites.values())


def write_spec(raw: dict, directory: Path) -> Path:
    """A generated spec as YAML, replaced atomically (other processes may be reading the directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{raw['name']}.yaml"
    text = yaml.dump(raw, Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True, width=120)
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    return target


def generated_sites(family: Family, seeds: list[int], max_states: int, cache_dir: str | Path | None,
                    write_to: Path | None = None) -> list[Site | SiteProblem]:
    """The family's sites for `seeds`, each built, or the problem that stopped it."""
    out: list[Site | SiteProblem] = []
    for seed in seeds:
        name = generated_name(family.family, seed)

        def make(seed: int = seed) -> SiteSpec:
            raw = generate_raw(family, seed)
            if write_to is not None:
                write_spec(raw, write_to)
            return parse_site(raw, describe_instance(family, seed))
        out.append(build_site(make, family.family, seed, name, max_states, cache_dir))
    return out


def family_problems(family: Family, seeds: list[int], *, max_states: int = 200_000,
                    cache_dir: str | Path | None = None, replay_goals: int = 0) -> list[SiteProblem]:
    """What stops a family's sites for `seeds` from being used (none: every one passes), checked as
    load_world checks them; the LLM writer's validator."""
    built = generated_sites(family, seeds, max_states, cache_dir)
    _, problems = checked_sites([site for site in built if isinstance(site, Site)], workers=1,
                                replay_goals=replay_goals)
    return [item for item in built if isinstance(item, SiteProblem)] + problems


def load_world(config: SitesConfig) -> World:
    """Hand-written and generated sites that pass the checks (module docstring), as the profile's
    `sites` block and its `world` describe them. Unknown family names are a SpecError; a site that
    fails is reported in World.problems."""
    settings, specs_dir, max_states, cache_dir = config.world, config.specs_dir, config.max_states, config.cache_dir
    families = load_families(settings.families_dir, settings.families)
    built: list[Site | SiteProblem] = []
    if settings.hand_written:
        built += [build_site(lambda path=path: load_site(path), HAND_WRITTEN, None, path.stem, max_states, cache_dir)
                  for path in spec_files(specs_dir)]
    write_to = Path(settings.generated_dir) if settings.generated_dir else None
    seeds = list(range(settings.seed, settings.seed + settings.instances))
    generated: dict[str, int] = {}
    for family in families.values():
        made = generated_sites(family, seeds, max_states, cache_dir, write_to)
        generated.update({item.name: seed for item, seed in zip(made, seeds, strict=True) if isinstance(item, Site)})
        built += made
    problems = [item for item in built if isinstance(item, SiteProblem)]
    sites: dict[str, Site] = {}
    hosts: dict[str, str] = {}
    for site in (item for item in built if isinstance(item, Site)):
        clash = site.name if site.name in sites else hosts.get(site.spec.hostname)
        if clash is not None:
            problems.append(problem(site, None, f"name or host name already used by {sites[clash].spec.where()}"))
            continue
        sites[site.name], hosts[site.spec.hostname] = site, site.name
    replays = ReplayLog(Path(cache_dir) / "replays") if cache_dir is not None else None
    usable, failed = checked_sites(list(sites.values()), workers=config.search_workers,
                                   replay_goals=settings.replay_goals,
                                   replay_concurrency=config.replay_concurrency, replays=replays)
    return World({site.name: site for site in usable}, problems + failed,
                 {site.name: generated[site.name] for site in usable if site.name in generated})


@functools.cache
def _world(settings: str) -> World:
    return load_world(SitesConfig.model_validate_json(settings))


def world_of(config: SitesConfig) -> World:
    """The world of these settings, built once per process: the build, the rollout shards and the
    commands of one process share it (its searches and replays are also cached on disk)."""
    return _world(config.model_dump_json())
