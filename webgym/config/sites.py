"""The `sites` block: where the synthetic websites' specs are and how they are served and checked."""

from __future__ import annotations

from pydantic import Field

from webgym.config.base import ProjectPath, Section


class WorldConfig(Section):
    """Which sites make up the world: the hand-written specs plus sites generated from families
    (webgym/sites/world.py, families/, generate.py)."""

    families: list[str] | None = Field(
        default=None, description="Families to generate sites of (names of families/*.yaml); null: every family.")
    instances: int = Field(default=0, ge=0, description="Sites generated per family (0: hand-written sites only).")
    seed: int = Field(default=0, ge=0, description="Seed of a family's first site; its n-th site uses seed + n.")
    hand_written: bool = Field(default=True, description="Include the hand-written sites of sites.specs_dir.")
    replay_goals: int = Field(
        default=1, ge=0, description="Goals per site whose oracle path is replayed in Chromium before the site is used "
                                     "(the longest of different templates; successes are remembered); 0: none.")
    families_dir: ProjectPath = Field(default="webgym/sites/families",
                                      description="Directory of family files, relative to the project.")
    generated_dir: ProjectPath | None = Field(
        default=".cache/sites/generated",
        description="Where generated specs are written for inspection and `webgym sites serve` (null: memory only).")


class SitesConfig(Section):
    """The synthetic verifiable websites (webgym/sites): where their specs are, how they are served."""

    specs_dir: ProjectPath = Field(
        default="webgym/sites/specs",
        description="Directory of site specs (our YAML/JSON, or AutoWebWorld fsm.json), relative to the project.")
    host: str = Field(default="127.0.0.1", description="Address the site server listens on; keep it on loopback.")
    port: int = Field(
        default=8123, ge=0, le=65535,
        description="Port of `webgym sites serve`; browsers map every site host name to it (0: any free port).")
    max_states: int = Field(
        default=200_000, ge=1_000,
        description="Oracle search budget per goal: states explored before it gives up (raise it for larger sites).")
    replay_concurrency: int = Field(
        default=3, ge=1, description="Goals `webgym sites verify` replays at once (one browser context each).")
    reports_dir: ProjectPath = Field(
        default="reports/sites", description="Where `webgym sites verify` saves screenshots of failing steps.")
    cache_dir: ProjectPath | None = Field(
        default=".cache/sites",
        description="Where oracle paths are kept between runs, keyed by a hash of site and goal (null: search "
                    "again every run).")
    search_workers: int = Field(
        default=2, ge=1,
        description="Processes searching oracle paths that are not cached yet (verify, paths, export-tasks); "
                    "1 searches in the command's own process.")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The hand-written and generated sites.")
